"""The core's command-line options, one small function and option group per feature, and their
validation into a RunOptions spec. Each cluster kind adds its own options (clusters/*/options.py)."""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from ..datasources import DATA_SOURCES, SOURCES, SYNTHETIC
from ..metrics import DeviceKind, tolerated
from ..specs import COMPILE_MODES, PRECISIONS, CheckpointMode
from .argtypes import choice_or_env, csv, fraction, non_negative_int, non_negative_seconds, positive_int, positive_seconds
from .groups import OptionGroup, add_short_names, value_options

__all__ = ["RunOptions", "add_options", "add_short_names", "from_config", "value_options"]

# Seconds between the extra hardware probes (--dlperf-reprobe-pause): the host's slow spells last seconds.
REPROBE_PAUSE = 2.0
# Launches a recording whose launches fall into modes takes before it is written (--dlperf-confirm).
CONFIRM_LAUNCHES = 3

MISSING = ("skip", "fail", "record")
NOISY = ("fail", "warn")
HARDWARE = ("skip", "fail")
# The order of a session's launches (session.py): a case's repeats back to back let the host's drift
# over minutes fall on one case's launches alike, which the significance test takes for the case's speed.
ORDERS = ("rounds", "case")
DEVICES = ("cpu", "gpu")  # --dlperf-devices
PLOTS = ("on", "off")  # --dlperf-plots
LOCAL_LEASES = ("machine", "session", "core")  # --dlperf-local-lease (clusters/local_leases.py)
LOCAL_STARTS = ("direct", "torchrun")  # --dlperf-local-start (clusters/base.py RankStart)
DEFAULT_ORDER = "rounds"


def _profile_name(text: str) -> str:
    from ..baselines.profile import check_profile_name

    try:
        return check_profile_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_options(parser: pytest.Parser) -> None:
    """The core's options, feature by feature, each in its group; dests are ``dlperf_*`` (never a conftest's)."""
    add_workload_options(parser)
    add_data_options(parser)
    add_measurement_options(parser)
    add_checkpoint_options(parser)
    add_pace_probe_options(parser)
    add_report_options(parser)
    add_gate_options(parser)


