"""A case's model, batch size, precision and image size, from the command line, the log's header and
the log's file name. The header is what the run did: a flag that contradicts it is an error unless
--override-header asks for the flag (then said as a warning), and a file name that contradicts it is
an error (rename the log, or pass the flag); what nothing gives is assumed, and said."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..formats import MODEL_ALIASES, ParsedRun, our_model, same_model
from ..specs import SEQUENCE_MODELS
from .layout import LogFile

PRECISIONS = {"fp32": "fp32", "tf32": "fp32", "fp16": "amp", "amp": "amp", "mixed": "amp", "bf16": "amp"}
FIELDS = ("model", "batch_size", "precision", "image_size")
FLAGS = {"model": "--model", "batch_size": "--batch-size", "precision": "--precision", "image_size": "--image-size"}
FORCE = "--override-header"


@dataclass(frozen=True)
class Given:
    """What the command line says about the cases (None: nothing), and whether it overrides a header."""

    model: str | None = None
    batch_size: int | None = None
    precision: str | None = None
    image_size: int | None = None
    force: bool = False


@dataclass
class Resolved:
    """One log's case fields, and what is to be said of them: flags used over its header
    (``warnings``), values assumed because nothing gave them (``notes``)."""

    values: dict[str, object]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def from_name(name: str) -> dict:
    """``rn50_b128_fp32`` -> model resnet50, batch 128, precision fp32 (what can be read)."""
    out: dict = {}
    for tok in re.split(r"[_\-.]", name.lower()):
        if tok in MODEL_ALIASES and "model" not in out:
            out["model"] = our_model(tok)
        elif tok in PRECISIONS and "precision" not in out:
            out["precision"] = PRECISIONS[tok]
        elif (m := re.fullmatch(r"b(?:s)?(\d{1,6})", tok)) and "batch_size" not in out:
            out["batch_size"] = int(m[1])
    return out


def _same(name: str, a: object, b: object) -> bool:
    return same_model(str(a), str(b)) if name == "model" else a == b


def resolve(log: LogFile, parsed: ParsedRun, given: Given) -> Resolved:
    """The log's fields: the flag, else the header, else the file name; refuses a contradiction (see
    the module's docstring), naming the file, the header's line and the way out."""
    guess = from_name(log.name)
    header = {"model": our_model(parsed.model) if parsed.model else None, "batch_size": parsed.batch_size,
              "precision": parsed.precision, "image_size": parsed.image_size}
    out = Resolved({})
    for name in FIELDS:
        flag, head, named = getattr(given, name), header[name], guess.get(name)
        where = f"line {parsed.header[name]}" if name in parsed.header else "its header"
        what = name.replace("_", " ")
        if flag is not None and head is not None and not _same(name, flag, head):
            if not given.force:
                raise ValueError(f"{log.path}: {FLAGS[name]} {flag} contradicts the log's header ({where}: {what} "
                                 f"{head}): drop {FLAGS[name]}, or pass {FORCE} to use {flag} anyway")
            out.warnings.append(f"{FLAGS[name]} {flag} used over the log's header ({where}: {what} {head}), as "
                                f"{FORCE} asks")
        elif flag is None and head is not None and named is not None and not _same(name, named, head):
            raise ValueError(f"{log.path}: the file name {log.name!r} says {what} {named}, the log's header ({where}) "
                             f"{head}: rename the log, or pass {FLAGS[name]}")
        out.values[name] = next((v for v in (flag, head, named) if v is not None), None)
    if out.values["precision"] is None:
        out.values["precision"] = "fp32"
        out.notes.append("precision fp32 assumed: neither the log, its name nor --precision says")
    if out.values["image_size"] is None and out.values["model"] is not None:
        out.values["image_size"] = 128 if out.values["model"] in SEQUENCE_MODELS else 224
        out.notes.append(f"image size {out.values['image_size']} assumed: the log does not say; --image-size to set it")
    return out
