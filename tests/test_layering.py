"""The package's architecture, checked: the import-linter contracts of pyproject.toml hold (the layers,
node/ importing nothing of the harness, the statistics importing no I/O), every module is in a layer,
every module imports alone in a fresh interpreter, and docs/layout.md names exactly the tree's files."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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
    """A module left out of the layers would be free to import anything: each one is placed."""
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    placed = {m.strip().removeprefix("pytest_dlperf.") for layer in layers for m in layer.split("|")}
    assert placed == tops, f"not in a layer: {sorted(tops - placed)}; no such module: {sorted(placed - tops)}"
    node = next(c for c in _contracts() if c.get("source_modules") == ["pytest_dlperf.node"])
    assert {m.removeprefix("pytest_dlperf.") for m in node["forbidden_modules"]} == tops - {"node"}


def _modules(copied: Path) -> list[tuple[str, str]]:
    """(name, code importing it alone): the package's modules by name; the workloads as their nodes import
    them, from a copy of their folder (tf_mwms.py makes its private temporary folder beside itself)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if WORKLOADS in path.parents:
            out.append((path.stem, f"import sys; sys.path.insert(0, {str(copied)!r}); import {path.stem}"))
            continue
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        out.append((name, f"import {name}"))
    return out


def test_every_module_imports_alone_in_a_fresh_interpreter(tmp_path):
    """An import circle shows only when its modules are imported in a certain order: each alone, first."""
    copied = tmp_path / "workloads"
    shutil.copytree(WORKLOADS, copied)
    def attempt(item: tuple[str, str]) -> str | None:
        name, code = item
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
        return None if r.returncode == 0 else f"{name}: {(r.stderr.strip().splitlines() or ['?'])[-1]}"

    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = [f for f in pool.map(attempt, _modules(copied)) if f]
    assert not failed, "\n".join(failed)


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
