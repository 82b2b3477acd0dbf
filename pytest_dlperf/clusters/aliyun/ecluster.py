"""``dlperf cluster``: FastGPU's ``ecluster`` verbs for the instances pytest-dlperf provisions
(ls, create, ssh, tmux, scp, stop, start, kill, addip, rename). A target is a task name
(``task0.bench``) or a whole job in braces (``{bench}``), as ecluster takes them."""
from __future__ import annotations

import argparse
import configparser
import datetime as _dt
import importlib.util
import os
import shlex
import sys

from . import credentials
from .api import CloudError, EcsApi, Instance, LaunchSpec
from .options import SPOT
from .provision import Provisioner, ProvisionError, settled

CREATE_KEYS = ("name", "machines", "instance_type", "image", "zone", "vswitch", "security_group", "key_pair",
               "system_disk", "data_disk", "spot", "spot_price_limit")


class CliError(Exception):
    """What the user is told, with exit code 2."""


def _api(args: argparse.Namespace) -> EcsApi:
    try:
        creds = credentials.load()
        region = credentials.region(given=args.region)
    except credentials.CredentialsError as exc:
        raise CliError(str(exc)) from None
    return EcsApi(creds, region, endpoint=args.endpoint, protocol=args.protocol)


def _targets(api: EcsApi, target: str) -> list[Instance]:
    """``{job}``: every instance of the job; else the instance of that task name."""
    if target.startswith("{") and target.endswith("}"):
        found = sorted(api.describe(target[1:-1]), key=lambda i: i.name)
        if not found:
            raise CliError(f"no instances of job {target[1:-1]!r}")
        return found
    found = [i for i in api.describe(None) if i.name == target]
    if not found:
        raise CliError(f"no instance named {target!r} (dlperf cluster ls lists them)")
    return found


def _one(api: EcsApi, target: str) -> Instance:
    """One instance, named by its task name (a ``{job}`` names several)."""
    found = _targets(api, target)
    if len(found) != 1:
        raise CliError(f"{target} names {len(found)} instances; give one task name, e.g. {found[0].name}")
    return found[0]


def hours_alive(created: str, now: _dt.datetime | None = None) -> float:
    """Hours since CreationTime (``2026-11-22T21:04Z``)."""
    try:
        t = _dt.datetime.strptime(created, "%Y-%m-%dT%H:%MZ").replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        return float("nan")
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return (now - t).total_seconds() / 3600


def cmd_ls(args: argparse.Namespace, api: EcsApi) -> int:
    rows = sorted(api.describe(None), key=lambda i: (i.job, i.name))
    cols = ("name", "hours_live", "instance_type", "public_ip", "private_ip", "status", "instance_id")
    table = [cols] + [(i.name, f"{hours_alive(i.created):.1f}", i.instance_type, i.public_ip or "-",
                       i.private_ip or "-", i.status, i.id) for i in rows]
    widths = [max(len(r[c]) for r in table) for c in range(len(cols))]
    print(f"region={api.region}")
    for r in table:
        print("  ".join(v.rjust(w) if c == 1 else v.ljust(w) for c, (v, w) in enumerate(zip(r, widths))).rstrip())
    return 0


def _create_settings(args: argparse.Namespace) -> dict:
    """Flags over ``--config FILE`` (INI, section [create], keys as the flags: name, machines, ...)."""
    got = {}
    if args.config:
        parser = configparser.ConfigParser()
        if not parser.read(args.config):
            raise CliError(f"--config {args.config}: no such file")
        section = parser["create"] if parser.has_section("create") else parser[parser.sections()[0]] \
            if parser.sections() else {}
        unknown = [k for k in section if k.replace("-", "_") not in CREATE_KEYS]
        if unknown:
            raise CliError(f"--config {args.config}: unknown key(s) {', '.join(unknown)}; known: {', '.join(CREATE_KEYS)}")
        got = {k.replace("-", "_"): v for k, v in section.items()}
    for k in CREATE_KEYS:
        v = getattr(args, k)
        if v is not None:
            got[k] = v
    missing = [k for k in ("name", "instance_type", "image") if not got.get(k)]
    if missing:
        raise CliError(f"create needs {', '.join('--' + k.replace('_', '-') for k in missing)} (or --config FILE)")
    return got


