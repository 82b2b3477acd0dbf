"""Make a side's Python environment on this node (``pip=`` in a side's spec): the base interpreter's own
packages with some requirements applied over them, cached under a directory and reused. Runs on the
nodes and imports nothing from the harness (standard library only). Contract ``CONTRACT``:

- ``python3 makeenv.py make --base PY --cache DIR [--installer auto|uv|pip] [--index-url URL]
  [--find-links DIR] -- REQ ...``: prints progress lines, then ``MARK`` and one JSON line: ``python`` (the
  environment's interpreter), ``digest``, ``builder``, ``seconds`` (to make it; 0 when reused), ``reused``,
  ``added`` (distribution -> version installed in it) and ``moved`` (of those, the ones the base held at
  another version: name -> [base, now]); or ``ERROR_MARK`` and one line saying why, and exit 2.
- ``python3 makeenv.py list --cache DIR`` / ``prune --cache DIR --older-than SECONDS``: ``MARK`` and one
  JSON line: the cached environments (``list``), those removed (``prune``).

The environment is a venv over the base's site directories (a ``.pth`` adds them after its own, so what is
installed in it shadows the base's): only what was asked, and what the installer had to move, differ.
It is made in a partial directory and renamed when complete, under a per-digest lock (a second session
making the same environment waits, and says so); a partial one left by a killed make is removed first.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MARK = "DLPERF-ENV "
ERROR_MARK = "DLPERF-ENV-ERROR "
CONTRACT = 1
INFO = "dlperf-env.json"  # written last into a complete environment: what it holds, when last used
TAIL = 12  # installer lines said on a failure

# Printed by a python: its distributions (every one on its path, or with "own" those in its own site-packages),
# and which of them are builds of a local directory (PEP 610's direct_url.json: editable or not), which no index has
_FACTS = r"""
import sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]  # -c puts the working directory first: not the python's
import importlib.metadata as md, json, site
own = sys.argv[1:] == ["own"]
dists, local = {}, {}
for d in md.distributions(**({"path": site.getsitepackages()} if own else {})):
    name = (d.metadata["Name"] or "").lower().replace("_", "-")
    if name and name not in dists:
        dists[name] = d.version
        try:
            url = json.loads(d.read_text("direct_url.json") or "{}")
        except ValueError:
            url = {}
        if str(url.get("url", "")).startswith("file:") and "dir_info" in url:
            local[name] = "editable" if url["dir_info"].get("editable") else "local"
sites = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
print(json.dumps({"executable": sys.executable, "version": sys.version.split()[0], "sites": sites, "dists": dists,
                  "local": local}))
"""


class MakeError(RuntimeError):
    """The environment cannot be made: one line, the installer's last lines after it."""


def _say(text: str) -> None:
    print(f"dlperf-env: {text}", flush=True)


