"""How the running pytest-dlperf was installed, from its own PEP 610 record (direct_url.json), as the pip
requirement a CI runner's install step gives: a VCS URL at its commit, an index's version, or, for a local
wheel or folder no runner can reach, none (the recipe's line must be filled in: ``init --dlperf-from SPEC``)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata

DIST = "pytest-dlperf"


@dataclass(frozen=True)
class Origin:
    """The requirement that installs this pytest-dlperf elsewhere (None: none can), and how it was installed."""

    spec: str | None
    how: str


def _record() -> tuple[dict | None, str | None]:
    """(direct_url.json's content, the version) of the installed distribution; the first that has a record wins
    (a stale egg-info beside the sources has none)."""
    version = None
    for dist in metadata.distributions(name=DIST):
        version = version or dist.version
        text = dist.read_text("direct_url.json")
        if text:
            try:
                return json.loads(text), dist.version
            except ValueError:
                return None, dist.version
    return None, version


def from_record(record: dict | None, version: str | None) -> Origin:
    """The Origin a PEP 610 record (None: installed from an index) gives."""
    if record is None:
        if version is None:
            return Origin(None, "pytest-dlperf is not installed as a distribution")
        return Origin(f"{DIST}=={version}", f"from a package index, version {version}")
    url = str(record.get("url", ""))
    vcs = record.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") and not url.startswith("file:"):
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        at = f"@{commit}" if commit else ""
        sub = record.get("subdirectory")
        return Origin(f"{DIST} @ {vcs['vcs']}+{url}{at}" + (f"#subdirectory={sub}" if sub else ""),
                      f"from {vcs['vcs']} {url} at {commit or 'its default branch'}")
    if "archive_info" in record and url.startswith(("https:", "http:")):
        return Origin(f"{DIST} @ {url}", f"from the archive {url}")
    kind = "an editable folder" if (record.get("dir_info") or {}).get("editable") else "a local folder or file"
    return Origin(None, f"from {kind} ({url}), which a CI runner cannot reach")


def installed() -> Origin:
    """The running pytest-dlperf's Origin."""
    return from_record(*_record())
