"""The SSH cluster against real sshd daemons on loopback: connections, fan-out, files, launches."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import paramiko
import pytest
import torch

from pytest_dlperf.baselines.profile import detect_profile, slug
from pytest_dlperf.clusters.base import ClusterError, NodeCommand
from pytest_dlperf.clusters.hosts import parse_hosts
from pytest_dlperf.clusters.local import detect_gpus
from pytest_dlperf.clusters.ssh import SSHCluster
from pytest_dlperf.clusters.ssh.connect import SSHSettings
from pytest_dlperf.results.environment import cpu_model

from .procs import tagged_pids as tagged
from .sshd import address_block, keygen

# real sshd daemons: not in the quick tier (tests/quick.sh; docs/testing.md)
pytestmark = pytest.mark.real

HOSTILE = ["a b", "it's", 'say "hi"', "`id`", "x; exit 7", "&&", "|", "*", "~", "new\nline", "$HOME", "\\", ""]



def wait_for(predicate, timeout: float, what: str) -> float:
    """Poll until predicate() is true; return the seconds it took."""
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout:
            pytest.fail(f"{what}: not within {timeout:g}s")
        time.sleep(0.05)
    return time.monotonic() - t0


@pytest.fixture
def cluster(ssh_nodes):
    c = ssh_nodes.cluster()
    yield c
    c.close()


def test_the_node_check_finds_the_nodes_and_connections_are_reused(ssh_nodes, cluster):
    nodes = cluster.nodes()
    assert [n.name for n in nodes] == [n.address for n in ssh_nodes.nodes]
    assert [n.address for n in nodes] == [n.address for n in ssh_nodes.nodes]
    for n in nodes:
        assert n.cpus == len(os.sched_getaffinity(0)) and n.gpus == len(detect_gpus())
        assert n.python == sys.executable and n.slots == 1
        assert n.extra["torch"] == torch.__version__ and n.extra["port"] == str(ssh_nodes.port)
        assert n.extra["cpu_model"] == cpu_model()  # the node's own processor names its profile
    assert detect_profile(nodes, ["torch 2.13.0"], wanted=("torch",)).startswith(f"cpu-{slug(cpu_model())}-")
    transports = [h.conn.transport for h in cluster._hosts]
    cluster.run_all(["true"])
    cluster.free_ports(nodes[0])
    assert [h.conn.transport for h in cluster._hosts] == transports  # one connection per node, reused
    assert cluster.nodes() == nodes  # the node check ran once


def test_fanout_keeps_each_nodes_exit_code_stdout_and_stderr_apart(cluster):
    nodes = cluster.nodes()
    script = 'echo "out from $1"; echo "err from $1" >&2; exit "$2"'

    def argv(node):
        return ["sh", "-c", script, "sh", node.name, "3" if node is nodes[1] else "0"]

    first, second = cluster.run_all(argv, check=False)
    assert (first.returncode, first.stdout, first.stderr) == (0, f"out from {nodes[0].name}\n",
                                                              f"err from {nodes[0].name}\n")
    assert (second.returncode, second.stdout, second.stderr) == (3, f"out from {nodes[1].name}\n",
                                                                 f"err from {nodes[1].name}\n")
    with pytest.raises(ClusterError) as err:
        cluster.run_all(argv)
    msg = str(err.value)
    assert f"failed on {nodes[1].name}:" in msg and "exit code 3" in msg
    assert f"err from {nodes[1].name}" in msg  # its last lines
    assert f"--- {nodes[0].name}:" not in msg


def test_hostile_arguments_environment_and_paths_pass_unchanged(cluster, tmp_path):
    node = cluster.nodes()[1]
    marker = tmp_path / "pwned"
    hostile = [*HOSTILE, f"$(touch {marker})", f"; touch {marker}"]
    workdir = tmp_path / "dir with 'quotes' \"dq\" $(id) ; `x` & {} *"
    workdir.mkdir()
    env_value = f"$(touch {marker}) 'y' \"z\"; `w` \\n"
    show = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['V'], os.getcwd()]))"
    res = cluster.exec(node, [sys.executable, "-c", show, *hostile], env={"V": env_value}, cwd=str(workdir))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [hostile, env_value, str(workdir)]
    # a run directory and a file name full of shell characters, there and back over SFTP
    run_dir = cluster.make_run_dir(node, "run 'x' $(id); y")
    local = tmp_path / "it's a $(file); z.txt"
    local.write_text("payload\n")
    remote = cluster.upload(node, local, run_dir)
    assert remote == f"{run_dir}/{local.name}"
    back = tmp_path / "back.txt"
    cluster.download(node, remote, back)
    assert back.read_text() == "payload\n"
    assert not marker.exists()


def test_rendered_line_runs_the_command_with_openssh(ssh_nodes, cluster, tmp_path):
    node = cluster.nodes()[1]
    out = tmp_path / "out.json"
    workdir = tmp_path / "a dir; $(x) 'q'"
    workdir.mkdir()
    code = "import json, os, sys; open(sys.argv[1], 'w').write(json.dumps([sys.argv[2:], os.environ['V'], os.getcwd()]))"
    cmd = NodeCommand(node, [sys.executable, "-c", code, str(out), *HOSTILE],
                      {"V": "$(x) 'y'; z", "DLPERF_RUN_TAG": "render-test"}, cwd=str(workdir))
    line = cluster.render(cmd)
    assert line.startswith(f"ssh -p {ssh_nodes.port} -i {ssh_nodes.client_key} ")
    done = subprocess.run(["bash", "-c", line], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60, env={k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"})
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == [HOSTILE, "$(x) 'y'; z", str(workdir)]


def test_upload_skips_files_already_there_and_unchanged(cluster, tmp_path):
    node = cluster.nodes()[0]
    run_dir = cluster.make_run_dir(node, f"upload-{uuid.uuid4().hex[:8]}")
    local = tmp_path / "workload.py"
    local.write_text("print('v1')\n")
    remote = Path(cluster.upload(node, local, run_dir))
    first = remote.stat()  # loopback: the node's file system is this one
    assert remote.read_text() == "print('v1')\n" and int(first.st_mtime) == int(local.stat().st_mtime)
    cluster.upload(node, local, run_dir)
    assert remote.stat().st_ino == first.st_ino  # not written again
    local.write_text("print('version 2')\n")
    cluster.upload(node, local, run_dir)
    assert remote.read_text() == "print('version 2')\n" and remote.stat().st_ino != first.st_ino
    with pytest.raises(FileNotFoundError, match=node.name):
        cluster.download(node, f"{run_dir}/nothing.jsonl", tmp_path / "x")


def test_free_ports_are_free_on_the_node_and_distinct(cluster):
    node = cluster.nodes()[0]
    ports = cluster.free_ports(node, 3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as s:
            s.bind((node.address, port))


def test_unreachable_node_is_named(ssh_nodes):
    dead = f"127.0.{address_block()}.250"  # nothing listens there
    c = SSHCluster(parse_hosts(f"{ssh_nodes.nodes[0].address}:1,{dead}:1"), ssh_nodes.settings(retries=1))
    with pytest.raises(ClusterError) as err:
        c.nodes()
    msg = str(err.value)
    assert f"failed on {dead}:" in msg and "cannot reach" in msg and "after 2 attempt(s)" in msg
    assert f"--- {ssh_nodes.nodes[0].address}:" not in msg
    c.close()


def test_unknown_host_key_is_refused_unless_insecure_mode_is_asked_for(ssh_nodes, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    c = ssh_nodes.cluster(known_hosts=str(empty))
    with pytest.raises(ClusterError) as err:
        c.nodes()
    msg = str(err.value)
    n1 = ssh_nodes.nodes[1]
    assert f"{n1.address}: host key of [{n1.address}]:{n1.port} (ssh-ed25519 SHA256:" in msg
    assert "not in known_hosts" in msg and "ssh-keyscan" in msg
    c.close()
    c = ssh_nodes.cluster(known_hosts=str(empty), host_key_checking="accept-new")
    assert len(c.nodes()) == 2
    c.close()
    assert empty.read_text() == ""  # an insecure session does not write the keys down


def test_changed_host_key_is_refused_naming_the_node(fresh_ssh_nodes):
    sshd = fresh_ssh_nodes(2)
    sshd.new_host_key(1)
    n1 = sshd.nodes[1]
    for mode in ("strict", "accept-new"):
        c = sshd.cluster(host_key_checking=mode)
        with pytest.raises(ClusterError) as err:
            c.nodes()
        msg = str(err.value)
        assert f"failed on {n1.address}:" in msg and f"HOST KEY CHANGED for [{n1.address}]:{n1.port}" in msg
        assert "ssh-keygen -R" in msg and f"--- {sshd.nodes[0].address}:" not in msg
        c.close()
    c = sshd.cluster(host_key_checking="off")
    assert len(c.nodes()) == 2
    c.close()


def test_failed_login_names_the_user_and_is_not_retried(ssh_nodes, tmp_path):
    stranger = tmp_path / "stranger"
    keygen(stranger, "not-authorized")
    c = ssh_nodes.cluster(key=str(stranger), retries=3, backoff=5.0)
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=r"login as 'root' .* failed .*--dlperf-ssh-key"):
        c.nodes()
    assert time.monotonic() - t0 < 5.0  # a retry would have slept 5 s first
    c.close()


def test_ssh_config_alias_with_shell_characters_through_a_proxyjump(ssh_nodes, tmp_path):
    marker = f"dlperf-pwned-{uuid.uuid4().hex[:8]}"  # where an injected `touch` would leave it: cwd or home
    alias = f"odd;$(touch {marker}) 'name'"
    n0, n1 = ssh_nodes.nodes
    cfg = tmp_path / "ssh_config"  # no space: OpenSSH passes -F unquoted to its ProxyJump helper
    common = (f"    User {ssh_nodes.user}\n    Port {n0.port}\n    IdentityFile {ssh_nodes.client_key}\n"
              f"    UserKnownHostsFile {ssh_nodes.known_hosts}\n")
    cfg.write_text(f"Host jump\n    HostName {n0.address}\n{common}"
                   f'Host "{alias}"\n    HostName {n1.address}\n    ProxyJump jump\n{common}')
    c = SSHCluster(parse_hosts(alias), SSHSettings(config=str(cfg), python=sys.executable, connect_timeout=5))
    (node,) = c.nodes()
    assert (node.name, node.address) == (alias, n1.address)
    conn = c._hosts[0].conn
    assert len(conn.jumps) == 1 and isinstance(conn.transport.sock, paramiko.Channel)  # tunnelled
    res = c.exec(node, ["sh", "-c", 'echo "$SSH_CONNECTION"'])
    assert res.stdout.split()[2:] == [n1.address, str(n1.port)]
    line = c.render(NodeCommand(node, ["sh", "-c", f"echo rendered > {tmp_path / 'ok'}"]))
    assert f" -F {cfg} " in line and " -J jump " in line
    done = subprocess.run(["bash", "-c", line], stdin=subprocess.DEVNULL, timeout=60, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ok").read_text() == "rendered\n"
    assert not (Path.home() / marker).exists() and not Path(marker).exists()
    c.close()


def test_the_node_check_names_nodes_without_python_or_with_other_versions(ssh_nodes, tmp_path):
    c = ssh_nodes.cluster(python="/nonexistent/python3")
    with pytest.raises(ClusterError) as err:
        c.nodes()
    assert all(f"--- {n.address}: cannot run '/nonexistent/python3'" in str(err.value) for n in ssh_nodes.nodes)
    assert "--dlperf-ssh-python" in str(err.value)
    c.close()
    # node 1 sees another torch: a dist-info first on its path
    fake = tmp_path / "fake"
    (fake / "torch-9.9.9.dist-info").mkdir(parents=True)
    (fake / "torch-9.9.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 9.9.9\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$SSH_CONNECTION" in *" {ssh_nodes.nodes[1].address} "*) export PYTHONPATH={fake};; esac
        exec {sys.executable} "$@"
        """))
    wrapper.chmod(0o755)
    c = ssh_nodes.cluster(python=str(wrapper))
    with pytest.raises(ClusterError) as err:
        c.nodes()
    n0, n1 = (n.address for n in ssh_nodes.nodes)
    assert f"torch versions differ: {n0} {torch.__version__}, {n1} 9.9.9" in str(err.value)
    c.close()


