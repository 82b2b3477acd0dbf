"""Command-line options (one group) and their validation into a RunOptions spec."""
from __future__ import annotations

import argparse
import datetime as _dt
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from .specs import PRECISIONS

def _number(kind: type, least: float, strict: bool, what: str):
    """An argparse type: ``kind`` at least ``least`` (above it when ``strict``), a clear error otherwise."""
    bound = f"{what} {'>' if strict else '>='} {least:g}"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {bound}, got {text!r}") from None
        if not (value > least if strict else value >= least):
            raise argparse.ArgumentTypeError(f"expected {bound}, got {text!r}")
        return value

    return parse


positive_int = _number(int, 1, False, "a whole number")
non_negative_int = _number(int, 0, False, "a whole number")
positive_seconds = _number(float, 0, True, "seconds")
# Seconds between the extra hardware probes (--dlperf-reprobe-pause): the host's slow spells last seconds.
REPROBE_PAUSE = 2.0
non_negative_seconds = _number(float, 0, False, "seconds")


def _csv(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list, got nothing")
    return items


MISSING = ("skip", "fail", "record")
NOISY = ("fail", "warn")
HARDWARE = ("skip", "fail")
HOST_KEY_CHECKING = ("strict", "accept-new", "off")
# The order of a session's launches (session.py): a case's repeats back to back let the host's drift
# over minutes fall on one case's launches alike, which the significance test takes for the case's speed.
ORDERS = ("rounds", "case")
DEFAULT_ORDER = "rounds"
DEFAULT_SSH_CONFIG = "~/.ssh/config"

# Every option is --dlperf-*, so the plugin (loaded into every session of the environment) never
# takes a name a repository's conftest uses (--model, --iters, --hosts, --tolerance ...). The design
# card's three short names are added as aliases only where nobody else defined them.
# The design card's names, and the names the cluster kinds were specified with (``--cluster slurm
# --slurm-partition gpu``): aliases of the --dlperf-* options wherever no conftest or plugin took them.
SHORT_NAMES = {"--nodes": "--dlperf-nodes", "--backend": "--dlperf-backend",
               "--update-baselines": "--dlperf-update-baselines", "--cluster": "--dlperf-cluster",
               **{f"--slurm-{n}": f"--dlperf-slurm-{n}" for n in (
                   "partition", "account", "time", "gpus-per-node", "constraint", "qos", "wait")}}


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a TCP port 1-65535, got {text!r}")
    return int(text)


def _hosts(text: str) -> str:
    """Checked when the command line is read, so a bad host list is a usage error (exit 4)."""
    from .clusters.hosts import parse_hosts

    try:
        parse_hosts(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _hostfile(text: str) -> str:
    from .clusters.hosts import parse_hostfile

    try:
        parse_hostfile(text)
    except (ValueError, FileNotFoundError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.05, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1) such as 0.05 for 5%, got {text!r}")
    return value


def _profile_name(text: str) -> str:
    from .baselines.profile import check_profile_name

    try:
        return check_profile_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


FLAG_ACTIONS = ("store_true", "store_false", "count")
# The keywords each option was added with, by option string (aliases too). Read from here, not from
# pytest's Argument.attrs(): which keywords that returns differs between pytest versions (one on a
# GPU machine, 2026-11-25, gave no 'action', and --update-baselines became an option taking a value).
OPTION_KWARGS: dict[str, dict[str, Any]] = {}


def value_options(parser: pytest.Parser) -> frozenset[str]:
    """The plugin's option strings (long names and the short aliases added) that take a value."""
    return frozenset(name for opt in parser.getgroup("dlperf").options for name in opt.names()
                     if OPTION_KWARGS.get(name, {}).get("action") not in FLAG_ACTIONS)


def add_options(parser: pytest.Parser) -> None:
    """Every option of the plugin, in one group; dests are ``dlperf_*`` (never a conftest's)."""
    g = parser.getgroup("dlperf", "distributed training benchmarks (pytest-dlperf)")

    def a(name: str, **kwargs: Any) -> None:
        OPTION_KWARGS[name] = kwargs
        g.addoption(name, **kwargs)
    # -- what runs, where
    a("--dlperf-cluster", default="local", metavar="KIND",
      help="where the nodes come from: local (processes on this machine, default), "
           "ssh (--dlperf-hosts/--dlperf-hostfile), aliyun (ECS instances), slurm (an allocation's "
           "nodes, srun), or a kind an installed plugin adds")
    a("--dlperf-nodes", type=positive_int, default=None, metavar="N",
      help="largest number of nodes in the ladder (local default 2; ssh: the hosts given). Alias: --nodes")
    a("--dlperf-gpus-per-node", type=positive_int, default=None, metavar="G",
      help="devices per node (GPUs; on a CPU node, worker processes). Default: GPUs found, else 1")
    a("--dlperf-backend", default="ddp", metavar="NAME",
      help="launch backend, or several comma-separated (each runs its matrix; the summary compares "
           "them): ddp (PyTorch DDP, torchrun), tf (MultiWorkerMirroredStrategy), paddle, "
           "horovod (horovodrun on node 0), perseus (AIACC-Training, perseusrun), acspeed (DDP with "
           "ACSpeed). Alias: --backend")
    a("--dlperf-horovod-controller", choices=("gloo", "mpi"), default="gloo",
      help="horovod, perseus: how the ranks are started and rendezvous (gloo, default; mpi: mpirun, "
           "OpenMPI on every node)")
    a("--dlperf-model", type=_csv, default=None, metavar="A,B",
      help="models to train, comma-separated (default: every model of the backend)")
    a("--dlperf-precision", type=_csv, default=None, metavar="P,Q",
      help=f"precisions, comma-separated from {', '.join(PRECISIONS)} (default: the profile's: "
           "fp32 on CPU nodes, both on GPUs)")
    a("--dlperf-batch-size", type=positive_int, default=None, metavar="B",
      help="samples per device per step (default: the hardware profile's, per model)")
    a("--dlperf-image-size", type=positive_int, default=None, metavar="PX",
      help="image side in pixels (default: the hardware profile's, per model)")
    # -- how it is measured
    a("--dlperf-repeats", type=positive_int, default=None, metavar="R",
      help="separate runs per case; mean and median are taken over them")
    a("--dlperf-budget", type=non_negative_seconds, default=None, metavar="S",
      help="seconds of measuring for the session: a case takes its last repeats only while the cases "
           "still to run fit (default: the profile's, 330 on CPU nodes, none on GPUs; off with an explicit "
           "--dlperf-repeats or --update-baselines; 0: none)")
    a("--dlperf-order", choices=ORDERS, default=DEFAULT_ORDER,
      help="rounds: every case of the session launches once per round, so a case's repeats fall minutes "
           "apart and the host's slow spells spread over all cases (asv's interleaved rounds); case: a "
           "case's repeats back to back (default: %(default)s; under xdist, case by case)")
    a("--dlperf-warmup-iters", type=non_negative_int, default=None, metavar="W",
      help="steps run before the measured window")
    a("--dlperf-iters", type=positive_int, default=None, metavar="I",
      help="steps in the measured window (exactly, unless --dlperf-window-seconds is given)")
    a("--dlperf-window-seconds", type=non_negative_seconds, default=None, metavar="S",
      help="size each measured window to about this many seconds at the warm-up's pace, "
           "--dlperf-iters steps at least (default: the profile's, 1.5 on CPU; 0: fixed --dlperf-iters)")
    a("--dlperf-pace-probe", action="store_true", default=False,
      help="CPU nodes: run the pace probe (node/paceprobe.py, an 8 MiB copy every 0.1 s on each node's "
           "launch core; about 3%% of a launch's throughput) beside every launch, and judge throughputs at "
           "the baseline's pace where both sides were probed (README, Gate power). Default: probe when "
           "recording, and when the case's baseline was recorded with the probe or there is none")
    a("--dlperf-no-pace-probe", action="store_true", default=False,
      help="never run the pace probe: throughputs are judged as measured")
    a("--dlperf-probe-seconds", type=positive_seconds, default=1.5, metavar="S",
      help="length of the hardware probe run on every node before a case's first launch (default %(default)s)")
    a("--dlperf-reprobe-pause", type=non_negative_seconds, default=REPROBE_PAUSE, metavar="S",
      help="seconds between the extra probes taken before a HARDWARE verdict and when recording "
           "(default %(default)s: the host's slow spells last seconds)")
    a("--dlperf-dryrun", action="store_true", default=False,
      help="print the exact per-node commands of every case; train nothing")
    a("--dlperf-report", default=None, metavar="DIR",
      help="directory for results.json and run logs (default .dlperf/reports/<time>)")
    a("--dlperf-timeout", type=positive_seconds, default=900.0, metavar="S",
      help="seconds one run may take before every process is killed (default 900)")
    # -- the SSH cluster
    a("--dlperf-hosts", type=_hosts, default=None, metavar="HOST:SLOTS,...",
      help="--dlperf-cluster ssh: the nodes, horovodrun style: host:slots[,host:slots...], e.g. "
           "10.0.0.2:8,10.0.0.3:8. A host is an address or an alias of the ssh config; node 0 (the "
           "first) is the rendezvous master")
    a("--dlperf-hostfile", type=_hostfile, default=None, metavar="FILE",
      help="--dlperf-cluster ssh: the nodes from a file, one host per line: 'host slots=N' "
           "(MPI/Horovod hostfile), '#' starts a comment")
    a("--dlperf-ssh-user", default=None, metavar="USER",
      help="login name on every node (default: the ssh config's User, else yours)")
    a("--dlperf-ssh-port", type=_port, default=None, metavar="PORT",
      help="sshd port on every node (default: the ssh config's Port, else 22)")
    a("--dlperf-ssh-key", default=None, metavar="FILE",
      help="private key (identity file) to log in with (default: the ssh config's IdentityFile, "
           "~/.ssh/id_* and the agent)")
    a("--dlperf-ssh-node-key", default=None, metavar="FILE",
      help="backends that start every node from node 0 (horovod, perseus): the key file ON NODE 0 "
           "that logs in to the other nodes (default: node 0's own ssh defaults)")
    a("--dlperf-ssh-known-hosts", default=None, metavar="FILE",
      help="known_hosts file the host keys are checked against (default: ~/.ssh/known_hosts or the "
           "ssh config's UserKnownHostsFile)")
    a("--dlperf-ssh-config", default=DEFAULT_SSH_CONFIG, metavar="FILE",
      help="OpenSSH client config for per-host HostName, Port, User, IdentityFile and ProxyJump "
           f"(default {DEFAULT_SSH_CONFIG}; /dev/null reads none)")
    a("--dlperf-ssh-host-key-checking", choices=HOST_KEY_CHECKING, default="strict",
      help="strict (default): refuse hosts whose key is unknown or changed. accept-new: INSECURE, "
           "trust unknown hosts for this session (changed keys are still refused). off: INSECURE, "
           "accept any host key, even a changed one")
    a("--dlperf-ssh-python", default="python3", metavar="PATH",
      help="Python interpreter on the nodes that runs the launcher and workload (default python3)")
    a("--dlperf-ssh-workdir", default=None, metavar="DIR",
      help="directory on the nodes for per-run directories (default /tmp/pytest-dlperf-<user>; "
           "relative paths are under the login's home)")
    a("--dlperf-ssh-connect-timeout", type=positive_seconds, default=10.0, metavar="S",
      help="seconds to wait for a node to answer (default 10)")
    a("--dlperf-ssh-retries", type=non_negative_int, default=3, metavar="N",
      help="extra connection attempts after a network error, with doubling backoff (default 3)")
    # -- Alibaba Cloud ECS (--dlperf-cluster aliyun); credentials come from the environment or the
    #    Alibaba credentials file, never from an option (they would show in ps and CI logs)
    a("--dlperf-aliyun-instance-type", default=None, metavar="TYPE",
      help="--dlperf-cluster aliyun: the ECS instance type, e.g. ecs.gn6v-c8g1.16xlarge (also the profile name)")
    a("--dlperf-aliyun-image", default=None, metavar="ID", help="the image id the instances boot")
    a("--dlperf-aliyun-region", default=None, metavar="REGION",
      help="default: ALIBABA_CLOUD_REGION_ID or FastGPU's ALIYUN_DEFAULT_REGION")
    a("--dlperf-aliyun-zone", default="", metavar="ZONE")
    a("--dlperf-aliyun-vswitch", default="", metavar="ID")
    a("--dlperf-aliyun-security-group", default="", metavar="ID",
      help="its SSH port is opened to the caller's address only (--dlperf-aliyun-admit)")
    a("--dlperf-aliyun-admit", default="", metavar="CIDR",
      help="the address the security group admits (default: this machine's address on the route to the endpoint, /32)")
    a("--dlperf-aliyun-key-pair", default="", metavar="NAME", help="the ECS key pair the instances accept")
    a("--dlperf-aliyun-system-disk", type=positive_int, default=None, metavar="GB")
    a("--dlperf-aliyun-data-disk", type=positive_int, default=None, metavar="GB")
    a("--dlperf-aliyun-spot", choices=("no", "as-price-go", "price-limit"), default="no",
      help="spot instances: NoSpot (default), SpotAsPriceGo, or SpotWithPriceLimit with --dlperf-aliyun-spot-price-limit")
    a("--dlperf-aliyun-spot-price-limit", type=positive_seconds, default=None, metavar="PRICE")
    a("--dlperf-aliyun-job", default="dlperf", metavar="NAME",
      help="the job: instances are named task{i}.NAME (FastGPU's names) and reused by the next session")
    a("--dlperf-aliyun-after", choices=("stop", "release", "keep"), default="stop",
      help="when the session ends: stop without charging (default), release (delete), or keep running")
    a("--dlperf-aliyun-endpoint", default=None, metavar="HOST[:PORT]",
      help="the ECS API endpoint (default ecs.REGION.aliyuncs.com; VPC endpoints: ecs-vpc.REGION.aliyuncs.com)")
    a("--dlperf-aliyun-protocol", choices=("https", "http"), default="https")
    a("--dlperf-aliyun-wait", type=positive_seconds, default=600.0, metavar="S",
      help="seconds to wait for the instances to run and for SSH to answer (each; default 600)")
    # -- Slurm (--dlperf-cluster slurm): inside salloc/sbatch the allocation's nodes; otherwise the
    #    harness allocates with salloc --no-shell and cancels the job at the end
    a("--dlperf-slurm-partition", default="", metavar="NAME", help="--dlperf-cluster slurm, when allocating: the partition")
    a("--dlperf-slurm-account", default="", metavar="NAME", help="the account the allocation is charged to")
    a("--dlperf-slurm-time", default="", metavar="TIME",
      help="the allocation's time limit, in Slurm's format (MINUTES, HH:MM:SS, D-HH:MM)")
    a("--dlperf-slurm-gpus-per-node", type=positive_int, default=None, metavar="G",
      help="GPUs per node to allocate (salloc --gpus-per-node)")
    a("--dlperf-slurm-constraint", default="", metavar="FEATURES", help="node features to allocate (salloc --constraint)")
    a("--dlperf-slurm-qos", default="", metavar="QOS")
    a("--dlperf-slurm-salloc-args", default="", metavar="'ARGS'", help="more salloc arguments, as one shell-quoted string")
    a("--dlperf-slurm-wait", type=positive_seconds, default=600.0, metavar="S",
      help="seconds to wait for the allocation to start; then it is cancelled (default 600)")
    a("--dlperf-slurm-workdir", default=None, metavar="DIR",
      help="directory for run directories, used directly when every node sees it (a shared file system; "
           "default <report dir>/slurm); else each node's --dlperf-slurm-node-dir, files sent with sbcast")
    a("--dlperf-slurm-node-dir", default="/tmp", metavar="DIR",
      help="node-local directory for run directories when the work directory is not shared (default /tmp)")
    a("--dlperf-slurm-python", default="python3", metavar="PATH",
      help="Python interpreter on the nodes that runs the launcher and workload (default python3)")
    # -- the baseline gate
    a("--dlperf-update-baselines", action="store_true", default=False,
      help="record the cases that ran and passed as the profile's baseline (other entries are kept). "
           "Alias: --update-baselines")
    a("--dlperf-record-sittings", type=positive_int, default=None, metavar="K",
      help="with --update-baselines: add this session's runs to those the entry holds, keeping the last K "
           "sittings (same machine and software only), so the baseline holds the host's level over several "
           "hours, not one (default 1: replace)")
    a("--dlperf-baseline-profile", type=_profile_name, default=None, metavar="NAME",
      help="gate against this profile's file instead of the detected one (e.g. ecs.ebmgn6v.24xlarge)")
    a("--dlperf-baseline-dir", default=None, metavar="DIR",
      help="the baseline store (default: <rootdir>/baselines)")
    a("--dlperf-tolerance", type=_fraction, default=None, metavar="F",
      help="allowed throughput drop for this run, e.g. 0.05 (default: the profile file's)")
    a("--dlperf-speedup-tolerance", type=_fraction, default=None, metavar="F",
      help="allowed speedup drop for this run (default: the profile file's)")
    a("--dlperf-efficiency-tolerance", type=_fraction, default=None, metavar="F",
      help="allowed scaling-efficiency drop for this run (default: the profile file's)")
    a("--dlperf-baseline-missing", choices=MISSING, default="skip",
      help="a case without a baseline: skip (default, says how to record), fail, or record it")
    a("--dlperf-noisy", choices=NOISY, default="fail",
      help="a case too noisy to judge: fail (default) or warn and pass")
    a("--dlperf-hardware", choices=HARDWARE, default=None,
      help="a case whose baseline was recorded on other hardware (the fingerprints differ) is not "
           "judged: skip it, or fail it (default: fail under CI, i.e. CI or BUILD_NUMBER set; skip otherwise)")


def _names_taken(parser: pytest.Parser) -> set[str]:
    """Option strings already defined by pytest, plugins and the initial conftests."""
    groups = [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", [])]
    return {name for g in groups if g is not None for opt in g.options for name in opt.names()}


def add_short_names(parser: pytest.Parser) -> list[str]:
    """Add the SHORT_NAMES as aliases of their --dlperf-* options (same type, default and choices),
    each only where no plugin or conftest took it (called after the initial conftests were loaded).
    Returns the short names left out."""
    taken, skipped = _names_taken(parser), []
    g = parser.getgroup("dlperf")
    longs = {name: opt for opt in g.options for name in opt.names()}
    for short, long in SHORT_NAMES.items():
        if short in taken:
            skipped.append(short)
            continue
        attrs = {k: v for k, v in OPTION_KWARGS[long].items()
                 if k in ("type", "default", "action", "choices", "metavar")}
        attrs["dest"] = longs[long].dest
        OPTION_KWARGS[short] = attrs
        g.addoption(short, **attrs, help=f"same as {long}")
    return skipped


@dataclass(frozen=True)
class RunOptions:
    """The validated options of a session."""

    cluster: str
    nodes: int | None
    gpus_per_node: int | None
    backend: str  # as given: one engine, or several comma-separated (--backend ddp,horovod)
    models: list[str] | None
    precisions: list[str] | None  # None: the profile's
    batch_size: int | None
    image_size: int | None
    repeats: int | None
    budget: float | None
    order: str  # "rounds" or "case" (ORDERS)
    warmup_iters: int | None
    iters: int | None
    window_seconds: float | None
    dryrun: bool
    report_dir: Path
    timeout: float
    pace_probe: str = "auto"  # "on", "off", or "auto": as the case's baseline was recorded (_pace_mode)
    probe_seconds: float = 1.5  # the hardware probe's length
    reprobe_pause: float = REPROBE_PAUSE  # seconds between the extra hardware probes
    # This session's name for its xdist workers' report parts: a later session reporting into the
    # same directory must not merge an earlier one's parts as its own results.
    session_token: str = ""

    @property
    def backends(self) -> list[str]:
        return list(dict.fromkeys(b.strip() for b in self.backend.split(",") if b.strip()))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["report_dir"] = str(self.report_dir)
        return d


def _xdist(config: pytest.Config) -> bool:
    """Whether pytest-xdist runs this session's tests in workers (whose cases are measured case by case:
    a worker does not know which tests it will be given, so it cannot take them in rounds)."""
    return getattr(config.option, "numprocesses", None) not in (None, 0, "0") and \
        getattr(config.option, "dist", "no") != "no"


def _pace_mode(config: pytest.Config) -> str:
    on, off = config.getoption("dlperf_pace_probe"), config.getoption("dlperf_no_pace_probe")
    if on and off:
        raise pytest.UsageError("--dlperf-pace-probe and --dlperf-no-pace-probe: give one of them (neither: "
                                "probe as the case's baseline was recorded)")
    return "on" if on else "off" if off else "auto"


def from_config(config: pytest.Config) -> RunOptions:
    """Read and validate; a bad value raises pytest.UsageError (exit 4) naming the option."""
    get = config.getoption
    precisions = get("dlperf_precision")
    bad = [p for p in precisions or [] if p not in PRECISIONS]
    if bad:
        raise pytest.UsageError(f"--dlperf-precision: unknown {', '.join(bad)}; allowed: {', '.join(PRECISIONS)}")
    if not [b for b in get("dlperf_backend").split(",") if b.strip()]:
        raise pytest.UsageError("--backend: give an engine (ddp, tf, paddle, horovod, perseus, acspeed) or a "
                                "comma-separated list of them")
    report = get("dlperf_report")
    workerinput = getattr(config, "workerinput", None)
    if workerinput and "dlperf_report_dir" in workerinput:  # an xdist worker: the controller's dir
        report_dir = Path(workerinput["dlperf_report_dir"])
    elif report:
        report_dir = Path(report).expanduser().resolve()
        if report_dir.exists() and not report_dir.is_dir():
            raise pytest.UsageError(f"--dlperf-report: {report_dir} exists and is not a directory")
    else:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        report_dir = Path(config.rootpath) / ".dlperf" / "reports" / stamp
    return RunOptions(
        cluster=get("dlperf_cluster"), nodes=get("dlperf_nodes"), gpus_per_node=get("dlperf_gpus_per_node"),
        backend=get("dlperf_backend"), models=get("dlperf_model"), precisions=list(dict.fromkeys(precisions)) if precisions else None,
        batch_size=get("dlperf_batch_size"), image_size=get("dlperf_image_size"), repeats=get("dlperf_repeats"),
        budget=get("dlperf_budget"), order="case" if workerinput or _xdist(config) else get("dlperf_order"),
        warmup_iters=get("dlperf_warmup_iters"), iters=get("dlperf_iters"),
        window_seconds=get("dlperf_window_seconds"),
        dryrun=get("dlperf_dryrun"),
        report_dir=report_dir, timeout=get("dlperf_timeout"), pace_probe=_pace_mode(config),
        probe_seconds=get("dlperf_probe_seconds"), reprobe_pause=get("dlperf_reprobe_pause"),
        session_token=(workerinput or {}).get("dlperf_session_token") or uuid.uuid4().hex[:12],
    )
