"""A library with one operator family slowed, for benchmarks/explain.py's second environment: once torch is
imported in a Python of that environment, every ``scaled_dot_product_attention`` (each attention block of the
decoder) also computes ``REPEAT`` products of its queries and keys (``torch.matmul``, kept in the graph at
zero weight, so its backward runs too). The project knows nothing of it: the candidate side is just another
interpreter (``python=``). Loaded by a .pth file at start-up."""
from __future__ import annotations

from dlperf_afterimport import install  # copied beside this file

REPEAT = 6  # make_env.sh --extra-matmul K writes another into the environment's copy


def _extra_matmul(torch) -> None:  # noqa: ANN001
    attention = torch.nn.functional.scaled_dot_product_attention

    def slower(q, k, v, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        out = attention(q, k, v, *args, **kwargs)
        extra = 0
        for _ in range(REPEAT):
            extra = extra + torch.matmul(torch.matmul(q, k.transpose(-2, -1)), v)
        return out + 0.0 * extra

    torch.nn.functional.scaled_dot_product_attention = slower


install("torch", _extra_matmul)