def cmd_create(args: argparse.Namespace, api: EcsApi) -> int:
    s = _create_settings(args)
    try:
        spot = SPOT[s.get("spot", "no")]
        spec = LaunchSpec(instance_type=s["instance_type"], image=s["image"], zone=s.get("zone", ""),
                          vswitch=s.get("vswitch", ""), security_group=s.get("security_group", ""),
                          key_pair=s.get("key_pair", ""),
                          system_disk_gb=int(s["system_disk"]) if s.get("system_disk") else None,
                          data_disk_gb=int(s["data_disk"]) if s.get("data_disk") else None, spot_strategy=spot,
                          spot_price_limit=float(s["spot_price_limit"]) if s.get("spot_price_limit") else None)
        machines = int(s.get("machines", 1))
    except (KeyError, ValueError) as exc:
        raise CliError(f"create: bad value ({exc}); spot is one of {', '.join(SPOT)}") from None
    prov = Provisioner(api, s["name"], machines, spec, check_ssh=False, poll_s=args.poll,
                       wait_running_s=args.wait, say=lambda t: print(t, file=sys.stderr, flush=True))
    for i in prov.acquire():
        print(f"{i.name} {i.id} {i.status} {i.public_ip}")
    return 0


def _settled(api: EcsApi, target: str, wait: float) -> list[Instance]:
    """The target's instances once none is booting or stopping, waiting at most ``wait`` seconds."""
    return settled(lambda: _targets(api, target), wait, 1.0)


def _verb(args: argparse.Namespace, api: EcsApi) -> int:
    insts = _settled(api, args.target, args.wait)
    ids = [i.id for i in insts]
    if args.command == "stop":
        api.stop(ids, charging=args.keep_charging)
    elif args.command == "start":
        api.start(ids)
    elif args.command == "kill":
        api.delete(ids)
    done = {"stop": "stopped", "start": "started", "kill": "released"}[args.command]
    print(f"{done} {', '.join(i.name for i in insts)}")
    return 0


def cmd_addip(args: argparse.Namespace, api: EcsApi) -> int:
    """Admit this machine's address (or --cidr) to the SSH port of the task's security groups."""
    from .cluster import caller_cidr  # (imports the SSH cluster and paramiko)

    insts = _targets(api, args.target)
    cidr = args.cidr or caller_cidr(api.endpoint_host, lambda t: print(t, file=sys.stderr))
    groups = sorted({g for i in insts for g in i.security_groups})
    if not groups:
        raise CliError(f"{args.target}: no security group on the instance(s)")
    for g in groups:
        api.allow_ssh(g, cidr, args.port)
    print(f"admitted {cidr} to port {args.port} of {', '.join(groups)}")
    return 0


def cmd_rename(args: argparse.Namespace, api: EcsApi) -> int:
    inst = _one(api, args.old)
    api.rename(inst.id, args.new)
    print(f"renamed {args.old} ({inst.id}) to {args.new}")
    return 0


def _login(args: argparse.Namespace, inst: Instance) -> list[str]:
    """The ssh options that reach an instance (the same for ssh, tmux and scp)."""
    if not inst.public_ip:
        raise CliError(f"{inst.name} has no public IP (status {inst.status})")
    out = ["-p" if args.command != "scp" else "-P", str(args.port)]
    if args.key:
        out += ["-i", args.key]
    for opt in args.ssh_option or []:
        out += ["-o", opt]
    return out


def _run(argv: list[str], show: bool) -> int:
    """exec the command (it takes over the terminal), or print it with --print."""
    if show:
        print(shlex.join(argv))
        return 0
    os.execvp(argv[0], argv)
    return 127  # not reached


def cmd_ssh(args: argparse.Namespace, api: EcsApi) -> int:
    inst = _one(api, args.target)
    argv = ["ssh", *_login(args, inst), f"{args.user}@{inst.public_ip}"]
    if args.command == "tmux" and getattr(args, "remote", None):
        raise CliError("tmux attaches to the session; to run a command use: dlperf cluster ssh TASK -- COMMAND")
    if args.command == "tmux":  # attach to the tmux session, else a login shell
        argv = ["ssh", "-t", *argv[1:], "tmux attach 2>/dev/null || exec $SHELL -l"]
    elif getattr(args, "remote", None):  # dlperf cluster ssh TASK [options] -- COMMAND ...
        argv += ["--", *args.remote]
    return _run(argv, args.print)