def add_workload_options(parser: pytest.Parser) -> None:
    """What runs, where: the cluster kind, the node ladder, the engines and the models."""
    a = OptionGroup(parser, "dlperf", "distributed training benchmarks (pytest-dlperf)")
    a("--dlperf-cluster", alias="--cluster", default="local", metavar="KIND",
      help="where the nodes come from: local (processes on this machine, default), "
           "ssh (--dlperf-hosts/--dlperf-hostfile), aliyun (ECS instances), slurm (an allocation's "
           "nodes, srun), ray (a running Ray cluster's nodes), or a kind an installed plugin adds (an unknown "
           "kind is a usage error listing those installed)")
    a("--dlperf-nodes", alias="--nodes", type=positive_int, default=None, metavar="N",
      help="largest number of nodes in the ladder (local default 2; ssh: the hosts given; ray: the Ray cluster's "
           "nodes chosen)")
    a("--dlperf-local-lease", choices=LOCAL_LEASES, default=None,
      help="local cluster: machine: every session on this machine takes turns, one measurement at a time; "
           "session: only this session's own xdist workers do; core: each launch holds one free core per node, so "
           "one-node launches of two sessions run at once on two cores. session and core are for sessions that "
           "judge no speed (a functional check; the project's own tests). Default: DLPERF_LOCAL_LEASE, else machine")
    a("--dlperf-local-start", choices=LOCAL_STARTS, default="direct",
      help="local cluster: how the torch engines' ranks start. direct (default): a small starter "
           "(node/workloads/rankstart.py) gives each rank torchrun's environment without torchrun's agent, whose "
           "own import of torch and exit cost about 3 s a launch on a CPU node; torchrun: under torchrun's agent, as "
           "on every other cluster kind. The dry-run shows which; time to first step includes the starter's start "
           "(docs/cluster-local.md)")
    a("--dlperf-gpus-per-node", type=positive_int, default=None, metavar="G",
      help="devices per node (GPUs; on a CPU node, worker processes). Default: GPUs found, else 1")
    a("--dlperf-devices", choices=DEVICES, default=None,
      help="whether the nodes train on GPUs or CPUs, which sets the case matrix (precisions, sizes) before "
           "any node is reached. Default: as the cluster kind knows it from its options: local: the GPUs "
           "found here; slurm: --dlperf-slurm-gpus-per-node (in an allocation, its SLURM_GPUS_PER_NODE); ssh, "
           "aliyun: cpu (GPU nodes: give gpu); ray: cpu with --dlperf-nodes, else node 0's. Nodes that turn out "
           "otherwise stop the session before its first case runs, naming the option to give")
    a("--dlperf-backend", alias="--backend", default="ddp", metavar="NAME",
      help="launch backend, or several comma-separated (each runs its matrix; the summary compares "
           "them): ddp (PyTorch DDP, torchrun), fsdp (PyTorch FSDP2 fully_shard, torchrun), tf (MultiWorkerMirroredStrategy), paddle, "
           "horovod (horovodrun on node 0), perseus (AIACC-Training, perseusrun), acspeed (DDP with "
           "ACSpeed)")
    a("--dlperf-horovod-controller", choices=("gloo", "mpi"), default="gloo",
      help="horovod, perseus: how the ranks are started and rendezvous (gloo, default; mpi: mpirun, "
           "OpenMPI on every node)")
    a("--dlperf-model", type=csv, default=None, metavar="A,B",
      help="models to train, comma-separated (default: every model of the backend; ddp: resnet50, vgg16, "
           "bert-base, arcface, llama)")
    a("--dlperf-precision", type=csv, default=None, metavar="P,Q",
      help=f"precisions, comma-separated from {', '.join(PRECISIONS)} (default: the profile's: "
           "fp32 on CPU nodes, both on GPUs, the decoder's amp only). amp: bf16 autocast on CPU, fp16 autocast and "
           "GradScaler on CUDA")
    a("--dlperf-batch-size", type=positive_int, default=None, metavar="B",
      help="samples per device per step (default: the hardware profile's, per model)")
    a("--dlperf-image-size", type=positive_int, default=None, metavar="PX",
      help="image side in pixels (default: the hardware profile's, per model)")
    a("--dlperf-compile", type=csv, default=None, metavar="MODE[,MODE]",
      help=f"how the torch engines (ddp, fsdp) train each model, comma-separated from {', '.join(COMPILE_MODES)} "
           "(torch.compile; a compiled case's id ends in -compiled-<topology>, so -k compile selects those). Engines "
           "without compiled training (acspeed, horovod, tf, paddle) train eager. Default: every case eager, and "
           "compiled where the profile says: the decoder at 1n1g")
    a("--dlperf-compile-cache", default=None, metavar="DIR",
      help="a compiled case's inductor caches in DIR on every node, shared by its launches and kept for later "
           "sessions (compile time is then measured only where DIR was empty). Default: a compiled case's first "
           "--dlperf-cold-launches launches compile into an empty cache of their own, and the later ones start "
           "from the first's")
    a("--dlperf-cold-launches", type=positive_int, default=3, metavar="N",
      help="a compiled case's launches that compile cold (from an empty cache), without --dlperf-compile-cache: "
           "its compile time, time to first step and peak memory are taken from them; its later launches start "
           "from the first's cache and measure the same compiled program's window in seconds, not a compile's "
           "minute (default: %(default)s, the fewest a rank test against as many recorded ones can call)")