TREE = """
sleep 300 &
setsid sleep 301 &
(trap '' TERM; exec sleep 302) &
(setsid sleep 303 &)
echo ready
wait
"""


def start_tree(cluster, node, log: Path) -> tuple[object, str]:
    """Start a launcher-like tree (a new session, a TERM-ignorer, an orphan) under a fresh tag."""
    tag = f"dlperf-test-{uuid.uuid4().hex}"
    proc = cluster.start(NodeCommand(node, ["sh", "-c", TREE], {"DLPERF_RUN_TAG": tag}), log)
    wait_for(lambda: "ready" in log.read_text() and len(tagged(tag)) >= 5, 30, "the tree started")
    return proc, tag


def test_kill_stops_the_whole_remote_tree(cluster, tmp_path):
    node = cluster.nodes()[1]
    proc, tag = start_tree(cluster, node, tmp_path / "node.log")
    assert proc.poll() is None and proc.pid
    proc.kill()
    assert proc.poll() not in (None, 0)
    assert tagged(tag) == []
    assert cluster.kill_tagged(node, tag) == 0
    proc.kill()  # twice is fine


def test_kill_tagged_sweeps_the_node(cluster, tmp_path):
    node = cluster.nodes()[0]
    proc, tag = start_tree(cluster, node, tmp_path / "node.log")
    assert cluster.kill_tagged(node, tag) >= 5
    assert tagged(tag) == []
    wait_for(lambda: proc.poll() is not None, 20, "the launcher ended")
    assert proc.poll() != 0


