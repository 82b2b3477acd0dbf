"""What every trace reader gives the diff: a rank's profiled steps, each step's operators (self time and
calls), kernels, time inside collectives and, on GPUs, its compute, communication, memory and idle shares.

Self time: an operator's duration less that of the operators nested in it on its thread, so the
operators of a step add up to the step and a slower convolution is not also a slower ``aten::conv2d``
and ``aten::convolution`` above it. The step's own self time (Python and waits between operators on
the training thread) is the row ``(between operators)``."""
from __future__ import annotations

from dataclasses import dataclass, field

BETWEEN = "(between operators)"
COLLECTIVE_PREFIXES = ("gloo:", "nccl:", "mpi:", "c10d::", "record_param_comms")
COMM_KERNEL_MARKS = ("nccl", "all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter",
                     "reducescatter", "broadcast", "alltoall")


class TraceError(ValueError):
    """A trace that cannot be read: says which and why."""


@dataclass
class OpFigure:
    """An operator's (or kernel's) time and calls in one step."""

    seconds: float = 0.0
    count: int = 0


@dataclass
class StepProfile:
    """One profiled step of one rank."""

    seconds: float
    ops: dict[str, OpFigure] = field(default_factory=dict)  # CPU operators, self time
    kernels: dict[str, OpFigure] = field(default_factory=dict)  # GPU kernels and memory copies, device time
    collective: float = 0.0  # seconds of the step inside collective operations (any thread, overlaps once)
    shares: dict[str, float] = field(default_factory=dict)  # GPU: compute, communication, memory, idle


@dataclass
class RankProfile:
    """A rank's profiled steps, read from ``source``."""

    rank: int
    steps: list[StepProfile]
    source: str

    @property
    def on_gpu(self) -> bool:
        return any(s.kernels for s in self.steps)


def is_collective(name: str) -> bool:
    return name.startswith(COLLECTIVE_PREFIXES)


def is_comm_kernel(name: str) -> bool:
    low = name.lower()
    return any(mark in low for mark in COMM_KERNEL_MARKS)