def add_data_options(parser: pytest.Parser) -> None:
    """What the cases train on: synthetic batches, a real dataset through the engine's loader, or DALI."""
    a = OptionGroup(parser, "dlperf-data", "pytest-dlperf: the training data", after="dlperf")
    a("--dlperf-data", type=csv, default=None, metavar="SRC[,SRC]",
      help=f"what each case trains on, comma-separated from {', '.join(DATA_SOURCES)}: "
           + "; ".join(f"{s.name}: {s.said}" for s in SOURCES.values()))
    a("--dlperf-data-dir", default=None, metavar="DIR",
      help="the real dataset, at this absolute path on every node: ImageNet as class folders of JPEGs, TFRecord "
           "shards (train-NNNNN-of-MMMMM), a token file; `dlperf data make imagenet DIR` writes one")
    a("--dlperf-data-make", action="store_true", default=False,
      help="before the first real-data case, make --dlperf-data-dir on every node that lacks it (`dlperf data make "
           "imagenet DIR`, run there through the cluster's own channel: the same deterministic dataset on each)")
    a("--dlperf-drop-caches", action="store_true", default=False,
      help="real data: empty each node's page cache before each launch reads (root; sync, then "
           "/proc/sys/vm/drop_caches), so that its first epoch reads the disk; results.json says whether it could")
    a("--dlperf-data-workers", type=non_negative_int, default=None, metavar="N",
      help="loader worker processes per rank (tf: autotuned parallelism when above 0; dali: the pipeline's "
           "threads; default: the node's cores over its ranks, 1 to 8; 0: load in the training process)")


def add_measurement_options(parser: pytest.Parser) -> None:
    """How a case is measured: its repeats, the session's budget and order, the window, the timeout."""
    a = OptionGroup(parser, "dlperf-measure", "pytest-dlperf: how it is measured", after="dlperf")
    a("--dlperf-repeats", type=positive_int, default=None, metavar="R",
      help="separate runs per case; mean and median are taken over them (default: CPU 3, 8 when recording; GPU "
           "3, up to 5 where the first 3 spread beyond CV 0.5%%, 5 when recording)")
    a("--dlperf-budget", type=non_negative_seconds, default=None, metavar="S",
      help="seconds of measuring for the session: a case takes its last repeats only while the cases "
           "still to run fit (default: the profile's, 330 on CPU nodes, 600 on GPUs; off with an explicit "
           "--dlperf-repeats or --update-baselines; 0: none); the summary and results.json name every case that ran "
           "fewer")
    a("--dlperf-order", choices=ORDERS, default=DEFAULT_ORDER,
      help="rounds: every case of the session launches once per round, so a case's repeats fall minutes "
           "apart and the host's slow spells spread over all cases (asv's interleaved rounds); case: a "
           "case's repeats back to back (default: %(default)s; under xdist, case by case)")
    a("--dlperf-warmup-iters", type=non_negative_int, default=None, metavar="W",
      help="steps run before the measured window: the profile's go on (CPU up to 4, GPU up to 20) until two "
           "steps in a row agree within 10%%; given here, exactly W (default: CPU 2..4, GPU 5..20)")
    a("--dlperf-iters", type=positive_int, default=None, metavar="I",
      help="steps in the measured window (exactly, unless --dlperf-window-seconds is given; default: CPU 3, "
           "GPU 10)")
    a("--dlperf-window-seconds", type=non_negative_seconds, default=None, metavar="S",
      help="size each measured window to about this many seconds at the warm-up's pace, "
           "--dlperf-iters steps at least, 40 on CPU and 500 on GPUs at most (default: the profile's, 1.5 on CPU, "
           "5 on GPUs, 0 when --dlperf-iters is given; 0: fixed --dlperf-iters)")
    a("--dlperf-timeout", type=positive_seconds, default=900.0, metavar="S",
      help="seconds one run may take before every process is killed (default 900)")


def add_checkpoint_options(parser: pytest.Parser) -> None:
    """Whether each launch saves and loads a checkpoint after its window, timed (metrics checkpoint_save/_load)."""
    a = OptionGroup(parser, "dlperf-checkpoint", "pytest-dlperf: the checkpoint after the window", after="dlperf-measure")
    a("--dlperf-checkpoint", choices=tuple(c.value for c in CheckpointMode), default=CheckpointMode.AUTO.value,
      help="after a launch's window, the model's and optimizer's state saved and loaded back in the engine's own way "
           "(torch DCP; torch.save on rank 0 under Horovod; tf.train.Checkpoint; paddle.save), each timed on every rank "
           "and gated, then removed. auto (default): a case's first launch does, and its later ones where that took "
           "at most 10%% of the launch; on: every launch; off: none")
    a("--dlperf-checkpoint-dir", default=None, metavar="DIR",
      help="save the checkpoints under DIR (an absolute path every node reaches, your shared filesystem), a "
           "directory of each launch's own; default: the launch's run directory on node 0, which a multi-node case "
           "uses only where the nodes share a filesystem (the local cluster's do)")