def test_lost_connection_fails_the_node_and_its_processes_stop(fresh_ssh_nodes, tmp_path):
    sshd = fresh_ssh_nodes(2)
    c = sshd.cluster()
    node = c.nodes()[1]
    log = tmp_path / "node1.log"
    proc, tag = start_tree(c, node, log)
    sshd.kill_sshd(1)
    wait_for(lambda: proc.poll() is not None, 30, "the dead connection surfaced")
    assert proc.poll() == 255
    assert f"{node.name}: lost the SSH connection" in log.read_text()
    wait_for(lambda: tagged(tag) == [], 20, "the node's processes stopped by themselves")
    with pytest.raises(ClusterError, match=f"{node.name}: cannot sweep it for run {tag}"):
        c.kill_tagged(node, tag)
    c.close()


def test_lease_keeps_other_processes_off_the_nodes(ssh_nodes, cluster, tmp_path):
    from filelock import FileLock, Timeout

    holder = textwrap.dedent(f"""
        import sys, time
        from pytest_dlperf.clusters.hosts import parse_hosts
        from pytest_dlperf.clusters.ssh import SSHCluster
        from pytest_dlperf.clusters.ssh.connect import SSHSettings
        c = SSHCluster(parse_hosts({ssh_nodes.hosts()!r}), SSHSettings(config=None, port={ssh_nodes.port}),
                       lock_dir={str(cluster.lock_dir)!r})
        with c.lease():
            print("held", flush=True)
            sys.stdin.readline()
        """)
    p = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "held\n"
        assert len(cluster.lease_paths()) == 2
        for path in cluster.lease_paths().values():
            with pytest.raises(Timeout):
                FileLock(str(path)).acquire(timeout=0.3)
        other = SSHCluster(parse_hosts(f"127.0.{address_block()}.200"), SSHSettings(config=None, port=ssh_nodes.port),
                           lock_dir=cluster.lock_dir)
        with other.lease():  # another node is not held
            pass
    finally:
        p.communicate("\n", timeout=30)
    with cluster.lease():
        pass