def _base_facts(base: str) -> dict:
    try:
        res = subprocess.run([base, "-c", _FACTS], capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise MakeError(f"the base python {base} does not exist on this node: give python=PATH of one that "
                        "does") from None
    if res.returncode != 0:
        raise MakeError(f"the base python {base} did not run: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def names_a_file(arg: str) -> bool:
    """Whether a requirement argument is a path (a wheel, an sdist, a project directory), not a name to resolve."""
    return arg == "." or arg.startswith(("/", "./", "../", "~")) or arg.endswith((".whl", ".tar.gz", ".zip"))


def _local_paths(reqs: list[str]) -> dict[str, Path]:
    """The requirement arguments that name files on this node (a wheel, a project directory, a -r file): each
    argument as given, and its path."""
    out, after_r = {}, False
    for r in reqs:
        if after_r or names_a_file(r):
            out[r] = Path(r).expanduser()
        after_r = r in ("-r", "--requirement")
    return out


def _digest_file(path: Path) -> str:
    if path.is_dir():  # a project directory: its tracked sources are what pip builds
        h = hashlib.sha256()
        for p in sorted(path.rglob("*")):
            if p.is_file() and not any(part in (".git", "__pycache__", "build", "dist") or part.endswith(".egg-info")
                                       for part in p.relative_to(path).parts):
                h.update(str(p.relative_to(path)).encode() + b"\0" + p.read_bytes())
        return h.hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digest(facts: dict, reqs: list[str], installer: str, index: list[str], hide: list[str] = ()) -> str:
    """The environment's key: the base interpreter (its path, version and every distribution it holds), the
    requirements (a local file or project by its content, wherever it lies: a worktree's path is new each
    session), what it hides, the installer and the index options."""
    local = _local_paths(reqs)
    keyed = [f"content:{_digest_file(local[r])}" if r in local else r for r in reqs]
    blob = json.dumps({"contract": CONTRACT, "base": [facts["executable"], facts["version"], facts["dists"]],
                       "reqs": keyed, "hide": sorted(hide), "installer": installer, "index": index}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _uv(choice: str, base: str) -> str | None:
    """uv's path where it is installed and wanted (``auto``, ``uv``): on PATH, or beside the base python."""
    if choice == "pip":
        return None
    beside = Path(base).parent / "uv"
    uv = shutil.which("uv") or (str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None)
    if uv is None and choice == "uv":
        raise MakeError("--dlperf-env-installer uv: uv is not installed on this node: pip install uv there, "
                        "or use --dlperf-env-installer pip")
    return uv


def _asked(reqs: list[str]) -> set[str]:
    """The distribution names the requirements ask for (a pin's, a wheel's, a -r file's lines', a project's)."""
    names: set[str] = set()
    lines: list[str] = []
    after_r = False
    for r in reqs:
        if after_r:
            lines += Path(r).expanduser().read_text().splitlines() if Path(r).expanduser().is_file() else []
        elif r.endswith(".whl"):
            names.add(Path(r).name.split("-")[0])
        elif Path(r).expanduser().is_dir() and (Path(r).expanduser() / "pyproject.toml").is_file():
            import tomllib
            names.add(str(tomllib.loads((Path(r).expanduser() / "pyproject.toml").read_text())
                          .get("project", {}).get("name", "")))
        elif r not in ("-r", "--requirement"):
            lines.append(r)
        after_r = r in ("-r", "--requirement")
    for line in lines:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line.split("#")[0])
        if m:
            names.add(m.group(1))
    return {n.lower().replace("_", "-") for n in names if n}


def _constraints(facts: dict, reqs: list[str], where: Path) -> list[str]:
    """uv's ``-c FILE``: every distribution of the base at its version but those asked for. uv does not see
    the base's packages through the overlay, so it installs what the requirements need into the environment;
    the constraints keep those at the versions the base holds (pip sees them installed and leaves them)."""
    asked = _asked(reqs)
    pins = [f"{k}=={v}" for k, v in sorted(facts["dists"].items()) if k not in asked and "+" not in v]
    where.write_text("\n".join(pins) + "\n")
    return ["-c", str(where)]


_PIP_TO_UV = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
              "constraint": "-c"}


def _pip_settings(base: str) -> list[str]:
    """The node's pip settings (pip.conf, PIP_* variables) that say where packages come from, as uv's
    options: uv reads only its own (UV_*, uv.toml), and an environment made with uv must see what pip would."""
    res = subprocess.run([base, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60)
    got: dict[str, tuple[int, list[str]]] = {}
    for line in res.stdout.splitlines() if res.returncode == 0 else []:
        key, _, value = line.partition("=")
        scope, _, name = key.rpartition(".")
        if name in _PIP_TO_UV:
            rank = {":env:": 2, "global": 1}.get(scope, 0)  # a variable over pip.conf, [global] over a command's section
            if rank >= got.get(name, (-1, []))[0]:
                got[name] = (rank, value.strip().strip("'\"").split())
    words = [w for name, (_, values) in sorted(got.items()) for v in values for w in (_PIP_TO_UV[name], v)]
    # pip takes the best version over every index it is given; uv, by default, only the first index's
    return [*words, "--index-strategy", "unsafe-best-match"] if "--extra-index-url" in words else words


def _argv(uv: str | None, base: str, python: str, index: list[str], reqs: list[str]) -> list[str]:
    """The install command into the environment's ``python``: uv's, else the base's pip (whose ``--python``
    is a general option, before ``install``)."""
    if uv:
        return [uv, "pip", "install", "--python", python, *index, *reqs]
    return [base, "-m", "pip", "--disable-pip-version-check", "--no-input", "--python", python, "install",
            *index, *reqs]


# what the installers print when a node reaches no index (pip warns of it in retries, then finds no version)
_UNREACHABLE = re.compile(r"Failed to establish a new connection: ([^'\"]+)|(Temporary failure in name resolution)"
                          r"|(Network is unreachable)|(Read timed out)|(tcp connect error)")


def _hint(lines: list[str]) -> str:
    """What the installer's reason means for the user, where it is one of the usual two: no index reached, a
    full disk; with the option that helps."""
    text = "\n".join(lines)
    if "No space left on device" in text:
        return (" (the disk that holds the cache is full on this node: free space there, or give "
                "--dlperf-env-cache=DIR on a larger one)")
    found = _UNREACHABLE.search(text)
    if found:
        why = next(g for g in found.groups() if g)
        return (f" (a package index could not be reached from this node: {why.strip()}; give --dlperf-env-index-url "
                "URL of one it reaches, or --dlperf-env-find-links DIR of a wheelhouse on it)")
    return ""


def _run_install(argv: list[str], env: dict[str, str]) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)  # its own group: a build it starts goes with it
    lines: list[str] = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            lines.append(line.rstrip())
            del lines[:-200]
        proc.wait()
    except BaseException:  # stopped: the installer and what it started go too, before the partial is removed
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        raise
    if proc.returncode != 0:
        first = next((i for i, ln in enumerate(lines) if ln.startswith(("ERROR", "error:", "  × "))), None)
        said = [ln.strip() for ln in (lines[first:] if first is not None else lines) if ln.strip()]
        tail = " | ".join(said[:TAIL] if first is not None else said[-TAIL:])  # the installer's own reason
        raise MakeError(f"the installer failed (exit {proc.returncode}): {tail or 'no output'}{_hint(lines)}")


_OVERLAY = r"""
# Made by pytest-dlperf (node/makeenv.py): the base python's site directories after this environment's own,
# their .pth files run but those of the hidden distributions, whose modules do not import here.
import importlib.abc, os, site, sys

BASE, SKIP, HIDDEN = {base!r}, {skip!r}, {hidden!r}
for d in BASE:
    if os.path.isdir(d) and d not in sys.path:
        sys.path.append(d)
        for name in sorted(os.listdir(d)):
            if name.endswith(".pth") and os.path.join(d, name) not in SKIP:
                site.addpackage(d, name, set(sys.path))


class _Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{fullname!r}} (hidden by pytest-dlperf's environment)",
                                      name=fullname)
        return None


if HIDDEN:
    sys.meta_path.insert(0, _Hidden())
"""

_HIDDEN_FACTS = r"""
import importlib.metadata as md, json, os, sys
out = {}
for name in sys.argv[1:]:
    try:
        d = md.distribution(name)
    except md.PackageNotFoundError:
        out[name] = None
        continue
    files = [str(d.locate_file(f)) for f in (d.files or [])]
    tops = (d.read_text("top_level.txt") or "").split()
    for f in d.files or []:
        part = f.parts[0]
        if len(f.parts) > 1 and not part.endswith((".dist-info", ".data")) and part not in ("..", "bin"):
            tops.append(part)
        elif len(f.parts) == 1 and part.endswith(".py"):
            tops.append(part[:-3])
    out[name] = {"version": d.version, "pth": [os.path.realpath(f) for f in files if f.endswith(".pth")],
                 "modules": sorted(set(tops))}
print(json.dumps(out))
"""


def _hidden(base: str, names: list[str]) -> dict:
    """The hidden distributions' .pth files and top-level modules in the base (MakeError: one it lacks)."""
    if not names:
        return {}
    res = subprocess.run([base, "-c", _HIDDEN_FACTS, *names], capture_output=True, text=True, timeout=120)
    got = json.loads(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 else {}
    missing = [n for n in names if not got.get(n)]
    if missing:
        raise MakeError(f"hide={missing[0]}: the base python {base} holds no distribution of that name: hide only "
                        "what it has")
    return got


def _venv(base: str, target: Path, sites: list[str], hidden: dict) -> str:
    res = subprocess.run([base, "-m", "venv", "--without-pip", str(target)], capture_output=True, text=True)
    if res.returncode != 0:
        raise MakeError(f"python -m venv failed: {(res.stderr.strip().splitlines() or ['no message'])[-1]}")
    site = next(target.glob("lib/python*/site-packages"))
    skip = sorted({p for h in hidden.values() for p in h["pth"]})
    modules = sorted({m for h in hidden.values() for m in h["modules"]})
    (site / "_dlperf_overlay.py").write_text(_OVERLAY.format(base=sites, skip=skip, hidden=modules))
    (site / "_dlperf_overlay.pth").write_text("import _dlperf_overlay\n")
    return str(target / "bin" / "python")


def _own(python: str, facts: dict) -> tuple[dict[str, str], dict[str, list[str]]]:
    """What the environment holds in its own site-packages that the base does not (new, or at another
    version), and of that what the base held at another version."""
    res = subprocess.run([python, "-c", _FACTS, "own"], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise MakeError(f"the made environment's python did not run: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
    own = json.loads(res.stdout.strip().splitlines()[-1])["dists"]
    base = facts["dists"]
    added = {k: v for k, v in own.items() if base.get(k) != v}  # a copy of the base's own version is no change
    moved = {k: [base[k], v] for k, v in added.items() if k in base}
    return added, moved


class _Stopped(BaseException):
    """SIGTERM while making: unwinds like Ctrl-C, so the partial directory is removed."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped()


@dataclass(frozen=True)
class Plan:
    """What one make will do, resolved once: the base and its facts, the requirements, what it hides, the
    installer, the index options and the environment's key."""

    base: str
    facts: dict
    reqs: list[str]
    hide: list[str]
    hidden: dict
    uv: str | None
    index: list[str]
    key: str

    @property
    def builder(self) -> str:
        return "uv" if self.uv else "pip"


def _writable(cache: Path) -> None:
    try:
        cache.mkdir(parents=True, exist_ok=True)
        probe = cache / f".write-test-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise MakeError(f"the environment cache {cache} is not writable ({exc.strerror}): give "
                        "--dlperf-env-cache=DIR of a writable directory") from None


def plan(args: argparse.Namespace) -> Plan:
    """The make checked before anything is written: a requirement given, its files here, the base running."""
    reqs = [r for r in args.reqs if r != "--"]
    hide = sorted(set(args.hide))
    if not reqs and not hide:
        raise MakeError("no requirement given: pip=REQ names a pin, a wheel, a project directory or -r FILE")
    missing = [str(p) for p in _local_paths(reqs).values() if not p.exists()]
    if missing:
        raise MakeError(f"pip={missing[0]}: no such file on this node: put it at that path on every node")
    facts = _base_facts(args.base)
    index = [*(["--index-url", args.index_url] if args.index_url else []),
             *(["--find-links", args.find_links] if args.find_links else [])]
    uv = _uv(args.installer, args.base)
    hidden = _hidden(args.base, hide)
    return Plan(args.base, facts, reqs, hide, hidden, uv, index, digest(facts, reqs, "uv" if uv else "pip", index, hide))


def make(args: argparse.Namespace) -> dict:
    """The environment of ``args``, from the cache or made, under its key's lock."""
    cache = Path(args.cache).expanduser()
    _writable(cache)
    p = plan(args)
    final = cache / p.key
    with open(cache / f"{p.key}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"waiting for another session making the same environment ({final})")
            fcntl.flock(lock, fcntl.LOCK_EX)
        for stale in cache.glob(f"{p.key}.partial-*"):  # a make that was killed: never reused
            shutil.rmtree(stale, ignore_errors=True)
        info = final / INFO
        if info.is_file():
            got = json.loads(info.read_text())
            os.utime(info)  # last used: what prune goes by
            return {**got, "seconds": 0.0, "reused": True}
        _say(f"making {final} with {p.builder}: {' '.join([*p.reqs, *(f'hide={h}' for h in p.hide)])}")
        got = _build(p, cache / f"{p.key}.partial-{os.getpid()}", final)
        return {**got, "seconds": got["made_seconds"], "reused": False}


def _build(p: Plan, partial: Path, final: Path) -> dict:
    """Make the environment in ``partial`` and rename it ``final`` when complete; stopped or failed, nothing
    is left (the installer's process group goes too)."""
    t0 = time.monotonic()
    old = signal.signal(signal.SIGTERM, _stop)
    try:
        python = _venv(p.base, partial, p.facts["sites"], p.hidden)
        env = {**os.environ, "VIRTUAL_ENV": str(partial)}
        if p.reqs:
            extra = [*_constraints(p.facts, p.reqs, partial / "dlperf-constraints.txt"),
                     *([] if p.index else _pip_settings(p.base))] if p.uv else []
            _run_install([*_argv(p.uv, p.base, python, p.index, p.reqs), *extra], env)
        added, moved = _own(python, p.facts)
        for script in (partial / "bin").iterdir():  # the venv's own scripts name its partial path
            if script.is_file() and not script.is_symlink():
                text = script.read_bytes()
                if str(partial).encode() in text:
                    script.write_bytes(text.replace(str(partial).encode(), str(final).encode()))
        got = {"contract": CONTRACT, "python": str(final / "bin" / "python"), "digest": p.key, "builder": p.builder,
               "requirements": p.reqs, "hidden": {h: p.hidden[h]["version"] for h in p.hide},
               "base": p.facts["executable"], "added": added, "moved": moved,
               # the base's builds of a local directory, taken as the base has them (no index has them)
               "kept": {k: v for k, v in p.facts.get("local", {}).items() if k not in added and k not in p.hide},
               "made_seconds": round(time.monotonic() - t0, 2)}
        (partial / INFO).write_text(json.dumps(got))
        os.rename(partial, final)
        return got
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        signal.signal(signal.SIGTERM, old)


def listed(cache: Path) -> list[dict]:
    """The cached environments. One removed while it is read (a node sharing this cache, the local cluster's
    nodes or an NFS home, pruning it at the same time) is left out, not an error."""
    out = []
    for info in sorted(cache.glob(f"*/{INFO}")):
        try:
            got = json.loads(info.read_text())
            size = sum(p.stat().st_size for p in info.parent.rglob("*") if p.is_file() and not p.is_symlink())
            out.append({**got, "path": str(info.parent), "last_used": info.stat().st_mtime, "bytes": size})
        except (OSError, ValueError):
            continue
    return out


def prune(cache: Path, older_than: float) -> list[dict]:
    gone = []
    now = time.time()
    for env in listed(cache):
        key = Path(env["path"]).name
        with open(cache / f"{key}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # in use by a session making or reusing it, or pruned by a node sharing this cache
            if not (Path(env["path"]) / INFO).is_file():
                continue  # pruned by a node sharing this cache since it was listed
            if now - env["last_used"] >= older_than:
                shutil.rmtree(env["path"], ignore_errors=True)
                gone.append(env)
    return gone


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--base", required=True)
    mk.add_argument("--cache", required=True)
    mk.add_argument("--installer", choices=("auto", "uv", "pip"), default="auto")
    mk.add_argument("--index-url", default="")
    mk.add_argument("--find-links", default="")
    mk.add_argument("--hide", action="append", default=[], metavar="NAME",
                    help="a distribution of the base the environment hides: its modules and .pth files")
    mk.add_argument("reqs", nargs=argparse.REMAINDER)
    ls = sub.add_parser("list")
    ls.add_argument("--cache", required=True)
    pr = sub.add_parser("prune")
    pr.add_argument("--cache", required=True)
    pr.add_argument("--older-than", type=float, default=0.0)
    args = ap.parse_args(argv)
    try:
        if args.verb == "make":
            got: object = make(args)
        elif args.verb == "list":
            got = listed(Path(args.cache).expanduser())
        else:
            got = prune(Path(args.cache).expanduser(), args.older_than)
    except MakeError as exc:
        print(ERROR_MARK + " ".join(str(exc).split()), flush=True)
        return 2
    except (KeyboardInterrupt, _Stopped):
        print(ERROR_MARK + "interrupted: the partial environment was removed", flush=True)
        return 130
    print(MARK + json.dumps(got), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
