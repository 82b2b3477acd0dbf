#!/usr/bin/env python3
"""The local cluster's remote shell, for launchers that start the other nodes themselves.

horovodrun, perseusrun and mpirun start ranks on other hosts with ``ssh [options] HOST COMMAND``
(OpenMPI calls this its rsh agent; Horovod on Kubeflow uses ``kubexec.sh`` the same way). The
local cluster's nodes are shares of this machine at 127.0.0.2, 127.0.0.3, ..., which the
launchers see as remote hosts. Installed as ``ssh`` first on the spanning launcher's PATH, this
script runs COMMAND here instead, in a shell, pinned to that node's cores as the local cluster
pins its node launchers. The node map comes from ``DLPERF_LOCAL_NODES`` (JSON: address -> cpu
list, "" for no pinning). Standard library only; imports nothing from the harness.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

NODES_ENV = "DLPERF_LOCAL_NODES"
# ssh options that take a value (OpenSSH's getopt string), as horovodrun and mpirun pass them.
WITH_VALUE = set("BbcDEeFIiJLlmOoPpQRSWw")


def split(argv: list[str]) -> tuple[str | None, list[str]]:
    """``ssh`` arguments -> (host, command words). Options may come before and after the host."""
    host, i = None, 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg.startswith("-") and len(arg) > 1:
            if arg[1] in WITH_VALUE and len(arg) == 2:
                i += 2
            else:
                i += 1
            continue
        if host is not None:
            break
        host = arg.split("@", 1)[-1]
        i += 1
    if host is None and i < len(argv):
        host, i = argv[i], i + 1
    return host, argv[i:]


def main(argv: list[str]) -> int:
    nodes = json.loads(os.environ.get(NODES_ENV) or "{}")
    host, words = split(argv)
    if host is None:
        print("ssh (dlperf local cluster): no host given", file=sys.stderr)
        return 255
    if host not in nodes:
        print(f"ssh: Could not resolve hostname {host}: not a node of this dlperf local cluster "
              f"({', '.join(nodes) or 'none'})", file=sys.stderr)
        return 255
    command = " ".join(words) or "true"  # as ssh does: the words joined, run by the login shell
    argv_out = ["/bin/sh", "-c", command]
    cpus = nodes[host]
    if cpus and shutil.which("taskset"):
        argv_out = ["taskset", "-c", cpus, *argv_out]
    sys.stdout.flush()
    os.execvp(argv_out[0], argv_out)
    return 255  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