def add_pace_probe_options(parser: pytest.Parser) -> None:
    """Whether the pace probe runs beside each CPU launch (the gate then judges at the baseline's pace)."""
    a = OptionGroup(parser, "dlperf-pace", "pytest-dlperf: the pace probe", after="dlperf-measure")
    a("--dlperf-pace-probe", action="store_true", default=False,
      help="CPU nodes: run the pace probe (node/paceprobe.py, an 8 MiB copy every 0.1 s on each node's "
           "launch core; about 3%% of a launch's throughput) beside every launch, and judge throughputs at "
           "the baseline's pace where both sides were probed (docs/gate.md, \"The host's share: the pace probe\"). "
           "Default: probe when "
           "recording, and when the case's baseline was recorded with the probe or there is none")
    a("--dlperf-no-pace-probe", action="store_true", default=False,
      help="never run the pace probe: throughputs are judged as measured")


def add_report_options(parser: pytest.Parser) -> None:
    """Where the session reports, and the dry-run that only prints what it would launch."""
    a = OptionGroup(parser, "dlperf-reports", "pytest-dlperf: dry-run and reports", after="dlperf-pace")
    a("--dlperf-dryrun", action="store_true", default=False,
      help="print the exact per-node commands of every case; train nothing")
    a("--dlperf-report", default=None, metavar="DIR",
      help="directory for results.json and run logs (default .dlperf/reports/<time>)")
    a("--dlperf-plots", choices=PLOTS, default="on",
      help="off: draw no PNG plots (results.json, summary.md and benchmark.json as ever; `dlperf report "
           "RESULTS.json` draws them later), for sessions nobody looks at the plots of (default %(default)s)")
    a("--dlperf-launch-log", default=None, metavar="FILE",
      help="append one JSON line per launch to FILE (case, engine and its frameworks, cluster, nodes, seconds, "
           "whether it ran), across sessions: what a CI job's launches cost. Default: DLPERF_LAUNCH_LOG, else none")


