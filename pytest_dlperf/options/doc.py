"""docs/options.md, rendered from the option registry itself: pytest's own parser after the plugin added its
options, group by group in ``pytest --help`` order, under the hand-written head docs/options.head.md.

The parser comes from a bare ``pytest.Config`` (:func:`_pytest.config.get_config`: pytest's built-in plugins,
then this plugin imported as its entry point names it), not from ``pytest --help``: no conftest, ini file,
``PYTEST_ADDOPTS`` or other installed plugin takes part, so the page is the same wherever it is made, and
the short aliases are all shown (a session adds each only where it is free: ``add_short_names``).
"""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .groups import ALIASES, add_short_names

PLUGIN = "pytest_dlperf.plugin"  # the pytest11 entry point (pyproject.toml)
HEAD = Path(__file__).resolve().parents[2] / "docs" / "options.head.md"  # a source checkout's
COMMAND = "dlperf options -o docs/options.md"
GENERATED = (f"<!-- Made by `{COMMAND}` from the options' registration (their help= strings) and "
             "docs/options.head.md: edit those, not this file. -->")
PREFIX = "pytest-dlperf: "  # the plugin's group descriptions start with it

# Hand-written notes under a group's heading, by group name: where the feature is explained.
GROUP_NOTES: dict[str, str] = {
    "dlperf": "Where the nodes come from, the engines and the models; the sizes each model trains at are the "
              "[profiles'](#profiles-the-default-sizes).",
    "dlperf-data": "Real data and DALI: [data.md](data.md).",
    "dlperf-measure": "The session's budget: [budget.md](budget.md); why the repeats go in rounds: "
                      "[gate-power.md](gate-power.md).",
    "dlperf-pace": "[The pace probe](gate.md#the-hosts-share-the-pace-probe). Give one of the two, or neither.",
    "dlperf-gate": "What they do is in [the gate](gate.md). Each gated metric declared in "
                   "`pytest_dlperf/metrics/catalog.py` has its tolerance option (named "
                   "`--dlperf-<metric>-tolerance` unless its declaration names it) and its "
                   "`@pytest.mark.dlperf` keyword (`<metric>_tolerance=`; throughput's is `tolerance=`): "
                   "[metrics.md](metrics.md). A count (graph breaks, recompilations) has none: one more than "
                   "the reference had fails, whatever the size.",
    "dlperf-ssh": "[SSH](cluster-ssh.md#options); `--dlperf-ssh-*` also reach the instances of "
                  "`--dlperf-cluster aliyun`.",
    "dlperf-aliyun": "[Alibaba Cloud ECS](cluster-aliyun.md#options).",
    "dlperf-slurm": "[Slurm](cluster-slurm.md#options). Inside an allocation (`SLURM_JOB_ID`) the allocation's "
                    "options are not used, and the session says so.",
    "dlperf-ray": "[Ray](cluster-ray.md#options). The harness never starts or stops the Ray cluster.",
    "dlperf-env": "How a side's `pip=` environment is made on every node ([ab.md](ab.md#compare-two-stacks)).",
    "dlperf-ab": "What they do is in [ab.md](ab.md). `--dlperf-candidate` turns A/B on; the others need it.",
    "dlperf-confirm": "[Screen, then confirm](gate.md#screen-then-confirm-side-by-side); its alpha, first look "
                      "and UNDECIDED policy are the A/B options', its tolerance each metric's gate tolerance.",
    "dlperf-explain": "[explain.md](explain.md).",
}


@dataclass(frozen=True)
class OptionDoc:
    """One option as ``pytest --help`` shows it: its invocations (aliases after), default and help."""

    names: tuple[str, ...]
    default: str
    help: str


@dataclass(frozen=True)
class GroupDoc:
    """One of the plugin's option groups, its options in registration order."""

    name: str
    description: str
    options: tuple[OptionDoc, ...]


def plugin_parser() -> pytest.Parser:
    """pytest's parser with the plugin's options and every short alias, from a bare config (module docstring)."""
    from _pytest.config import get_config

    config = get_config()
    config.pluginmanager.import_plugin(PLUGIN)  # its pytest_addoption, and its pytest_plugins' (historic hook)
    parser = config._parser
    add_short_names(parser)  # what the plugin's pytest_load_initial_conftests does: all free here
    return parser


