"""Where the tests' time goes, counted in launches: after a run of the tests, the launches every test made (each
report's ``runs/CASE/LAUNCH/`` directory with a node log) and their seconds (the first command file to the
last node log written), summed per test module.

    python3 benchmarks/launch_census.py /tmp/pytest-of-root/pytest-N [...]

Give it the base temporary directories the run left. pytest keeps the last three, and the suite sessions
the tests start make base directories of their own, so only the last phase's survives the run (and only
until the next pytest on the machine). A test's directory is its name, parameters included, cut to 30
characters; the module is found by matching it against the tests' function names. Prints per module:
launches, their seconds, seconds per launch; then the whole."""
from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"


def test_modules() -> dict[str, str]:
    """Test function name -> its module's file name."""
    names: dict[str, str] = {}
    for path in TESTS.glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                names[node.name] = path.name
    return names


def module_of(test_dir: str, names: dict[str, str]) -> str:
    """The module of a test's temporary directory (``test_some_name_cut_to_30c0``)."""
    stem = re.sub(r"\d+$", "", test_dir)
    found = {m for n, m in names.items() if stem == n[:30] or (len(n) < 30 and stem.startswith(n + "_"))}
    return found.pop() if len(found) == 1 else f"? {stem}"


def main(bases: list[str]) -> int:
    if not bases or not all(Path(b).is_dir() for b in bases):
        missing = [b for b in bases if not Path(b).is_dir()]
        print(f"launch_census: {'no such directory: ' + ', '.join(missing) if missing else 'no directory given'}: "
              "give the base temporary directories a run of the tests left (/tmp/pytest-of-USER/pytest-N)",
              file=sys.stderr)
        return 2
    names = test_modules()
    count: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    for base in map(Path, bases):
        dirs = {log.parent for log in base.rglob("runs/*/*/commands.sh")}
        for launch in dirs:
            logs = list(launch.glob("*.log"))
            if not logs:
                continue
            rel = launch.relative_to(base).parts
            test = rel[1] if rel[0].startswith("popen-gw") else rel[0]
            module = module_of(test, names)
            start = (launch / "commands.sh").stat().st_mtime
            count[module] += 1
            seconds[module] += max(0.0, max(p.stat().st_mtime for p in logs) - start)
    print(f"{'launches':>8} {'seconds':>8} {'s/launch':>8}  module")
    for module in sorted(count, key=lambda m: -seconds[m]):
        print(f"{count[module]:8d} {seconds[module]:8.0f} {seconds[module] / count[module]:8.1f}  {module}")
    total, n = sum(seconds.values()), sum(count.values())
    print(f"{n:8d} {total:8.0f} {total / max(n, 1):8.1f}  all ({total / 60:.1f} min of launches)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
