#!/usr/bin/env python3
"""The remote shell of the local and Slurm clusters, for launchers that start the other nodes themselves.

horovodrun, perseusrun and mpirun start ranks on other hosts with ``ssh [options] HOST COMMAND``
(OpenMPI calls this its rsh agent; Horovod on Kubeflow uses ``kubexec.sh`` the same way).
Installed as ``ssh`` first on the spanning launcher's PATH, this script runs COMMAND on that node
the cluster's own way:

- local cluster: the nodes are shares of this machine at 127.0.0.2, 127.0.0.3, ..., which the
  launchers see as remote hosts; COMMAND runs here, in a shell, pinned to that node's cores as
  the local cluster pins its node launchers. The node map comes from ``DLPERF_LOCAL_NODES``
  (JSON: address -> cpu list, "" for no pinning).
- Slurm cluster: COMMAND runs as a step of the job on that node (``srun --jobid J --overlap -w
  NODE``), so Slurm accounts for it and kills it with the job, where compute nodes often accept
  no SSH at all. The map comes from ``DLPERF_SRUN_NODES`` (JSON: {"job": J, "nodes": {address:
  node name}}).

Standard library only; imports nothing from the harness.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

NODES_ENV = "DLPERF_LOCAL_NODES"
SRUN_ENV = "DLPERF_SRUN_NODES"
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
    srun = json.loads(os.environ.get(SRUN_ENV) or "{}")
    nodes = srun.get("nodes") or json.loads(os.environ.get(NODES_ENV) or "{}")
    kind = "slurm" if srun else "local"
    host, words = split(argv)
    if host is None:
        print(f"ssh (dlperf {kind} cluster): no host given", file=sys.stderr)
        return 255
    if host not in nodes:
        print(f"ssh: Could not resolve hostname {host}: not a node of this dlperf {kind} cluster "
              f"({', '.join(nodes) or 'none'})", file=sys.stderr)
        return 255
    command = " ".join(words) or "true"  # as ssh does: the words joined, run by the login shell
    argv_out = ["/bin/sh", "-c", command]
    if srun:
        argv_out = ["srun", f"--jobid={srun['job']}", "--overlap", "--nodes=1", "--ntasks=1",
                    f"--nodelist={nodes[host]}", "--job-name=dlperf-span", "--kill-on-bad-exit=1", "--quiet",
                    "--export=ALL", *argv_out]
    elif nodes[host] and shutil.which("taskset"):
        argv_out = ["taskset", "-c", nodes[host], *argv_out]
    sys.stdout.flush()
    os.execvp(argv_out[0], argv_out)
    return 255  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
