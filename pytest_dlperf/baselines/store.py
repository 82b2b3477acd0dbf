"""The baseline store: ``<dir>/<profile>.json``, one file per hardware profile, schema-versioned.

Reads validate everything and raise ``BaselineError`` naming the file, what is wrong and how to
fix it. ``update`` re-reads the file under ``<file>.lock``, merges (every other entry is kept),
and replaces the file atomically, so concurrent pytest-xdist workers lose nothing; a file that
does not read cleanly is never written over.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ..files import atomic_write_text
from ..software.identity import Software, pack, unpack
from .entry import Entry, SittingsError, add_sitting, check_software, run_groups  # noqa: F401 - the store's entries
from .profile import check_profile_name, default_tolerances
from .schema import BaselineError, Tolerances, _Reader

SCHEMA = 3  # 3: every gated metric alike, its runs under "runs" or its one figure under "stated"
READS = (1, 2, 3)  # a schema 1 or 2 file is read through schema.entry_as_schema_3, written back as schema 3
LOCK_TIMEOUT = 120.0


@dataclass
class BaselineFile:
    """The contents of ``<profile>.json``; ``exists`` is False for a profile never recorded."""

    path: Path
    profile: str
    description: str
    default_tolerance: Tolerances
    entries: dict[str, Entry] = field(default_factory=dict)
    # machine id -> {node name -> hardware fingerprint (node/hwprobe.py)}: what each entry's
    # "machine" was measured on, so the gate can tell a slower machine from slower software
    machines: dict[str, dict[str, dict]] = field(default_factory=dict)
    # software id -> the software identity an entry's runs were recorded with (software/identity.py), so the gate
    # can tell a host that drifted (nothing differs) from a software change (confirmed side by side)
    software: dict[str, Software] = field(default_factory=dict)
    schema: int = SCHEMA
    exists: bool = True

    def get(self, key: str) -> Entry | None:
        return self.entries.get(key)

    def fingerprint_for(self, entry: Entry) -> dict[str, dict] | None:
        """The fingerprints of the machine that recorded the entry (None: recorded without one)."""
        return self.machines.get(entry.machine) if entry.machine else None

    def software_for(self, entry: Entry) -> Software | None:
        """The software the entry was recorded with (None: recorded before software was recorded)."""
        return self.software.get(entry.software) if entry.software else None

    def tolerances_for(self, key: str) -> Tolerances:
        """The file's default tolerances with the entry's recorded ones laid over them (an entry recorded
        before a metric was declared has none for it)."""
        e = self.entries.get(key)
        return self.default_tolerance.override(e.tolerance.to_dict()) if e is not None and e.tolerance is not None \
            else self.default_tolerance

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema": self.schema, "profile": self.profile, "description": self.description,
            "default_tolerance": self.default_tolerance.to_dict(),
            "entries": {k: self.entries[k].to_dict() for k in sorted(self.entries)},
        }
        used = {e.machine for e in self.entries.values() if e.machine}
        machines = {k: v for k, v in sorted(self.machines.items()) if k in used}
        if machines:
            d["machines"] = machines
        recorded = {e.software for e in self.entries.values() if e.software}
        software, distributions = pack({k: v for k, v in self.software.items() if k in recorded})
        if software:
            d["software"], d["distributions"] = software, distributions
        return d

    def to_json(self) -> str:
        """Indented JSON with each list of numbers on one line, so a diff shows what changed."""
        text = json.dumps(self.to_dict(), indent=1, ensure_ascii=False)
        return _NUMBER_LIST.sub(lambda m: "[" + " ".join(m.group(1).split()) + "]", text) + "\n"


_CONFLICT = re.compile(r"^(?:<{7}|>{7})(?: .*)?$", re.M)  # git's markers; '=======' alone could be a value
_NUMBER_LIST = re.compile(r"\[\s*((?:-?[\d.eE+-]+,?\s*)+)\]")


def _file_mode(path: Path) -> int:
    """The mode a rewritten file keeps: its own, else what the umask gives a new file (not mkstemp's 0600)."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def parse(path: Path, text: str) -> BaselineFile:
    """Parse and validate a baseline file's text; BaselineError says what is wrong and where."""
    conflict = _CONFLICT.search(text)
    if conflict:
        line = text.count("\n", 0, conflict.start()) + 1
        raise BaselineError(path, f"has merge conflict markers (line {line}: {conflict.group(0).strip()!r})",
                            "the file was not modified; resolve the conflict, taking each case's entry from one "
                            "side so that the JSON stays valid, or move the file away and record again with "
                            "--update-baselines")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(path, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise BaselineError(path, f"expected a JSON object at the top, found {type(data).__name__}")
    if "schema" not in data:
        raise BaselineError(path, "has no 'schema' field: not a pytest-dlperf baseline file")
    if type(data["schema"]) is not int or data["schema"] not in READS:
        raise BaselineError(path, f"schema version {json.dumps(data['schema'])} is not one this pytest-dlperf "
                                  f"reads (it reads schema {', '.join(map(str, READS))})",
                            "the file was not modified; use the pytest-dlperf version that wrote it, "
                            "or move it away and record again with --update-baselines")
    r = _Reader(path, data, "")
    profile = r.get("profile", "str")
    if profile != path.stem:
        raise BaselineError(path, f"'profile' says {profile!r} but the file is named for {path.stem!r}")
    entries_raw = r.get("entries", "dict")
    entries = {k: Entry.from_dict(k, v, path, data["schema"]) for k, v in entries_raw.items()}
    machines = r.get("machines", "dict", required=False) or {}
    for mid, nodes in machines.items():
        if not isinstance(nodes, dict) or not all(isinstance(fp, dict) for fp in nodes.values()):
            raise BaselineError(path, f"machines[{mid!r}] must map node names to fingerprint objects")
    try:
        software = unpack(r.get("software", "dict", required=False) or {},
                          r.get("distributions", "dict", required=False) or {})
    except ValueError as exc:
        raise BaselineError(path, str(exc), "record the entries that name it again with --update-baselines") from None
    for key, e in entries.items():
        if e.machine and e.machine not in machines:
            raise BaselineError(path, f"entries[{key!r}].machine {e.machine!r} names no entry of 'machines'")
        if e.software and e.software not in software:
            raise BaselineError(path, f"entries[{key!r}].software {e.software!r} names no entry of 'software'")
    return BaselineFile(path=path, profile=profile, description=r.get("description", "text", required=False) or "",
                        default_tolerance=Tolerances.read(r, "default_tolerance", required=True,
                                                          defaults=default_tolerances(profile)),
                        entries=entries, machines=machines, software=software)


class BaselineStore:
    """A directory of baseline files, ``<directory>/<profile>.json``."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def path(self, profile: str) -> Path:
        return self.directory / f"{check_profile_name(profile)}.json"

    def profiles(self) -> list[str]:
        """Profiles that have a file in the store."""
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.json"))

    def exists(self, profile: str) -> bool:
        return self.path(profile).is_file()

    def load(self, profile: str) -> BaselineFile:
        """The profile's file; an empty, not-yet-existing one when there is none."""
        path = self.path(profile)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return BaselineFile(path=path, profile=profile, description="", exists=False,
                                default_tolerance=default_tolerances(profile))
        except (OSError, UnicodeDecodeError) as exc:
            raise BaselineError(path, f"cannot be read: {exc}") from None
        return parse(path, text)

    def update(self, profile: str, entries: Mapping[str, Entry], description: str | None = None,
               default_tolerance: Tolerances | None = None,
               machines: Mapping[str, dict[str, dict]] | None = None,
               software: Mapping[str, Software] | None = None) -> BaselineFile:
        """Merge ``entries`` into the profile's file under its lock; every other entry is kept.

        ``description`` and ``default_tolerance`` are used when the file is created (and
        replace the file's own when given). A file that does not read cleanly is left as it is.
        """
        path = self.path(profile)
        for key, e in entries.items():
            if e.key != key:
                raise ValueError(f"entry filed under {key!r} is for case {e.key!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT)
        try:
            with lock:
                current = self.load(profile)
                current.entries.update(entries)
                current.machines.update(machines or {})
                current.software.update(software or {})
                if description is not None:
                    current.description = description
                if default_tolerance is not None:  # completed with the profile's defaults: the file names every metric
                    current.default_tolerance = default_tolerances(profile).override(default_tolerance.to_dict())
                text = current.to_json()
                parse(path, text)  # never write what could not be read back
                mode = _file_mode(path)
                atomic_write_text(path, text)
                os.chmod(path, mode)
                current.exists = True
                return current
        except Timeout:
            raise BaselineError(path, f"its lock {path}.lock was held for more than {LOCK_TIMEOUT:g}s",
                                "another pytest session is updating it; retry when it is done") from None

    def describe_missing(self, profile: str, key: str, named: bool = False) -> str:
        """Why there is no baseline for a case, said plainly, with how to record one.

        ``named``: the profile was given with --dlperf-baseline-profile rather than detected.
        """
        path = self.path(profile)
        if not path.is_file():
            others = [p for p in self.profiles() if p != profile]
            have = f" (baselines there are for: {', '.join(others)})" if others else ""
            whose = f"profile {profile!r} named with --dlperf-baseline-profile" if named else \
                f"this machine's profile {profile!r}"
            return (f"no baseline file for {whose}: {path} does not exist{have}. "
                    f"Record one with --update-baselines, or gate against another profile's file with "
                    f"--dlperf-baseline-profile NAME.")
        try:
            entries = self.load(profile).entries
        except BaselineError as exc:
            return str(exc)
        backends = sorted({e.backend for e in entries.values()})
        what = (f"its {len(entries)} entries are for backend(s) {', '.join(backends)}" if entries
                else "it has no entries")
        return (f"{path} has no baseline for {key} ({what}). Record it with --update-baselines "
                f"(other entries in the file are kept), or pick another file with --dlperf-baseline-profile.")