def _argparser(parser: pytest.Parser) -> argparse.ArgumentParser:
    """The argparse parser ``pytest --help`` formats (pytest 9 keeps it; pytest 8 builds it on demand)."""
    build = getattr(parser, "_getparser", None)
    return build() if build is not None else parser.optparser  # type: ignore[attr-defined]


def _default(action: argparse.Action) -> str:
    """The value the option has when not given: ``on``/``off`` for a flag, ``none`` for none."""
    value = action.default
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return "on" if value else "off"
    if value is None or value == "" or value is argparse.SUPPRESS:
        return "none"
    return f"`{value}`"


def _ours(action: argparse.Action) -> bool:
    """The plugin's options are those whose dest is ``dlperf_*`` (aliases share their option's dest)."""
    return action.dest.startswith("dlperf_")


def option_groups(parser: pytest.Parser | None = None) -> list[GroupDoc]:
    """The plugin's groups in ``pytest --help`` order; an alias is shown with its option, not on its own."""
    parser = parser or plugin_parser()
    argparser = _argparser(parser)
    formatter = argparser._get_formatter()
    actions = {s: a for a in argparser._actions for s in a.option_strings}
    aliases = set(ALIASES.values())
    groups = []
    for group in parser._groups:
        options = []
        for opt in group.options:
            action = actions[opt.names()[0]]
            if not _ours(action) or opt.names()[0] in aliases:
                continue
            names = [formatter._format_action_invocation(action)]
            for long in opt.names():
                short = ALIASES.get(long)
                if short in actions and actions[short].dest == action.dest:
                    names.append(formatter._format_action_invocation(actions[short]))
            text = formatter._expand_help(action) if action.help else ""  # %(default)s as --help shows it
            options.append(OptionDoc(tuple(names), _default(action), text))
        if options:
            groups.append(GroupDoc(group.name, _description(group), tuple(options)))
    return groups


def _description(group: Any) -> str:
    """The group's ``--help`` title, less the plugin's prefix (pytest 9 keeps it on the argparse group only)."""
    title = getattr(group, "description", None) or getattr(getattr(group, "_arggroup", None), "title", None)
    return str(title or group.name).removeprefix(PREFIX)


def _cell(text: str) -> str:
    """Text for a table cell: markdown's own characters escaped outside code spans, option names as code."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside code spans
        plain = re.sub(r"([\\*<>])", r"\\\1", parts[i])
        parts[i] = re.sub(r"(?<![\w`-])(--[a-z][a-z0-9-]*[a-z0-9](?:=\S*[^\s.,;:)])?)", r"`\1`", plain)
    return "`".join(parts).replace("|", "\\|")


def _option_cell(names: tuple[str, ...]) -> str:
    """``--long=META`` as code, then its short alias."""
    first, *rest = (f"`{n}`".replace("|", "\\|") for n in names)
    return first + "".join(f" (alias {r})" for r in rest)


def render_groups(groups: list[GroupDoc]) -> str:
    """The per-option reference: one section a group, a table of its options."""
    known = {g.name for g in groups}
    unknown = sorted(set(GROUP_NOTES) - known)
    if unknown:
        raise ValueError(f"GROUP_NOTES names groups the plugin no longer has: {', '.join(unknown)}")
    out: list[str] = []
    for g in groups:
        out += [f"## `{g.name}`: {_cell(g.description)}", ""]
        if g.name in GROUP_NOTES:
            out += [GROUP_NOTES[g.name], ""]
        out += ["| option | default | what it does |", "|---|---|---|"]
        out += [f"| {_option_cell(o.names)} | {o.default} | {_cell(o.help) or '-'} |" for o in g.options]
        out.append("")
    return "\n".join(out)


def render(head: str | None = None, parser: pytest.Parser | None = None) -> str:
    """The whole page: the notice, the head (docs/options.head.md where it is there), the reference."""
    if head is None:
        head = HEAD.read_text() if HEAD.is_file() else "# Options reference\n"
    return f"{GENERATED}\n\n{head.strip()}\n\n{render_groups(option_groups(parser))}".rstrip() + "\n"
