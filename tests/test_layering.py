"""The package's architecture, checked: the import-linter contracts of pyproject.toml hold (the layers,
node/ importing nothing of the harness, the statistics importing no I/O), every module is in a layer,
every module imports alone in a fresh interpreter, and docs/layout.md names exactly the tree's files."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_dlperf"
WORKLOADS = PACKAGE / "node" / "workloads"  # scripts copied to the nodes: they import their siblings by name


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_import_contracts_hold():
    r = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                        "sys.exit(lint_imports_command())"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in r.stdout, r.stdout


def test_every_top_level_module_is_in_a_layer_and_the_node_contract_names_every_other():
    """A module left out of the layers would be free to import anything: each one is placed, a package whole
    or (where its modules sit at different layers: options/, results/, software/) module by module."""
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    placed = {m.strip().removeprefix("pytest_dlperf.") for layer in layers for m in layer.split("|")}
    split = {m.split(".")[0] for m in placed if "." in m}
    assert not split & placed, f"placed whole and module by module: {sorted(split & placed)}"
    assert {m.split(".")[0] for m in placed} == tops, (
        f"not in a layer: {sorted(tops - {m.split('.')[0] for m in placed})}; no such module: "
        f"{sorted({m.split('.')[0] for m in placed} - tops)}")
    for package in sorted(split):
        modules = {f"{package}.{p.stem}" for p in (PACKAGE / package).glob("*.py") if p.stem != "__init__"}
        named = {m for m in placed if m.startswith(f"{package}.")}
        assert named == modules, f"{package}/: not in a layer: {sorted(modules - named)}; no such module: {sorted(named - modules)}"
        assert (PACKAGE / package / "__init__.py").read_text().strip().endswith('"""'), (
            f"{package}/__init__.py imports: its modules sit at different layers, it must hold only its docstring")
    node = next(c for c in _contracts() if c.get("source_modules") == ["pytest_dlperf.node"])
    assert {m.removeprefix("pytest_dlperf.") for m in node["forbidden_modules"]} == tops - {"node"}


def _workloads(copied: Path) -> list[tuple[str, str]]:
    """(name, code importing it alone) for each node-side workload, as its node imports it: by name, from a
    copy of its folder (tf_mwms.py makes its private temporary folder beside itself)."""
    return [(p.stem, f"import sys; sys.path.insert(0, {str(copied)!r}); import {p.stem}")
            for p in sorted(WORKLOADS.glob("*.py"))]


def _package_modules() -> list[str]:
    """The harness's modules by name (the workloads aside: they run on nodes and import by file name)."""
    return [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            for p in sorted(PACKAGE.rglob("*.py")) if WORKLOADS not in p.parents]


# One interpreter imports every harness module once (so the third-party libraries they use stay loaded), drops
# the harness's own modules, then forks a child per module that imports it alone: an import circle among the
# harness's modules shows as it would in a fresh interpreter, at a fork's cost instead of an interpreter's
# start and its libraries' imports each time (180 s of CI's shared phase, as one interpreter per module).
# A child prints nothing and exits 0, or exits 1: the test then imports that module in a fresh interpreter.
_FORKING_IMPORTER = r"""
import json, os, sys
names = json.loads(sys.stdin.read())
ours = lambda m: m == "pytest_dlperf" or m.startswith("pytest_dlperf.")
for name in names:
    try:
        __import__(name)
    except BaseException:
        pass
for m in [m for m in sys.modules if ours(m)]:
    del sys.modules[m]
failed = []
for name in names:
    pid = os.fork()
    if pid == 0:
        try:
            __import__(name)
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        failed.append(name)
print(json.dumps(failed))
"""


def _fresh_import(item: tuple[str, str]) -> str | None:
    """None, or why ``code`` failed in a fresh interpreter (its last line of error)."""
    name, code = item
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return None if r.returncode == 0 else f"{name}: {(r.stderr.strip().splitlines() or ['?'])[-1]}"


