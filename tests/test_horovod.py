"""The Horovod family: horovodrun on node 0 starts every rank on every node (local cluster: through
its ssh agent; SSH cluster: over real sshd), for the PyTorch and the TensorFlow workload; perseus
and acspeed are skipped with the reason where AIACC is absent; several engines in one session."""
from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_dlperf.node import localsh

from . import suite
from .frameworks import ensure, ensure_horovod
from .procs import signal_once_running, tagged_processes

# trains with Horovod for real (Gloo and MPI, local and SSH nodes): not in the quick tier (tests/quick.sh; docs/testing.md)
pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--dlperf-precision", "fp32", "--dlperf-batch-size", "2", "--dlperf-image-size", "32",
        "--dlperf-warmup-iters", "1", "--dlperf-iters", "2", "--dlperf-repeats", "1", "--dlperf-timeout", "300",
        *suite.QUICK_PROBES]  # no test here judges the hardware probe


def run_suite(report: Path, *args: str, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    return suite.run_suite(f"--dlperf-report={report}", f"--dlperf-baseline-dir={report.parent / 'no-baselines'}",
                           "--dlperf-baseline-missing", "skip", *TINY, *args, env=env, timeout=timeout)


def results(report: Path) -> dict:
    return json.loads((report / "results.json").read_text())


def by_id(report: Path) -> dict[str, dict]:
    return {f'{c["case"]["backend"]}-{c["case"]["id"]}': c for c in results(report)["cases"]}


# ---------------------------------------------------------------- no Horovod needed
@pytest.mark.parametrize("argv, host, words", [
    (["-o", "PasswordAuthentication=no", "-o", "StrictHostKeyChecking=no", "127.0.0.2", "-p", "22", "cd /x ; env A=1 python t.py"],
     "127.0.0.2", ["cd /x ; env A=1 python t.py"]),
    (["127.0.0.3", "true"], "127.0.0.3", ["true"]),
    (["-x", "root@127.0.0.2", "orted", "-mca", "ess", "env"], "127.0.0.2", ["orted", "-mca", "ess", "env"]),
])
def test_local_agent_reads_ssh_command_lines_as_launchers_write_them(argv, host, words):
    assert localsh.split(argv) == (host, words)


def test_local_agent_runs_the_command_here_and_refuses_unknown_hosts(tmp_path):
    agent = [sys.executable, localsh.__file__]
    env = {**os.environ, localsh.NODES_ENV: json.dumps({"127.0.0.2": ""})}
    r = subprocess.run([*agent, "-o", "StrictHostKeyChecking=no", "127.0.0.2", f"echo hi > {tmp_path}/x; echo done"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "done\n" and (tmp_path / "x").read_text() == "hi\n"
    r = subprocess.run([*agent, "10.9.9.9", "true"], env=env, capture_output=True, text=True)
    assert r.returncode == 255 and "not a node of this dlperf local cluster (127.0.0.2)" in r.stderr


def test_perseus_and_acspeed_are_skipped_where_aiacc_is_absent_and_dryrun_shows_their_launchers(tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "--backend", "perseus,acspeed", "--dlperf-model", "resnet50", "-k", "2n1g")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 skipped" in r.stdout, r.stdout
    assert "--backend perseus: perseus is not installed on local0, local1: install it there with AIACC-Training" in r.stdout
    assert "--backend acspeed: acspeed is not installed on local0, local1: install it there with ACSpeed" in r.stdout
    assert not list(report.glob("runs/*/r0"))  # nothing trained
    r = run_suite(report.with_name("dry"), "--backend", "perseus,acspeed", "--dlperf-model", "resnet50",
                  "-k", "2n1g", "--dlperf-dryrun")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("local")]
    perseus = [ln for ln in lines if "perseusrun" in ln]
    assert len(perseus) == 2  # torch and tf, one line each: node 0 starts both nodes
    assert all(" -np 2 -H 127.0.0.1:1,127.0.0.2:1 --gloo " in ln and " -- " in ln for ln in perseus)
    assert any("torch_ddp.py --engine perseus" in ln for ln in perseus)
    assert any("tf_mwms.py --engine perseus" in ln for ln in perseus)
    assert sum("--engine acspeed" in ln for ln in lines) == 2  # torchrun on each node


# ---------------------------------------------------------------- Horovod, built for real
@pytest.fixture(scope="module")
def horovod():
    ensure("tensorflow", "tf")
    ensure_horovod()


def test_horovod_trains_torch_and_tf_over_two_local_nodes_beside_ddp(horovod, tmp_path):
    """The design card's comparison: ddp and horovod in one session, each with its own matrix, then
    the engines side by side with the ratio (at 2n1g: the 1n1g cases add launches, not checks); the
    decoder too under Horovod, in tokens/s (the decoder's engines compared: tests/test_llm.py). Perseus, absent
    here, is skipped with its reason and the rest still runs. The recording is Horovod's own profile, named by
    Horovod's and the workload's frameworks."""
    report, store = tmp_path / "report", tmp_path / "store"
    r = run_suite(report, "--backend", "ddp,horovod,perseus", "--dlperf-model", "resnet50,llama", "-k",
                  "2n1g and not ddp-llama", f"--dlperf-baseline-dir={store}", "--update-baselines")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--backend perseus: perseus is not installed on local0, local1" in r.stdout
    assert "SKIPPED" in r.stdout and "3 skipped" in r.stdout  # perseus' 3
    found = by_id(report)
    assert set(found) == {"ddp-resnet50-fp32-bs2-32px-2n1g", "horovod-resnet50-fp32-bs2-32px-torch-2n1g",
                          "horovod-resnet50-fp32-bs2-32px-tf-2n1g", "horovod-llama-fp32-bs2-seq32-torch-d256l4-2n1g"}
    decoder = found["horovod-llama-fp32-bs2-seq32-torch-d256l4-2n1g"]
    assert decoder["case"]["unit"] == "tokens/s" and decoder["world_size_seen"] == 2
    assert decoder["runs"][0]["meta"]["backend"] == "horovod-gloo"
    profiles = {p.name: json.loads(p.read_text())["entries"] for p in store.glob("*.json")}
    assert any(name.endswith("-horovod0-torch2.json") and "horovod/resnet50-fp32-bs2-32px-torch-2n1g" in entries
               for name, entries in profiles.items()), sorted(profiles)
    for name in ("horovod-resnet50-fp32-bs2-32px-torch-2n1g", "horovod-resnet50-fp32-bs2-32px-tf-2n1g"):
        case = found[name]
        (run,) = case["runs"]
        assert case["world_size_seen"] == 2 and run["meta"]["backend"] == "horovod-gloo"
        assert run["meta"]["frameworks"]["horovod"] == "0.28.1" and run["meta"]["nnodes"] == 2
        (command,) = run["commands"]  # one launcher, on node 0, for both nodes
        assert "horovod.runner.launch -np 2 -H 127.0.0.1:1,127.0.0.2:1 --gloo" in command
        # Horovod's way to checkpoint: worker 0 writes and reads, the state broadcast to the other
        ck = run["meta"]["checkpoint"]
        assert ck["format"] == ("torch.save" if "-torch-" in name else "tf.train.Checkpoint"), ck
        assert ck["bytes"] > 4 * run["meta"]["parameters"] and len(ck["ranks"]) == 2
    doc = results(report)
    (row,) = [x for x in doc["engines"] if x["topology"] == "2n1g" and x["model"] == "resnet50"]
    assert row["framework"] == "torch" and set(row["engines"]) == {"ddp", "horovod"}
    assert row["ratios"]["ddp/horovod"] == pytest.approx(
        found["ddp-resnet50-fp32-bs2-32px-2n1g"]["median"] / found["horovod-resnet50-fp32-bs2-32px-torch-2n1g"]["median"])
    assert "engines compared" in r.stdout and "ddp/horovod" in r.stdout
    assert tagged_processes(str(report)) == []


def test_horovod_over_mpi_trains_two_local_nodes(horovod, tmp_path):
    """--dlperf-horovod-controller mpi: horovodrun --mpi runs Debian's mpirun, which starts node 1's
    ranks through the same remote shell (the local cluster's ssh agent)."""
    report = tmp_path / "report"
    r = run_suite(report, "--backend", "horovod", "--dlperf-horovod-controller", "mpi", "--dlperf-model", "resnet50",
                  "-k", "torch-2n1g")  # TensorFlow under horovodrun trains in the test above
    assert r.returncode == 0, r.stdout + r.stderr
    found = by_id(report)
    assert set(found) == {"horovod-resnet50-fp32-bs2-32px-torch-2n1g"}
    for case in found.values():
        (run,) = case["runs"]
        assert case["world_size_seen"] == 2 and run["meta"]["backend"] == "horovod-mpi"
        assert " --mpi " in run["commands"][0]
    assert tagged_processes(str(report)) == []


def test_horovod_ranks_that_stop_synchronising_fail(horovod, tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "--backend", "horovod", "--dlperf-model", "resnet50", "-k", "torch-2n1g",
                  env={"DLPERF_FAULT": "nosync"})
    assert r.returncode == 1, r.stdout + r.stderr
    (failure,) = results(report)["failures"].values()
    assert "the ranks' parameters disagree after the last step" in failure, failure


def test_a_horovod_rank_that_dies_fails_the_case_and_leaves_nothing(horovod, tmp_path):
    report = tmp_path / "report"
    r = run_suite(report, "--backend", "horovod", "--dlperf-model", "resnet50", "-k", "torch-2n1g",
                  "--dlperf-iters", "50", env={"DLPERF_FAULT": "1:3"})
    assert r.returncode == 1, r.stdout + r.stderr
    (failure,) = results(report)["failures"].values()
    assert "node local0 (exit 1) failed; rank 1 on local1 failed first" in failure, failure
    assert tagged_processes(str(report)) == []


def test_ctrl_c_during_a_horovod_run_leaves_no_rank(horovod, tmp_path):
    report = tmp_path / "report"
    cmd = suite.command(f"--dlperf-report={report}", f"--dlperf-baseline-dir={tmp_path / 'nb'}", *TINY,
                        "--backend", "horovod", "--dlperf-model", "resnet50", "-k", "torch-2n1g", "--dlperf-iters", "500")
    code, out = signal_once_running(cmd, ROOT, str(report), "torch_ddp.py", 2, signal.SIGINT)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert tagged_processes(str(report)) == []


# ---------------------------------------------------------------- over SSH (real sshd on loopback)
@pytest.fixture
def own_known_hosts():
    """horovodrun's ssh (StrictHostKeyChecking=no) adds the test nodes to this user's known_hosts:
    put the file back as it was afterwards."""
    ssh_dir = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".ssh"
    known = ssh_dir / "known_hosts"
    had_dir, before = ssh_dir.exists(), known.read_bytes() if known.exists() else None
    yield
    if before is not None:
        known.write_bytes(before)
    elif known.exists():
        known.unlink()
    if not had_dir and ssh_dir.exists() and not any(ssh_dir.iterdir()):
        ssh_dir.rmdir()


def ssh_suite(nodes, report: Path, *args: str) -> subprocess.CompletedProcess:
    return run_suite(report, "--dlperf-cluster", "ssh", "--dlperf-hosts", nodes.hosts(), *nodes.cli(),
                     "--backend", "horovod", "--dlperf-model", "resnet50", *args)


def test_horovod_trains_over_ssh_nodes_logging_in_with_the_key_given_for_node_0(horovod, fresh_ssh_nodes, own_known_hosts,
                                                                               tmp_path):
    """horovodrun on node 0 logs in to the other node with the key given for it (a file on node 0). (Two nodes: a
    third or fourth is logged in to alike, and four Horovod ranks on this 2-core machine took 84 s.)"""
    nodes = fresh_ssh_nodes(2)
    report = tmp_path / "report"
    r = ssh_suite(nodes, report, "-k", "torch and 2n1g", f"--dlperf-ssh-node-key={nodes.client_key}")
    assert r.returncode == 0, r.stdout + r.stderr
    found = by_id(report)
    assert set(found) == {"horovod-resnet50-fp32-bs2-32px-torch-2n1g"}
    case = found["horovod-resnet50-fp32-bs2-32px-torch-2n1g"]
    (run,) = case["runs"]
    assert case["world_size_seen"] == 2 and run["meta"]["nnodes"] == 2
    hosts = ",".join(f"{n.address}:1" for n in nodes.nodes)
    (command,) = run["commands"]
    assert f"-np 2 -H {hosts} --gloo --disable-cache --ssh-port {nodes.port} --ssh-identity-file {nodes.client_key}" in command
    assert command.startswith(f"ssh -p {nodes.port} ")  # the harness reaches node 0 over SSH too
    assert tagged_processes(str(tmp_path)) == [] and tagged_processes(str(nodes.root)) == []


def test_node_0_that_cannot_log_in_to_the_others_fails_before_training(horovod, fresh_ssh_nodes, own_known_hosts,
                                                                       tmp_path):
    nodes = fresh_ssh_nodes(2)
    report = tmp_path / "report"
    bad_key = tmp_path / "not-authorized"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(bad_key)], check=True)
    r = ssh_suite(nodes, report, "-k", "torch-2n1g", f"--dlperf-ssh-node-key={bad_key}")
    assert r.returncode == 1, r.stdout + r.stderr
    (failure,) = results(report)["failures"].values()
    n0, n1 = nodes.nodes
    assert f"{n0.address} cannot log in to {n1.address} over SSH without a password" in failure, failure
    assert "--dlperf-ssh-node-key" in failure
    assert not list(report.glob("runs/*/r0"))  # nothing trained


