"""The Slurm allocation the session runs in: the caller's own (``SLURM_JOB_ID`` set, by salloc or
sbatch), or one the harness asks for with ``salloc --no-shell`` and cancels at the end.

Waiting is bounded and shows progress with squeue's pending reason; an allocation the harness
made is cancelled on every way out (failure, timeout, Ctrl-C, SIGTERM), and the release waits
until squeue no longer lists the job, so nothing is left queued or running.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from . import commands
from .commands import AllocationSpec, SlurmError

JOB_LINE = re.compile(r"(?:Granted|Pending) job allocation (\d+)")


@dataclass
class Allocation:
    """A Slurm job holding the nodes; ``owned`` when this session made it (and so cancels it)."""

    job_id: str
    nodes: list[str]
    owned: bool

    def release(self, say: Callable[[str], None], wait_s: float = 30.0) -> None:
        """Cancel the job if this session made it, and wait until squeue no longer lists it;
        in the caller's allocation, cancel only the steps this harness started."""
        if not self.owned:
            for step in commands.steps(self.job_id):
                commands.run(["scancel", step], check=False)
            return
        cancel(self.job_id, wait_s)
        say(f"slurm: released allocation {self.job_id} ({','.join(self.nodes)})")


def cancel(job_id: str, wait_s: float = 30.0) -> None:
    """scancel the job; SlurmError if squeue still lists it (running or completing) after ``wait_s``."""
    commands.run(["scancel", job_id], check=False)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        state = commands.job_state(job_id)
        if state is None:
            return
        time.sleep(0.5)
    state = commands.job_state(job_id)
    if state is not None:
        raise SlurmError(f"job {job_id} is still {state[0]} {wait_s:g}s after scancel: cancel it with "
                         f"scancel {job_id}")


def from_environment(env: Mapping[str, str] | None = None) -> Allocation | None:
    """The allocation this process runs in (salloc or sbatch set SLURM_JOB_ID), or None."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job:
        return None
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    nodelist = nodelist or commands.job_nodelist(job)
    if not nodelist:
        raise SlurmError(f"SLURM_JOB_ID={job} is set but squeue lists no nodes for it: the allocation has "
                         "ended; run inside a live allocation, or unset SLURM_JOB_ID to have the harness allocate")
    return Allocation(job, commands.hostnames(nodelist), owned=False)


def allocate(spec: AllocationSpec, wait_s: float, say: Callable[[str], None], poll_s: float = 2.0) -> Allocation:
    """Ask salloc for the nodes and wait (at most ``wait_s``) until they are granted, showing why
    the job pends. On any failure or interruption the job is cancelled before the error goes on."""
    spec = dataclasses.replace(spec, name=f"{spec.name}-{uuid.uuid4().hex[:8]}")  # found by name if need be
    argv = spec.salloc_argv()
    proc = subprocess.Popen([commands.which("salloc"), *argv[1:]], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    job_id: str | None = None
    err_lines: list[str] = []
    reader = threading.Thread(target=lambda: err_lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        job_id = _job_id(proc, err_lines, deadline=time.monotonic() + min(wait_s, 60.0))
        say(f"slurm: job {job_id} asks for {spec.nodes} node(s) ({' '.join(argv[2:])})")
        deadline = time.monotonic() + wait_s
        shown = None
        while True:
            state = commands.job_state(job_id)
            if state is not None and state[0] == "RUNNING":
                break
            if state is None or state[0] not in ("PENDING", "CONFIGURING"):
                err = "".join(err_lines).strip()
                raise SlurmError(f"job {job_id} did not start: {state[0] if state else 'gone'}"
                                 + (f" ({err[-800:]})" if err else ""))
            if state != shown:
                say(f"slurm: job {job_id} {state[0].lower()} ({state[1]})")
                shown = state
            if time.monotonic() > deadline:
                raise SlurmError(f"job {job_id} still {state[0]} ({state[1]}) after {wait_s:g}s "
                                 "(--dlperf-slurm-wait): cancelled; ask for fewer nodes, another partition, "
                                 "or wait longer")
            time.sleep(poll_s)
        nodelist = commands.job_nodelist(job_id)
        if not nodelist:
            raise SlurmError(f"job {job_id} ran, but squeue lists no nodes for it: it has ended")
        nodes = commands.hostnames(nodelist)
        if len(nodes) != spec.nodes:
            raise SlurmError(f"job {job_id} got {len(nodes)} node(s) ({nodelist}), {spec.nodes} asked")
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)  # salloc --no-shell returns once the job runs
        say(f"slurm: job {job_id} runs on {','.join(nodes)}")
        return Allocation(job_id, nodes, owned=True)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if job_id is None:  # salloc may have queued one before it said so
            job_id = _job_id_by_name(spec.name)
        if job_id is not None:
            cancel(job_id)
            say(f"slurm: cancelled job {job_id}")
        raise


def _job_id(proc: subprocess.Popen, err_lines: list[str], deadline: float) -> str:
    """The job id salloc prints on stderr ('Pending job allocation N' or 'Granted ...'), which a
    reader thread collects into ``err_lines``."""
    ended = False
    while time.monotonic() < deadline:
        for line in list(err_lines):
            m = JOB_LINE.search(line)
            if m:
                return m.group(1)
        if ended:  # salloc exited and the reader had a moment to catch up: no job
            break
        ended = proc.poll() is not None
        time.sleep(0.1)
    err = "".join(err_lines).strip()
    raise SlurmError(f"salloc gave no job (exit {proc.poll()}): {err[-1500:] or 'no output'}")


def _job_id_by_name(name: str) -> str | None:
    """This user's newest job of that name, for a salloc interrupted before it printed the id."""
    done = commands.run(["squeue", "--noheader", "--me", f"--name={name}", "--format=%i"], check=False)
    ids = sorted(done.stdout.decode(errors="replace").split(), key=lambda s: int(s) if s.isdigit() else 0)
    return ids[-1] if ids else None


