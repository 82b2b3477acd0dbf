"""One host of the SSH cluster: its connection (opened on first use, reopened if it went away), its
SFTP session, commands on it, and its files (work directory, run directories, uploads, downloads)."""
from __future__ import annotations

import contextlib
import os
import posixpath
import shlex
import stat
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from ..base import ClusterError, ExecResult, Node
from ..hosts import HostSpec
from .connect import Connection, SSHSettings, Target, connect
from .remote import CommandTimeout, exec_line, run_channel

CHANNEL_ERRORS = (OSError, EOFError, paramiko.SSHException)


@dataclass
class Host:
    """Where one host is (its place in the host list, spec and resolved target) and what is open to it."""

    index: int
    spec: HostSpec
    target: Target
    settings: SSHSettings
    config: paramiko.SSHConfig | None
    conn: Connection | None = None
    sftp: paramiko.SFTPClient | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    sftp_lock: threading.Lock = field(default_factory=threading.Lock)
    workdir: str | None = None
    closed: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    # ------------------------------------------------------------------ connection
    def connection(self) -> Connection:
        """The host's connection, opened on first use and again if it went away."""
        if self.closed:
            raise ClusterError(f"{self.name}: the SSH cluster is closed")
        with self.lock:
            if self.conn is None or not self.conn.alive():
                if self.conn is not None:
                    self.conn.close()
                    self.sftp = None
                self.conn = connect(self.target, self.settings, self.config)
            return self.conn

    def session(self) -> paramiko.Channel:
        """A new session channel on the host's connection (reconnecting once if it just died)."""
        for attempt in (0, 1):
            conn = self.connection()
            try:
                return conn.transport.open_session(timeout=self.settings.connect_timeout)
            except CHANNEL_ERRORS as exc:
                if attempt or conn.alive():
                    raise ClusterError(f"{self.name}: cannot open an SSH channel: {exc}") from exc
        raise AssertionError("unreachable")

    def sftp_client(self) -> paramiko.SFTPClient:
        with self.lock:
            conn = self.connection()
            if self.sftp is None or self.sftp.get_channel().closed:
                try:
                    self.sftp = conn.client.open_sftp()
                except CHANNEL_ERRORS as exc:
                    raise ClusterError(f"{self.name}: cannot start SFTP: {exc}") from exc
            return self.sftp

    def close(self) -> None:
        """Close the SFTP session and the connection; nothing opens again."""
        with self.lock:
            self.closed = True
            if self.sftp is not None:
                with contextlib.suppress(Exception):
                    self.sftp.close()
                self.sftp = None
            if self.conn is not None:
                self.conn.close()
                self.conn = None

    # ------------------------------------------------------------------ commands
    def exec(self, node: Node, argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None,
             timeout: float = 60.0, stdin: bytes | None = None, guard: bool = True) -> ExecResult:
        """Run a command and wait; ClusterError only when it cannot run or times out."""
        line = exec_line(argv, env, cwd, guard=guard and stdin is None)
        try:
            code, out, err = run_channel(self.session(), line, self.name, timeout, stdin)
        except CommandTimeout as exc:
            raise ClusterError(f"{self.name}: {shlex.join(argv)} {exc}") from None
        except CHANNEL_ERRORS as exc:
            raise ClusterError(f"{self.name}: {shlex.join(argv)} could not run: {exc}") from exc
        return ExecResult(node, code, out, err)

    # ------------------------------------------------------------------ files
    def _workdir(self, sftp: paramiko.SFTPClient) -> str:
        """The node's base directory for run directories (absolute), created 0700 on first use."""
        if self.workdir is None:
            base = self.settings.workdir or f"/tmp/pytest-dlperf-{self.target.user}"
            if not base.startswith("/"):
                base = posixpath.join(sftp.normalize("."), base)
            mkdirs(sftp, base, mode=0o700)
            st = sftp.lstat(base)
            if not stat.S_ISDIR(st.st_mode or 0):
                raise ClusterError(f"{self.name}: {base} is not a directory; pass --dlperf-ssh-workdir")
            self.workdir = base
        return self.workdir

    def make_run_dir(self, run_id: str) -> str:
        sftp = self.sftp_client()
        with self.sftp_lock:
            try:
                run = posixpath.join(self._workdir(sftp), run_id)
                mkdirs(sftp, run)
                path = posixpath.join(run, f"node{self.index}")
                sftp.mkdir(path)
            except OSError as exc:
                raise ClusterError(f"{self.name}: cannot create the run directory under "
                                   f"{self.settings.workdir or '/tmp'}: {exc}; pass --dlperf-ssh-workdir") from exc
        return path

    def upload(self, local: Path, remote_dir: str) -> str:
        """SFTP the file into remote_dir, unless the same file (size and mtime) is already there."""
        dest = posixpath.join(remote_dir, local.name)
        st = local.stat()
        sftp = self.sftp_client()
        with self.sftp_lock:
            try:
                with contextlib.suppress(FileNotFoundError):
                    there = sftp.stat(dest)
                    if there.st_size == st.st_size and int(there.st_mtime or 0) == int(st.st_mtime):
                        return dest
                part = f"{dest}.part-{uuid.uuid4().hex[:8]}"
                sftp.put(str(local), part)
                sftp.chmod(part, stat.S_IMODE(st.st_mode))
                sftp.utime(part, (int(st.st_atime), int(st.st_mtime)))
                sftp.posix_rename(part, dest)
            except OSError as exc:
                raise ClusterError(f"{self.name}: upload of {local} to {dest} failed: {exc}") from exc
        return dest

    def download(self, remote: str, local: Path) -> None:
        """SFTP the node's file to local (FileNotFoundError when the node has none)."""
        sftp = self.sftp_client()
        part = local.with_name(f".{local.name}.part-{uuid.uuid4().hex[:8]}")
        with self.sftp_lock:
            try:
                sftp.get(remote, str(part))
                os.replace(part, local)
            except FileNotFoundError:
                raise FileNotFoundError(f"{self.name}: {remote}: no such file") from None
            except OSError as exc:
                raise ClusterError(f"{self.name}: download of {remote} failed: {exc}") from exc
            finally:
                part.unlink(missing_ok=True)


def mkdirs(sftp: paramiko.SFTPClient, path: str, mode: int = 0o755) -> None:
    """mkdir -p over SFTP."""
    parts = [p for p in path.split("/") if p]
    cur = "/" if path.startswith("/") else ""
    for part in parts:
        cur = posixpath.join(cur, part) if cur else part
        try:
            sftp.stat(cur)
        except FileNotFoundError:
            try:
                sftp.mkdir(cur, mode)
            except OSError:
                sftp.stat(cur)  # made by someone else in between
