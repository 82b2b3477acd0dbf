"""Slurm's client commands as argument lists (shown by the dry-run), and one way to run them.

Everything the Slurm cluster does goes through ``salloc``, ``srun``, ``sbcast``, ``squeue``,
``scontrol`` and ``scancel`` on this machine (a login node, or a node of the allocation), so
Slurm accounts for every process and can kill it; nothing reaches a node another way.
"""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


class SlurmError(RuntimeError):
    """A Slurm command failed or Slurm said something unexpected; the message says which and why."""


STEP_PREFIX = "dlperf"  # every step the harness starts is named dlperf-<what>, so it can be found


@dataclass(frozen=True)
class AllocationSpec:
    """What to ask ``salloc`` for when the session is not inside an allocation."""

    nodes: int
    partition: str = ""
    account: str = ""
    time: str = ""  # Slurm's time format: MINUTES, HH:MM:SS, D-HH:MM
    gpus_per_node: int | None = None
    constraint: str = ""
    qos: str = ""
    extra: tuple[str, ...] = ()  # more salloc arguments, as given
    name: str = "dlperf"

    def salloc_argv(self) -> list[str]:
        """``salloc --no-shell``: allocate and return; the harness runs steps in it and cancels it."""
        # whole nodes: a benchmark that shares its nodes' cores with other jobs measures them too
        argv = ["salloc", "--no-shell", f"--nodes={self.nodes}", "--exclusive", f"--job-name={self.name}"]
        for flag, value in (("--partition", self.partition), ("--account", self.account),
                            ("--time", self.time), ("--constraint", self.constraint), ("--qos", self.qos)):
            if value:
                argv.append(f"{flag}={value}")
        if self.gpus_per_node:
            argv.append(f"--gpus-per-node={self.gpus_per_node}")
        return argv + list(self.extra)


@dataclass(frozen=True)
class StepSpec:
    """One job step on one node (or on several for engines that want one srun across nodes)."""

    job_id: str
    nodes: Sequence[str]
    argv: Sequence[str]
    name: str = STEP_PREFIX
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    gres: str = ""  # e.g. gpu:8: the node's GPUs for this step ("" on CPU nodes)

    def srun_argv(self) -> list[str]:
        """``srun --jobid J --overlap -N n -n n -w NODES``: one task per node, sharing the job's CPUs
        with the other steps (--overlap), killed together when one task fails."""
        n = len(self.nodes)
        argv = ["srun", f"--jobid={self.job_id}", "--overlap", f"--nodes={n}", f"--ntasks={n}",
                "--ntasks-per-node=1", f"--nodelist={','.join(self.nodes)}", f"--job-name={self.name}",
                "--kill-on-bad-exit=1", "--quiet", "--export=ALL"]
        if self.gres:
            argv.append(f"--gres={self.gres}")
        if self.cwd:
            argv.append(f"--chdir={self.cwd}")
        if self.env:  # through env(1): srun's own --export splits values at commas
            argv += ["env"] + [f"{k}={v}" for k, v in sorted(self.env.items())]
        return argv + list(self.argv)


def which(tool: str) -> str:
    """The path of a Slurm client command, or SlurmError saying how to get it."""
    path = shutil.which(tool)
    if path is None:
        raise SlurmError(f"{tool} not found on PATH: run pytest where Slurm's client commands are installed "
                         "(a login node, or inside salloc/sbatch), or install them (Debian: apt-get install "
                         "slurm-client)")
    return path


def run(argv: Sequence[str], timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess:
    """Run a Slurm command to completion; SlurmError names it with its stderr when it fails."""
    full = [which(argv[0]), *argv[1:]]
    try:
        done = subprocess.run(full, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(argv[:3])} ... did not return within {timeout:g}s") from None
    if check and done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip() or done.stdout.decode(errors="replace").strip()
        raise SlurmError(f"{' '.join(argv[:4])} ... failed (exit {done.returncode}): {err[-1500:]}")
    return done


def text(argv: Sequence[str], timeout: float = 60.0) -> str:
    """A Slurm command's standard output as text (SlurmError when it fails)."""
    return run(argv, timeout=timeout).stdout.decode(errors="replace")


def hostnames(nodelist: str) -> list[str]:
    """Slurm's compressed node list (``n[1-3],gpu7``) expanded, in Slurm's order."""
    return text(["scontrol", "show", "hostnames", nodelist]).split()


def node_info(name: str) -> dict[str, str]:
    """``scontrol show node NAME`` as key -> value (NodeAddr, State, Gres, AvailableFeatures, Reason, ...)."""
    out = text(["scontrol", "--oneliner", "show", "node", name])
    info: dict[str, str] = {}
    key = None
    for word in out.split():
        if "=" in word:
            key, _, value = word.partition("=")
            info[key] = value
        elif key is not None:  # a value with spaces (Reason=Not responding [root@...])
            info[key] += " " + word
    return info


def job_state(job_id: str) -> tuple[str, str] | None:
    """(state, reason) of a job as squeue shows it, or None when squeue no longer lists it."""
    done = run(["squeue", "--noheader", f"--jobs={job_id}", "--format=%T|%r"], check=False)
    line = done.stdout.decode(errors="replace").strip()
    if done.returncode != 0 or not line:
        return None
    state, _, reason = line.splitlines()[0].partition("|")
    return state, reason


def job_nodelist(job_id: str) -> str:
    """The job's compressed node list as squeue shows it ("" when squeue no longer lists the job)."""
    done = run(["squeue", "--noheader", f"--jobs={job_id}", "--format=%N"], check=False)
    return done.stdout.decode(errors="replace").strip() if done.returncode == 0 else ""


def steps(job_id: str, prefix: str = STEP_PREFIX) -> list[str]:
    """The job's running steps whose name starts with ``prefix`` (``J.S`` ids)."""
    done = run(["squeue", "--noheader", "--steps", f"--jobs={job_id}", "--format=%i|%j"], check=False)
    out = []
    for line in done.stdout.decode(errors="replace").splitlines():
        step, _, name = line.strip().partition("|")
        if step and name.startswith(prefix):
            out.append(step)
    return out