def add_gate_options(parser: pytest.Parser) -> None:
    """The baseline gate: recording, the baseline store, tolerances and what an unjudgeable case does."""
    a = OptionGroup(parser, "dlperf-gate", "pytest-dlperf: the baseline gate", after="dlperf-reports")
    a("--dlperf-update-baselines", alias="--update-baselines", action="store_true", default=False,
      help="record the cases that ran and passed as the profile's baseline, with this machine's fingerprints "
           "(other entries are kept)")
    a("--dlperf-record-sittings", type=positive_int, default=None, metavar="K",
      help="with --update-baselines: add this session's runs to those the entry holds, keeping the last K "
           "sittings (same machine and software only: refused, nothing written, otherwise), so the baseline "
           "holds the host's level over several hours, not one (default 1: replace)")
    a("--dlperf-baseline-profile", type=_profile_name, default=None, metavar="NAME",
      help="gate against this profile's file instead of the detected one (e.g. ecs.ebmgn6v.24xlarge)")
    a("--dlperf-baseline-dir", default=None, metavar="DIR",
      help="the baseline store (default: <rootdir>/baselines)")
    for m in tolerated():  # one per gated metric with a tolerance, as declared (metrics/catalog.py)
        where = ("" if m.gated_on == frozenset(DeviceKind) else
                 f"; judged on {' and '.join(sorted(k.value.upper() for k in m.gated_on))} nodes by default, "
                 "elsewhere where this is given")
        a(m.option_name, type=fraction, default=None, metavar="F",
          help=f"allowed {m.title} {m.direction.change_word} for this run, e.g. 0.05 (default: the profile file's: "
               f"{m.default_tolerance(DeviceKind.CPU):g} on CPUs, {m.default_tolerance(DeviceKind.GPU):g} on GPUs"
               f"{where})")
    a("--dlperf-confirm", type=non_negative_int, default=None, metavar="N",
      help="with --update-baselines: a case whose launches fall into separate modes (or spread beyond the "
           f"gate's bound) takes N more before it is recorded (default {CONFIRM_LAUNCHES}, or DLPERF_CONFIRM; 0: "
           "none). A gated case that fails its stored baseline is confirmed side by side instead "
           "(--dlperf-confirm-pairs)")
    a("--dlperf-baseline-missing", choices=MISSING, default="skip",
      help="a case without a baseline: skip (default, says how to record), fail, or record it")
    a("--dlperf-noisy", choices=NOISY, default="fail",
      help="a case too noisy to judge: fail (default) or warn and pass")
    a("--dlperf-hardware", choices=HARDWARE, default=None,
      help="a case whose baseline was recorded on other hardware (an identity fact of the fingerprints "
           "differs: HARDWARE), or whose failure is the host's (HOST: nothing recorded differs), is not "
           "judged: skip it, or fail it (default: fail under CI, i.e. CI or BUILD_NUMBER set; skip otherwise). The "
           "same machine at another speed is judged")
    a("--dlperf-probe-seconds", type=positive_seconds, default=1.5, metavar="S",
      help="length of the hardware probe run on every node before a case's first launch (default %(default)s)")
    a("--dlperf-reprobe-pause", type=non_negative_seconds, default=REPROBE_PAUSE, metavar="S",
      help="seconds between the three extra probes a recording takes before it keeps its fingerprints, each "
           "node's best (default %(default)s: the host's slow spells last seconds)")


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
    devices: str | None = None  # --dlperf-devices: "gpu" or "cpu" (DEVICES); None: the cluster kind's answer
    compile: list[str] | None = None  # --dlperf-compile: "eager", "compiled" (COMPILE_MODES); None: the profile's
    compile_cache: str = ""  # --dlperf-compile-cache: a directory on every node; "": an empty cache per launch
    cold_launches: int = 3  # --dlperf-cold-launches: a compiled case's launches that compile cold
    data: tuple[str, ...] = (SYNTHETIC,)  # --dlperf-data: what the cases train on (DATA_SOURCES)
    data_dir: str = ""  # --dlperf-data-dir: the dataset's absolute path on every node ("": none given)
    data_workers: int | None = None  # --dlperf-data-workers (None: from each node's cores and devices)
    data_make: bool = False  # --dlperf-data-make: build the dataset on the nodes that lack it
    drop_caches: bool = False  # --dlperf-drop-caches: empty the page cache before each real-data launch reads
    checkpoint: str = CheckpointMode.AUTO.value  # --dlperf-checkpoint (CheckpointMode; measure/checkpoints.py)
    checkpoint_dir: str = ""  # --dlperf-checkpoint-dir: an absolute path every node reaches ("": the run's own)
    plots: bool = True  # --dlperf-plots: draw the report's PNG plots
    local_lease: str = "machine"  # --dlperf-local-lease: who takes turns on the local cluster (LOCAL_LEASES)
    local_start: str = "direct"  # --dlperf-local-start: how the local cluster starts torch ranks (LOCAL_STARTS)
    launch_log: Path | None = None  # --dlperf-launch-log: a JSON line per launch appended there (measure/launchlog.py)
    # This session's name for its xdist workers' report parts: a later session reporting into the
    # same directory must not merge an earlier one's parts as its own results.
    session_token: str = ""

    @property
    def backends(self) -> list[str]:
        return list(dict.fromkeys(b.strip() for b in self.backend.split(",") if b.strip()))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["report_dir"] = str(self.report_dir)
        d["launch_log"] = str(self.launch_log) if self.launch_log else None
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


def _local_lease(given: str | None) -> str:
    """--dlperf-local-lease, else DLPERF_LOCAL_LEASE (a CI image's own default), else machine."""
    return choice_or_env(given, "DLPERF_LOCAL_LEASE", LOCAL_LEASES, "machine")


