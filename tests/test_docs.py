"""The docs say what the code does: every option `pytest --help` lists is in the options reference or its
cluster kind's page (issue #65: options had gone missing from docs/options.md), and that reference is the one
the option registry renders (pytest_dlperf/options/doc.py)."""
from __future__ import annotations

import difflib
import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _documented(option: str, text: str) -> bool:
    """``--dlperf-slurm-account`` is named whole, or as ``-account`` on a line that names another
    ``--dlperf-slurm-`` option (the tables' short form)."""
    if re.search(re.escape(option) + r"(?![a-z0-9-])", text):
        return True
    head, _, tail = option.rpartition("-")
    family = head.rsplit("-", 1)[0] if head.count("-") > 3 else head  # --dlperf-aliyun-spot-price -> --dlperf-aliyun
    return any(f"`-{tail}`" in line or f", `-{tail}" in line or f"/ `-{tail}`" in line
               for line in text.splitlines() if f"{family}-" in line or head in line)


def test_every_option_pytest_lists_is_documented():
    shown = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], capture_output=True,
                           text=True, timeout=120).stdout
    options = sorted(set(re.findall(r"^\s+(--dlperf-[a-z0-9-]+)", shown, re.M)))
    assert len(options) > 50, shown
    text = "\n".join(p.read_text() for p in [DOCS / "options.md", *DOCS.glob("cluster-*.md")])
    missing = [o for o in options if not _documented(o, text)]
    assert not missing, f"not in docs/options.md nor a cluster page: {missing}"


def test_options_page_is_the_registrys():
    """docs/options.md is what `dlperf options` renders from the registered options and docs/options.head.md."""
    made = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "options"], capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stderr
    page = (DOCS / "options.md").read_text()
    diff = "\n".join(list(difflib.unified_diff(page.splitlines(), made.stdout.splitlines(), "docs/options.md",
                                                "dlperf options", lineterm=""))[:40])
    assert page == made.stdout, ("docs/options.md is not what the option registry renders: run "
                                 f"`dlperf options -o docs/options.md` (edit help= strings or docs/options.head.md, "
                                 f"not the page)\n{diff}")


def test_options_into_a_directory_is_one_line_and_into_a_missing_folder_is_written(tmp_path):
    into_dir = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "options", "-o", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
    assert into_dir.returncode == 1 and "Traceback" not in into_dir.stderr, into_dir.stderr
    assert into_dir.stderr.strip() == (f"dlperf options: -o {tmp_path}: a directory, not a regular file: dlperf writes "
                                       "its outputs as regular files and does not replace anything else; give another "
                                       "path or remove it")
    page = tmp_path / "new" / "options.md"
    made = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "options", "-o", str(page)], capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0 and page.read_text() == (DOCS / "options.md").read_text(), made.stderr