def test_framework_is_the_first_part_of_a_horovod_variant_and_arcface_keeps_its_class_count():
    from pytest_dlperf.launchers.horovod import HorovodLauncher
    from pytest_dlperf.specs import CaseSpec, Topology

    hvd = HorovodLauncher()
    assert hvd.variants("cpu", "resnet50") == ("torch", "tf")
    assert hvd.variants("gpu", "arcface") == ("torch-cls85742",)  # the TF workload has no ArcFace
    case = CaseSpec(model="arcface", precision="fp32", batch_size=2, image_size=32, topology=Topology(2, 1),
                    backend="horovod", variant="torch-cls4096")
    assert hvd.variant_flags(case) == ["--num-classes", "4096"]
    assert hvd.variants("cpu", "llama") == ("torch-d256l4",) and hvd.variants("gpu", "llama") == ("torch-d2048l16",)
    decoder = CaseSpec(model="llama", precision="fp32", batch_size=2, image_size=64, topology=Topology(2, 1),
                       backend="horovod", variant="torch-d256l4")
    assert hvd.variant_flags(decoder) == ["--llm-dim", "256", "--llm-layers", "4"]
    assert hvd.frameworks_for(case) == ("horovod", "torch")
    assert case.id == "arcface-fp32-bs2-32px-torch-cls4096-2n1g"
    with pytest.raises(ValueError, match="controller 'ucx'"):
        HorovodLauncher(controller="ucx")
