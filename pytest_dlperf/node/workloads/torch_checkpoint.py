"""How the torch workload checkpoints, per engine (``checkpoints.Checkpointer``; node-side, copied beside
``torch_ddp.py``): DDP, ACSpeed and FSDP through torch.distributed.checkpoint (DCP), every rank writing its
part, as torchtitan does; Horovod and Perseus as Horovod's docs do, ``torch.save`` on rank 0 and, on loading,
``torch.load`` there and the state broadcast to every rank. Imports nothing from the harness."""
from __future__ import annotations

import os

import torch
import torch.nn as nn


class DCPCheckpoint:
    """The model's and optimizer's state dicts (``get_state_dict``: DDP's prefix and FSDP's shards handled) saved
    with ``dcp.save`` and loaded with ``dcp.load`` and ``set_state_dict``."""

    format = "torch.distributed.checkpoint"

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        self.model, self.optimizer = model, optimizer

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        """What a failed save or load raises besides Exception: DCP's CheckpointException, a BaseException."""
        from torch.distributed.checkpoint.api import CheckpointException

        return (CheckpointException,)

    def _state(self) -> dict:
        from torch.distributed.checkpoint.state_dict import get_state_dict

        model, optim = get_state_dict(self.model, self.optimizer)
        return {"model": model, "optim": optim}

    def save(self, path: str) -> None:
        import torch.distributed.checkpoint as dcp

        dcp.save(self._state(), checkpoint_id=path)

    def load(self, path: str) -> None:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_state_dict

        state = self._state()
        dcp.load(state, checkpoint_id=path)
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


class RankZeroCheckpoint:
    """Horovod's way: rank 0 writes ``checkpoint.pt`` (``torch.save``); loading, rank 0 reads it and Horovod
    broadcasts the parameters and the optimizer's state to the others."""

    format = "torch.save"

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, hvd, rank: int) -> None:  # noqa: ANN001
        self.model, self.optimizer, self.hvd, self.rank = model, optimizer, hvd, rank

    def save(self, path: str) -> None:
        if self.rank == 0:
            os.makedirs(path, exist_ok=True)
            torch.save({"model": self.model.state_dict(), "optim": self.optimizer.state_dict()},
                       os.path.join(path, "checkpoint.pt"))

    def load(self, path: str) -> None:
        if self.rank == 0:
            state = torch.load(os.path.join(path, "checkpoint.pt"))
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optim"])
        self.hvd.broadcast_parameters(self.model.state_dict(), root_rank=0)
        self.hvd.broadcast_optimizer_state(self.optimizer, root_rank=0)


def checkpointer(comm, model: nn.Module, optimizer: torch.optim.Optimizer):  # noqa: ANN001, ANN201 - torch_comm's
    """The engine's way to checkpoint the wrapped ``model`` and its ``optimizer``."""
    hvd = getattr(comm, "hvd", None)
    if hvd is not None:
        return RankZeroCheckpoint(model, optimizer, hvd, comm.rank)
    return DCPCheckpoint(model, optimizer)