@pytest.mark.needs_setup  # imports the tf, paddle and ray modules too (tests/setup.sh installs them): not quick
def test_every_module_imports_alone_in_a_fresh_interpreter(tmp_path):
    """An import circle shows only when its modules are imported in a certain order: each alone, first. The
    harness's modules each in a fork of an interpreter holding none of them (a failure there is tried again
    in a fresh interpreter, whose error is the one shown); the workloads each in a fresh interpreter."""
    copied = tmp_path / "workloads"
    shutil.copytree(WORKLOADS, copied)
    names = _package_modules()
    assert "pytest_dlperf.plugin" in names and "pytest_dlperf.node.makeenv" in names
    with ThreadPoolExecutor(max_workers=3) as pool:
        fresh = pool.map(_fresh_import, _workloads(copied))
        r = subprocess.run([sys.executable, "-c", _FORKING_IMPORTER], input=json.dumps(names), cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        forked = json.loads(r.stdout.strip().splitlines()[-1])
        failed = [f for f in fresh if f] + [f for f in pool.map(_fresh_import, [(n, f"import {n}") for n in forked]) if f]
    assert not failed, "\n".join(failed)


def test_the_forking_importer_finds_an_import_circle(tmp_path):
    """The check itself: two modules importing a name from each other fail when the first is imported alone."""
    pkg = tmp_path / "pytest_dlperf"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pytest_dlperf.b import B\nA = 1\n")
    (pkg / "b.py").write_text("from pytest_dlperf.a import A\nB = 2\n")
    (pkg / "c.py").write_text("C = 3\n")
    r = subprocess.run([sys.executable, "-c", _FORKING_IMPORTER], input=json.dumps(["pytest_dlperf.a", "pytest_dlperf.c"]),
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == ["pytest_dlperf.a"]


def _layout_paths(text: str) -> dict[str, int]:
    """The paths a layout doc's tree names (between two ``<!-- tree -->`` marks: a line per file or folder,
    indented a level deeper under its folder; a folder ends in '/'), each with its line in the block."""
    block = text.split("<!-- tree -->", 2)[1]
    stack: list[tuple[int, str]] = []
    paths: dict[str, int] = {}
    for n, line in enumerate(block.splitlines(), 1):
        m = re.match(r"^( *)(\S+)", line)
        if not m or not m.group(2).endswith(("/", ".py", ".js")):
            continue
        depth, name = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        path = "/".join([s for _, s in stack] + [name.rstrip("/")])
        paths[path] = n
        if name.endswith("/"):
            stack.append((depth, name.rstrip("/")))
    return paths


def test_the_layout_doc_names_every_file_of_the_tree_and_nothing_else():
    named = {p for p in _layout_paths((ROOT / "docs" / "layout.md").read_text()) if p.startswith("pytest_dlperf")}
    tree = {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*") if p.suffix in (".py", ".js") and "__pycache__" not in p.parts}
    tree |= {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*") if p.is_dir() and (p / "__init__.py").exists()}
    tree.add("pytest_dlperf")
    assert not named - tree, f"docs/layout.md names what the tree lacks: {sorted(named - tree)}"
    assert not tree - named, f"docs/layout.md leaves out: {sorted(tree - named)}"


def test_the_layout_reader_builds_each_path_from_its_indentation():
    doc = ("intro\n<!-- tree -->\n    pytest_dlperf/\n      plugin.py    entry point\n      metrics/     declared\n"
           "        catalog.py   the metrics\n      session/\n        hub.py\n      cli.py\n    docs/\n<!-- tree -->\nafter\n")
    assert list(_layout_paths(doc)) == ["pytest_dlperf", "pytest_dlperf/plugin.py", "pytest_dlperf/metrics",
                                        "pytest_dlperf/metrics/catalog.py", "pytest_dlperf/session",
                                        "pytest_dlperf/session/hub.py", "pytest_dlperf/cli.py", "docs"]
