"""--dlperf-cluster aliyun: the official ECS SDK against the emulator (tests/ecs_emulator.py: the
RPC protocol over HTTP on 127.0.0.1, ACS3-HMAC-SHA256 verified with the secret, the service's
errors), FastGPU's naming and reuse, nothing leaked on any failure, secrets never shown; then a
whole session that provisions, trains over real sshd nodes and stops the instances."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .ecs_emulator import Emulator
from .frameworks import ensure
from .procs import signal_when, tagged_processes
from .suite import QUICK_PROBES, TINY_ENGINE, command

# an ECS emulator and real sshd nodes: not in the quick tier (tests/quick.sh; docs/testing.md)
pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent
KEY_ID, SECRET = "LTAI5tDLPERFTESTKEY01", "dLpErFsEcReT0123456789abcdefXYZ"
TYPE, IMAGE = "ecs.gn6v-c8g1.16xlarge", "ubuntu_22_04_x64_20G_alibase_20241023.vhd"


@pytest.fixture(scope="module", autouse=True)
def sdk():
    ensure("alibabacloud_ecs20140526", "aliyun")


@pytest.fixture
def emu():
    e = Emulator(KEY_ID, SECRET, addresses=["127.0.0.2", "127.0.0.3"], boot_s=0.2, stop_s=0.2)
    e.endpoint = e.start()
    yield e
    e.stop()


def api_for(emu, secret: str = SECRET, key_id: str = KEY_ID, **kw):
    from pytest_dlperf.clusters.aliyun.api import EcsApi
    from pytest_dlperf.clusters.aliyun.credentials import Credentials

    return EcsApi(Credentials(key_id, secret, "test"), emu.region, endpoint=emu.endpoint, protocol="http", **kw)


def provisioner(api, count: int = 2, job: str = "bench", instance_type: str = TYPE, **kw):
    from pytest_dlperf.clusters.aliyun.api import LaunchSpec
    from pytest_dlperf.clusters.aliyun.provision import Provisioner

    said: list[str] = []
    prov = Provisioner(api, job, count, LaunchSpec(instance_type, IMAGE), poll_s=0.05, wait_running_s=10,
                       say=said.append, check_ssh=False, **kw)  # no sshd here; the session tests have
    return prov, said


# ---------------------------------------------------------------- credentials
def test_credentials_from_the_sdk_variables_fastgpu_variables_or_the_file_and_never_shown(tmp_path):
    from pytest_dlperf.clusters.aliyun import credentials as c

    env = {"ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET}
    got = c.load(env)
    assert got.access_key_secret == SECRET and SECRET not in repr(got) and SECRET not in str(got)
    assert KEY_ID not in repr(got) and got.access_key_id[-4:] in repr(got)
    fast = c.load({"ALIYUN_ACCESS_KEY_ID": KEY_ID, "ALIYUN_ACCESS_KEY_SECRET": SECRET})
    assert fast.access_key_id == KEY_ID and "ALIYUN_ACCESS_KEY_ID" in fast.source
    ini = tmp_path / "credentials.ini"
    ini.write_text(f"[default]\ntype = access_key\naccess_key_id = {KEY_ID}\naccess_key_secret = {SECRET}\n")
    assert c.load({"ALIBABA_CLOUD_CREDENTIALS_FILE": str(ini)}).access_key_secret == SECRET
    with pytest.raises(c.CredentialsError, match="ALIBABA_CLOUD_ACCESS_KEY_ID is set but none of"):
        c.load({"ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID})
    with pytest.raises(c.CredentialsError, match="no Alibaba Cloud credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID"):
        c.load({"ALIBABA_CLOUD_CREDENTIALS_FILE": str(tmp_path / "absent.ini")})
    assert c.region({"ALIYUN_DEFAULT_REGION": "cn-zhangjiakou"}) == "cn-zhangjiakou"
    assert got.scrub(f"key {KEY_ID} secret {SECRET}") == f"key ***{KEY_ID[-4:]} secret ***"


# ---------------------------------------------------------------- the API through the real SDK
def test_a_wrong_secret_or_unknown_key_is_the_services_error_without_the_secret(emu):
    from pytest_dlperf.clusters.aliyun.api import CloudError

    with pytest.raises(CloudError) as err:
        api_for(emu, secret="not-the-secret-at-all").describe("bench")
    assert err.value.code == "SignatureDoesNotMatch" and err.value.status == 400
    assert "not-the-secret-at-all" not in str(err.value) and "RequestId" in str(err.value)
    with pytest.raises(CloudError) as err:
        api_for(emu, key_id="LTAI5tNOSUCHKEY000").describe("bench")
    assert err.value.code == "InvalidAccessKeyId.NotFound" and err.value.status == 404


def test_throttling_is_retried_with_backoff_and_other_errors_are_not(emu):
    from pytest_dlperf.clusters.aliyun.api import CloudError

    slept: list[float] = []
    api = api_for(emu, sleep=slept.append)
    emu.fail("DescribeInstances", "Throttling.User", 400, "Request was denied due to user flow control.", times=3)
    assert api.describe("bench") == []
    assert slept == [1.0, 2.0, 4.0]
    emu.fail("DescribeInstances", "InvalidParameter", 400, "bad", times=1)
    with pytest.raises(CloudError, match="InvalidParameter"):
        api.describe("bench")
    assert slept == [1.0, 2.0, 4.0]


def test_a_lost_or_late_reply_is_retried_and_a_lost_creation_is_not_made_twice(emu):
    slept: list[float] = []
    api = api_for(emu, sleep=slept.append, timeout_ms=700)
    emu.fail("RunInstances", kind="drop")  # created, but the reply never comes
    prov, _ = provisioner(api, count=1)
    (inst,) = prov.acquire()
    assert len(emu.live()) == 1 and prov.created == [inst.id]  # the retry's ClientToken got the same one
    runs = [p for a, p in emu.calls if a == "RunInstances"]
    assert len(runs) == 2 and runs[0]["ClientToken"] == runs[1]["ClientToken"]
    emu.fail("DescribeInstances", kind="slow", delay=2.0)  # later than the client waits
    assert [i.id for i in api.describe("bench")] == [inst.id]
    assert len(slept) == 2
    emu.fail("StopInstances", kind="drop")  # stopped, reply lost: the retry's IncorrectInstanceStatus means done
    api.stop([inst.id])
    assert [p["StoppedMode"] for a, p in emu.calls if a == "StopInstances"] == ["StopCharging"] * 2


def test_a_creation_whose_every_reply_was_lost_is_still_released(emu):
    from pytest_dlperf.clusters.aliyun.provision import ProvisionError

    api = api_for(emu, sleep=lambda s: None, timeout_ms=700, attempts=2)
    emu.fail("RunInstances", kind="drop", times=2)
    prov, _ = provisioner(api, count=1)
    with pytest.raises(ProvisionError) as err:
        prov.acquire()
    assert "NetworkError" in str(err.value) and "released the 1 instance(s) this session created" in str(err.value)
    assert emu.live() == [] and len(emu.deleted) == 1


# ---------------------------------------------------------------- FastGPU semantics
def test_a_job_is_created_as_named_tagged_tasks_then_stopped_without_charging_and_reused(emu):
    prov, said = provisioner(api_for(emu))
    got = prov.acquire()
    assert [i.name for i in got] == ["task0.bench", "task1.bench"]
    assert all(i.status == "Running" and i.instance_type == TYPE for i in got)
    assert [i.public_ip for i in got] == ["127.0.0.2", "127.0.0.3"]
    runs = [p for a, p in emu.calls if a == "RunInstances"]
    assert [p["InstanceName"] for p in runs] == ["task0.bench", "task1.bench"]
    assert all(p["Tag.1.Key"] == "dlperf-job" and p["Tag.1.Value"] == "bench" for p in runs)
    assert "creating task0.bench" in said[0] and "2/2 running" in said[-1]

    assert "StopCharging" in prov.finish("stop")
    stops = [p for a, p in emu.calls if a == "StopInstances"]
    assert stops[-1]["StoppedMode"] == "StopCharging"

    again, said = provisioner(api_for(emu))  # the next session: the same two, started again
    reused = again.acquire()
    assert [i.id for i in reused] == [i.id for i in got]
    assert sum(a == "RunInstances" for a, _ in emu.calls) == 2 and sorted(again.started) == sorted(i.id for i in got)
    assert "reusing task0.bench, task1.bench; starting 2" in said[0]
    assert "released 2" in again.finish("release") and emu.live() == []


def test_a_partial_or_different_set_is_an_error_naming_what_exists_and_creates_nothing(emu):
    from pytest_dlperf.clusters.aliyun.provision import ProvisionError

    prov, _ = provisioner(api_for(emu), count=1)
    (first,) = prov.acquire()
    more, _ = provisioner(api_for(emu), count=2)
    with pytest.raises(ProvisionError) as err:
        more.acquire()
    assert f"1 of 2 instances exist (task0.bench {first.id} Running); missing task1.bench" in str(err.value)
    other, _ = provisioner(api_for(emu), count=1, instance_type="ecs.gn7i-c8g1.2xlarge")
    with pytest.raises(ProvisionError, match=f"task0.bench: instance type {TYPE} \\(asked ecs.gn7i-c8g1.2xlarge\\)"):
        other.acquire()
    assert [i.id for i in emu.live()] == [first.id]  # nothing created, nothing touched


def test_out_of_stock_midway_releases_what_this_session_created_and_says_so(emu):
    from pytest_dlperf.clusters.aliyun.provision import ProvisionError

    emu.stock = 1
    prov, _ = provisioner(api_for(emu))
    with pytest.raises(ProvisionError) as err:
        prov.acquire()
    text = str(err.value)
    assert "OperationDenied.NoStock" in text and "released the 1 instance(s) this session created" in text
    assert emu.live() == [] and len(emu.deleted) == 1


def test_interrupted_or_timed_out_waits_leave_nothing_running(emu):
    from pytest_dlperf.clusters.aliyun.provision import ProvisionError

    prov, _ = provisioner(api_for(emu))

    def ctrl_c(text: str) -> None:
        if "running" in text:
            raise KeyboardInterrupt

    prov.say = ctrl_c
    with pytest.raises(KeyboardInterrupt):
        prov.acquire()
    assert emu.live() == [] and len(emu.deleted) == 2

    emu.boot_s = 3.0  # booting outlasts the wait; clean-up waits for Running, then releases
    slow, _ = provisioner(api_for(emu))
    slow.wait_running_s = 0.5
    with pytest.raises(ProvisionError, match="not all Running with a public IP after 0.5s .*released the 2"):
        slow.acquire()
    assert emu.live() == []


# ---------------------------------------------------------------- a whole session
def suite(emu, sshd, report: Path, *args: str, env: dict | None = None, tiny: bool = False) -> subprocess.CompletedProcess:
    """A session on the aliyun kind; ``tiny``: on the tiny engine (tests/tiny), where instances are the point."""
    cmd = command(*(TINY_ENGINE if tiny else ()), *QUICK_PROBES, f"--dlperf-report={report}", "--dlperf-cluster",
                  "aliyun", "--nodes", "2", "--dlperf-aliyun-instance-type", TYPE, "--dlperf-aliyun-image", IMAGE,
                  "--dlperf-aliyun-region", emu.region, "--dlperf-aliyun-endpoint", emu.endpoint,
                  "--dlperf-aliyun-protocol", "http", "--dlperf-aliyun-security-group", "sg-dlperf",
                  "--dlperf-aliyun-wait", "30", "--dlperf-aliyun-job", "ci", *sshd.cli(),
                  f"--dlperf-baseline-dir={report.parent / f'baselines-{report.name}'}",
                  "--dlperf-model", "resnet50", "--dlperf-batch-size", "2", "--dlperf-image-size", "32",
                  "--dlperf-warmup-iters", "1", "--dlperf-iters", "2", "--dlperf-repeats", "1", "--dlperf-timeout", "180",
                  *args)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ALIBABA_CLOUD_", "ALIYUN_"))}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**base, "ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET,
                               **(env or {})})


def test_a_session_provisions_trains_over_ssh_gates_by_instance_type_and_stops_the_instances(emu, ssh_nodes, tmp_path):
    emu.addresses = [n.address for n in ssh_nodes.nodes]
    report = tmp_path / "report"
    r = suite(emu, ssh_nodes, report, "-k", "2n1g", "--dlperf-baseline-missing", "record")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "aliyun: creating task0.ci" in out and "aliyun: stopped 2 instance(s) of job 'ci' (StopCharging" in out
    doc = json.loads((report / "results.json").read_text())
    (case,) = doc["cases"]
    assert case["case"]["id"] == "resnet50-fp32-bs2-32px-2n1g" and case["world_size_seen"] == 2
    assert {i["name"] for i in doc["environment"]["cluster"]["instances"]} == {"task0.ci", "task1.ci"}
    assert (tmp_path / "baselines-report" / f"{TYPE}.json").is_file()  # the instance type is the profile
    assert {i.status for i in emu.live()} == {"Stopped"} and {i.stopped_mode for i in emu.live()} == {"StopCharging"}
    (rule,) = emu.rules
    assert rule["PortRange"] == f"{ssh_nodes.port}/{ssh_nodes.port}" and rule["SourceCidrIp"] == "127.0.0.1/32"
    for f in [*report.rglob("*"), tmp_path / "baselines-report" / f"{TYPE}.json"]:
        if f.is_file():
            assert SECRET not in f.read_text(errors="replace"), f
    assert SECRET not in out

    # the next session reuses the stopped pair, and --dlperf-aliyun-after release deletes it (its own,
    # empty baseline store: this is about the instances, not the gate)
    r = suite(emu, ssh_nodes, tmp_path / "again", "-k", "2n1g", "--dlperf-aliyun-after", "release",
              "--dlperf-baseline-missing", "skip", tiny=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "aliyun: reusing task0.ci, task1.ci; starting 2" in r.stderr and emu.live() == []
    assert sum(a == "RunInstances" for a, _ in emu.calls) == 2
    assert tagged_processes(str(tmp_path)) == []


def test_a_session_whose_api_calls_fail_says_so_without_secrets_and_leaves_nothing(emu, ssh_nodes, tmp_path):
    emu.addresses = [n.address for n in ssh_nodes.nodes]
    emu.fail("RunInstances", "QuotaExceed.ElasticQuota", 403,
             "No additional quota is available for the specified ECS instance type.", after=1)
    r = suite(emu, ssh_nodes, tmp_path / "report", "-k", "2n1g")
    out = r.stdout + r.stderr
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "QuotaExceed.ElasticQuota" in out and "released the 1 instance(s) this session created" in out
    assert emu.live() == [] and SECRET not in out
    r = suite(emu, ssh_nodes, tmp_path / "bad", "-k", "2n1g", env={"ALIBABA_CLOUD_ACCESS_KEY_SECRET": "wrong-" + SECRET})
    assert r.returncode == pytest.ExitCode.USAGE_ERROR and "SignatureDoesNotMatch" in r.stderr
    assert SECRET not in r.stdout + r.stderr


def test_sigterm_while_instances_boot_releases_what_the_session_created(emu, ssh_nodes, tmp_path):
    emu.addresses = [n.address for n in ssh_nodes.nodes]
    emu.boot_s = 20.0  # still booting when the signal comes: clean-up waits for Running, then releases
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ALIBABA_CLOUD_", "ALIYUN_"))},
           "ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET}
    cmd = command(f"--dlperf-report={tmp_path / 'report'}", "--dlperf-cluster", "aliyun", "--nodes", "2",
                  "--dlperf-aliyun-instance-type", TYPE, "--dlperf-aliyun-image", IMAGE, "--dlperf-aliyun-region",
                  emu.region, "--dlperf-aliyun-endpoint", emu.endpoint, "--dlperf-aliyun-protocol", "http",
                  *ssh_nodes.cli())
    code, out = signal_when(cmd, ROOT, lambda: len(emu.live()) == 2, signal.SIGTERM, start_timeout=120, env=env,
                            settle=1.0)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert "released the 2 instance(s) this session created" in out
    assert emu.live() == [] and len(emu.deleted) == 2 and SECRET not in out


# ---------------------------------------------------------------- dlperf cluster (FastGPU's ecluster verbs)
@pytest.fixture
def cli(emu, monkeypatch, capsys):
    from pytest_dlperf import cli as dlperf_cli

    for k in [k for k in os.environ if k.startswith(("ALIBABA_CLOUD_", "ALIYUN_"))]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("ALIYUN_ACCESS_KEY_ID", KEY_ID)  # FastGPU's names
    monkeypatch.setenv("ALIYUN_ACCESS_KEY_SECRET", SECRET)
    monkeypatch.setenv("ALIYUN_DEFAULT_REGION", emu.region)

    def run(*argv: str) -> tuple[int, str, str]:
        code = dlperf_cli.main(["cluster", "--endpoint", emu.endpoint, "--protocol", "http", *argv])
        out, err = capsys.readouterr()
        assert SECRET not in out + err
        return code, out, err

    return run


def test_cluster_create_ls_stop_start_rename_addip_kill(cli, emu, tmp_path):
    cfg = tmp_path / "create.cfg"
    cfg.write_text(f"[create]\nname = bench\nmachines = 2\ninstance_type = {TYPE}\nimage = {IMAGE}\n"
                   "security_group = sg-bench\n")
    code, out, err = cli("create", "--config", str(cfg), "--poll", "0.05")
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == ["task0.bench", "task1.bench"]
    code, out, _ = cli("ls")
    header, *rows = out.splitlines()[1:]
    assert header.split() == ["name", "hours_live", "instance_type", "public_ip", "private_ip", "status", "instance_id"]
    assert [r.split()[0] for r in rows] == ["task0.bench", "task1.bench"]
    assert all(r.split()[2] == TYPE and r.split()[3] in ("127.0.0.2", "127.0.0.3") for r in rows)

    emu.stop_s = 2.0  # long enough that the next call surely finds them Stopping
    assert cli("stop", "{bench}")[:2] == (0, "stopped task0.bench, task1.bench\n")
    assert [p["StoppedMode"] for a, p in emu.calls if a == "StopInstances"] == ["StopCharging"]
    code, _, err = cli("start", "{bench}", "--wait", "0")
    assert code == 2 and "Stopping after 0s" in err  # still stopping: nothing asked of the service
    assert cli("start", "task1.bench")[:2] == (0, "started task1.bench\n")  # waits until it is Stopped
    code, _, err = cli("rename", "{bench}", "x")
    assert code == 2 and "{bench} names 2 instances; give one task name" in err
    assert cli("rename", "task1.bench", "task9.bench")[0] == 0
    assert sorted(i.name for i in emu.live()) == ["task0.bench", "task9.bench"]
    code, out, _ = cli("addip", "task0.bench", "--cidr", "203.0.113.7/32")
    assert code == 0 and emu.rules == [{"SecurityGroupId": "sg-bench", "IpProtocol": "tcp", "PortRange": "22/22",
                                        "SourceCidrIp": "203.0.113.7/32", "Policy": "accept"}]
    assert cli("kill", "{bench}")[:2] == (0, "released task0.bench, task9.bench\n") and emu.live() == []
    code, _, err = cli("stop", "task0.nothing")
    assert code == 2 and "no instance named 'task0.nothing'" in err


def test_cluster_create_with_flags_and_errors_say_what_is_wrong(cli, emu):
    code, _, err = cli("create", "--name", "x")
    assert code == 2 and "create needs --instance-type, --image" in err
    emu.stock = 0
    code, _, err = cli("create", "--name", "x", "--instance-type", TYPE, "--image", IMAGE, "--poll", "0.05")
    assert code == 2 and "OperationDenied.NoStock" in err and emu.live() == []


def test_cluster_ssh_tmux_and_scp_reach_the_instance_with_the_given_login(cli, emu, ssh_nodes, tmp_path):
    emu.addresses = [n.address for n in ssh_nodes.nodes]
    assert cli("create", "--name", "w", "--instance-type", TYPE, "--image", IMAGE, "--poll", "0.05")[0] == 0
    login = ["--user", ssh_nodes.user, "--key", str(ssh_nodes.client_key), "--port", str(ssh_nodes.port),
             "-o", f"UserKnownHostsFile={ssh_nodes.known_hosts}", "-o", "BatchMode=yes"]
    code, out, _ = cli("tmux", "task0.w", *login, "--print")
    assert code == 0 and out.startswith("ssh -t -p ") and "tmux attach" in out
    code, out, _ = cli("scp", str(tmp_path / "f"), "task0.w:/tmp/x", *login, "--print")
    assert code == 0 and f"{ssh_nodes.user}@{ssh_nodes.nodes[0].address}:/tmp/x" in out and " -P " in out
    # for real: the command exec's ssh, which runs a command on the node's sshd
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ALIBABA_CLOUD_", "ALIYUN_"))}
    env.update(ALIYUN_ACCESS_KEY_ID=KEY_ID, ALIYUN_ACCESS_KEY_SECRET=SECRET, ALIYUN_DEFAULT_REGION=emu.region)
    r = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "cluster", "--endpoint", emu.endpoint,
                        "--protocol", "http", "ssh", "task0.w", *login, "--", "echo", "hello-from-task0"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "hello-from-task0", r.stderr
