"""Which deep-learning frameworks a node has, without importing them (they take seconds to import).

Runs on the nodes (``python frameworks.py tensorflow paddle``) and imports nothing from the
harness; prints one JSON line: import name -> {"dist": distribution, "version": ...} or null.
The harness learns of a framework only from this probe and from the workload's meta line.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys

MARK = "DLPERF-FRAMEWORKS "


def probe(names: list[str]) -> dict[str, dict | None]:
    dists = importlib.metadata.packages_distributions()
    out: dict[str, dict | None] = {}
    for name in names:
        if importlib.util.find_spec(name) is None:
            out[name] = None
            continue
        found = None
        for dist in dists.get(name, []):
            try:
                found = {"dist": dist, "version": importlib.metadata.version(dist)}
                break
            except importlib.metadata.PackageNotFoundError:
                continue
        out[name] = found or {"dist": None, "version": None}
    return out


if __name__ == "__main__":
    print(MARK + json.dumps(probe(sys.argv[1:])), flush=True)