def cmd_scp(args: argparse.Namespace, api: EcsApi) -> int:
    """``task0.job:/path`` on either side is that instance's path."""
    parts, inst = [], None
    for spec in (args.source, args.destination):
        name, sep, path = spec.partition(":")
        if sep and not name.startswith("/") and "." in name:
            inst = _one(api, name)
            parts.append(f"{args.user}@{inst.public_ip}:{path}")
        else:
            parts.append(spec)
    if inst is None:
        raise CliError("scp: name an instance on one side, e.g. task0.bench:/root/results")
    return _run(["scp", "-r", *_login(args, inst), *parts], args.print)


def add_parser(sub) -> None:  # noqa: ANN001 - argparse's subparsers
    c = sub.add_parser("cluster", help="the Alibaba Cloud ECS instances pytest-dlperf provisions (FastGPU's ecluster)")
    c.add_argument("--region", default=None, help="default: ALIBABA_CLOUD_REGION_ID or ALIYUN_DEFAULT_REGION")
    c.add_argument("--endpoint", default=None, metavar="HOST[:PORT]")
    c.add_argument("--protocol", choices=("https", "http"), default="https")
    verbs = c.add_subparsers(dest="command", required=True)
    verbs.add_parser("ls", help="name, hours alive, type, public and private IP, status, id").set_defaults(verb=cmd_ls)
    cr = verbs.add_parser("create", help="create (or reuse) a job's instances: --name JOB --machines N ...")
    cr.add_argument("--config", default=None, help="INI file, section [create], keys as these flags")
    for k in CREATE_KEYS:
        cr.add_argument("--" + k.replace("_", "-"), default=None)
    cr.add_argument("--wait", type=float, default=600.0, help="seconds to wait for Running")
    cr.add_argument("--poll", type=float, default=5.0, help=argparse.SUPPRESS)
    cr.set_defaults(verb=cmd_create)
    for name, fn, what in (("ssh", cmd_ssh, "log in to a task"), ("tmux", cmd_ssh, "ssh and attach to tmux"),
                           ("scp", cmd_scp, "copy: task0.job:/path on either side")):
        v = verbs.add_parser(name, help=what)
        if name == "scp":
            v.add_argument("source")
            v.add_argument("destination")
        else:
            v.add_argument("target")
        v.add_argument("--user", default="root")
        v.add_argument("--key", "-i", default=None)
        v.add_argument("--port", "-p", type=int, default=22)
        v.add_argument("--ssh-option", "-o", action="append", help="an ssh -o option (repeatable)")
        v.add_argument("--print", action="store_true", help="print the command instead of running it")
        v.set_defaults(verb=fn)
    for name, what in (("stop", "stop without charging"), ("start", "start"), ("kill", "release (delete)")):
        v = verbs.add_parser(name, help=f"{what}: a task name or {{job}}")
        v.add_argument("target")
        v.add_argument("--wait", type=float, default=300.0, help="seconds to wait for instances still booting or stopping")
        if name == "stop":
            v.add_argument("--keep-charging", action="store_true", help="StoppedMode=KeepCharging")
        v.set_defaults(verb=_verb)
    a = verbs.add_parser("addip", help="admit this machine's address to the task's security groups (SSH)")
    a.add_argument("target")
    a.add_argument("--cidr", default=None, help="default: this machine's address on the route to the endpoint, /32")
    a.add_argument("--port", type=int, default=22)
    a.set_defaults(verb=cmd_addip)
    r = verbs.add_parser("rename", help="rename an instance")
    r.add_argument("old")
    r.add_argument("new")
    r.set_defaults(verb=cmd_rename)
    c.set_defaults(fn=main)


def main(args: argparse.Namespace) -> int:
    """Run one verb; API and usage errors are one line on stderr (exit 2), secrets scrubbed."""
    if getattr(args, "remote", None) and args.command != "ssh":
        print(f"dlperf cluster {args.command}: only ssh takes a command after --", file=sys.stderr)
        return 2
    if importlib.util.find_spec("alibabacloud_ecs20140526") is None:
        print("dlperf cluster: needs the ECS SDK: pip install 'pytest-dlperf[aliyun]'", file=sys.stderr)
        return 2
    try:
        api = _api(args)
        try:
            return args.verb(args, api)
        except (CloudError, ProvisionError) as exc:
            raise CliError(api.creds.scrub(str(exc))) from None
    except CliError as exc:
        print(f"dlperf cluster {args.command}: {exc}", file=sys.stderr)
        return 2

