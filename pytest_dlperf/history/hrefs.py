"""Where each page of the site lives, relative to its top (one file per case, model, run, A/B run)."""
from __future__ import annotations

from .model import slug
from .runs import Run

__all__ = ["ab_href", "case_href", "model_href", "run_href"]


def case_href(key: str) -> str:
    return f"cases/{slug(key)}.html"


def run_href(run: Run) -> str:
    return f"runs/{slug(run.id)}.html"


def model_href(fam: str) -> str:
    return f"models/{slug(fam)}.html"


def ab_href(run: Run) -> str:
    return f"ab/{slug(run.id)}.html"