def _launch_log(given: str | None) -> Path | None:
    """--dlperf-launch-log, else DLPERF_LAUNCH_LOG, else none; its directory must exist (checked before any launch)."""
    text = given or os.environ.get("DLPERF_LAUNCH_LOG", "").strip()
    if not text:
        return None
    path = Path(text).expanduser().resolve()
    where = "--dlperf-launch-log" if given else "DLPERF_LAUNCH_LOG"
    if path.is_dir():
        raise pytest.UsageError(f"{where} {text}: is a directory; give a file in it, e.g. {path / 'launches.jsonl'}")
    if not path.parent.is_dir():
        raise pytest.UsageError(f"{where} {text}: no such directory {path.parent}; make it first, or give a file in "
                                "an existing directory")
    return path


def _data(sources: list[str] | None, directory: str | None) -> tuple[tuple[str, ...], str]:
    """--dlperf-data and --dlperf-data-dir, checked: known sources, and a dataset for a real one."""
    data = tuple(dict.fromkeys(sources or [SYNTHETIC]))
    bad = [d for d in data if d not in DATA_SOURCES]
    if bad:
        raise pytest.UsageError(f"--dlperf-data: unknown {', '.join(bad)}; allowed: {', '.join(DATA_SOURCES)}")
    where = str(Path(directory).expanduser()) if directory else ""  # a path on every node: not resolved here
    if where and not Path(where).is_absolute():
        raise pytest.UsageError(f"--dlperf-data-dir {where}: give an absolute path (the dataset's path on every node, "
                                f"e.g. --dlperf-data-dir={Path(where).resolve()})")
    if any(d != SYNTHETIC for d in data) and not where:
        raise pytest.UsageError(f"--dlperf-data {','.join(data)}: give the dataset with --dlperf-data-dir DIR; make "
                                "one with `dlperf data make imagenet DIR`, or with --dlperf-data-make on every node that lacks it")
    return data, where


def from_config(config: pytest.Config) -> RunOptions:
    """Read and validate; a bad value raises pytest.UsageError (exit 4) naming the option."""
    get = config.getoption
    precisions = get("dlperf_precision")
    bad = [p for p in precisions or [] if p not in PRECISIONS]
    if bad:
        raise pytest.UsageError(f"--dlperf-precision: unknown {', '.join(bad)}; allowed: {', '.join(PRECISIONS)}")
    modes = get("dlperf_compile")
    bad = [m for m in modes or [] if m not in COMPILE_MODES]
    if bad:
        raise pytest.UsageError(f"--dlperf-compile: unknown {', '.join(bad)}; allowed: "
                                f"{', '.join(COMPILE_MODES)}")
    cache = str(Path(get("dlperf_compile_cache")).expanduser()) if get("dlperf_compile_cache") else ""
    if cache and not Path(cache).is_absolute():
        raise pytest.UsageError(f"--dlperf-compile-cache {cache}: give an absolute path (a directory on every node, "
                                f"e.g. --dlperf-compile-cache={Path(cache).resolve()})")
    data, data_dir = _data(get("dlperf_data"), get("dlperf_data_dir"))
    checkpoint_dir = str(Path(get("dlperf_checkpoint_dir")).expanduser()) if get("dlperf_checkpoint_dir") else ""
    if checkpoint_dir and not Path(checkpoint_dir).is_absolute():
        raise pytest.UsageError(f"--dlperf-checkpoint-dir {checkpoint_dir}: give an absolute path (a directory every "
                                f"node reaches, e.g. --dlperf-checkpoint-dir={Path(checkpoint_dir).resolve()})")
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
        devices=get("dlperf_devices"),
        compile=list(dict.fromkeys(modes)) if modes else None, compile_cache=cache,
        cold_launches=get("dlperf_cold_launches"),
        data=data, data_dir=data_dir, data_workers=get("dlperf_data_workers"), data_make=get("dlperf_data_make"),
        drop_caches=get("dlperf_drop_caches"), checkpoint=get("dlperf_checkpoint"),
        checkpoint_dir=checkpoint_dir, plots=get("dlperf_plots") == "on",
        local_lease=_local_lease(get("dlperf_local_lease")), local_start=get("dlperf_local_start"),
        launch_log=_launch_log(get("dlperf_launch_log")),
        session_token=(workerinput or {}).get("dlperf_session_token") or uuid.uuid4().hex[:12],
    )
