"""FastGPU's semantics for a job's instances: named ``task{i}.{job}`` and tagged; a complete set of
the same spec is reused (started if stopped), a partial or mismatched one is an error naming what
exists, else the set is created. Bounded waits for Running and for SSH, with progress. Whatever
goes wrong while acquiring, what this session created is released and what it started is stopped."""
from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .api import CloudError, EcsApi, Instance, LaunchSpec

AFTER = ("stop", "release", "keep")
MOVING = ("Pending", "Starting", "Stopping")  # states in which an instance can be neither stopped nor released  # what happens to the job's instances when the session ends


class ProvisionError(Exception):
    """The instances could not be had; the message says what exists and what was cleaned up."""


def task_name(index: int, job: str) -> str:
    return f"task{index}.{job}"


@dataclass
class Provisioner:
    api: EcsApi
    job: str
    count: int
    spec: LaunchSpec
    ssh_port: int = 22
    wait_running_s: float = 600.0
    wait_ssh_s: float = 300.0
    poll_s: float = 5.0
    check_ssh: bool = True  # also wait for sshd's banner on every instance
    say: Callable[[str], None] = print
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    created: list[str] = field(default_factory=list)  # ids this session created
    started: list[str] = field(default_factory=list)  # ids this session started (they were stopped)
    instances: list[Instance] = field(default_factory=list)
    creating: bool = False  # this session began creating the job's instances (the job had none)
    settle_s: float = 300.0  # clean-up waits this long for instances to leave Pending/Starting/Stopping

    def acquire(self) -> list[Instance]:
        """The job's ``count`` instances, Running and answering on the SSH port, in task order."""
        try:
            self._find_or_create()
            self.instances = self._wait_running()
            if self.check_ssh:
                self._wait_ssh(self.instances)
            return self.instances
        except BaseException as exc:  # API error, timeout, Ctrl-C, SIGTERM: undo this session's part
            undone = self.undo()
            if isinstance(exc, (CloudError, ProvisionError)):
                raise ProvisionError(f"{exc}{undone}") from None
            if undone:
                self.say(undone.strip())
            raise

    def _find_or_create(self) -> None:
        names = [task_name(i, self.job) for i in range(self.count)]
        found = {i.name: i for i in self.api.describe(self.job) if i.status not in ("Deleted", "Released")}
        have = [n for n in names if n in found]
        if not have:
            self.creating = True
            for name in names:
                self.say(f"aliyun: creating {name} ({self.spec.instance_type})")
                self.created.append(self.api.run(self.spec, name, self.job))
            return
        if len(have) < len(names):
            missing = [n for n in names if n not in found]
            raise ProvisionError(f"job {self.job!r}: {len(have)} of {self.count} instances exist "
                                 f"({', '.join(f'{n} {found[n].id} {found[n].status}' for n in have)}); missing "
                                 f"{', '.join(missing)}. Release them (dlperf cluster kill {self.job}) or ask for "
                                 f"--nodes {len(have)}")
        bad = [(n, d) for n in names if (d := self.spec.differences(found[n]))]
        if bad:
            raise ProvisionError(f"job {self.job!r}: existing instances differ from what was asked: "
                                 + "; ".join(f"{n}: {', '.join(d)}" for n, d in bad)
                                 + ". Use another job name (--dlperf-aliyun-job) or release them")
        stopped = [found[n].id for n in names if found[n].status in ("Stopped", "Stopping")]
        self.say(f"aliyun: reusing {', '.join(names)}" + (f"; starting {len(stopped)}" if stopped else ""))
        if stopped:
            self._start_when_stopped(stopped)

    def _start_when_stopped(self, ids: list[str]) -> None:
        deadline = self.clock() + self.wait_running_s
        while True:
            state = {i.id: i.status for i in self.api.describe(self.job)}
            if all(state.get(i) == "Stopped" for i in ids):
                break
            if self.clock() > deadline:
                raise ProvisionError(f"job {self.job!r}: instances still stopping after {self.wait_running_s:g}s")
            self.sleep(self.poll_s)
        self.api.start(ids)
        self.started.extend(ids)

    def _wait_running(self) -> list[Instance]:
        names = [task_name(i, self.job) for i in range(self.count)]
        deadline = self.clock() + self.wait_running_s
        last = ""
        while True:
            found = {i.name: i for i in self.api.describe(self.job)}
            now = [found.get(n) for n in names]
            ready = [i for i in now if i is not None and i.status == "Running" and i.public_ip]
            line = f"aliyun: {len(ready)}/{self.count} running"
            if line != last:
                self.say(line)
                last = line
            if len(ready) == self.count:
                return ready
            if self.clock() > deadline:
                states = ", ".join(f"{n} {i.status if i else 'absent'}" for n, i in zip(names, now))
                raise ProvisionError(f"job {self.job!r}: not all Running with a public IP after "
                                     f"{self.wait_running_s:g}s ({states})")
            self.sleep(self.poll_s)

    def _wait_ssh(self, instances: list[Instance]) -> None:
        deadline = self.clock() + self.wait_ssh_s
        waiting = list(instances)
        while waiting:
            waiting = [i for i in waiting if not _port_open(i.public_ip, self.ssh_port)]
            if not waiting:
                break
            if self.clock() > deadline:
                raise ProvisionError(f"job {self.job!r}: SSH (port {self.ssh_port}) did not answer within "
                                     f"{self.wait_ssh_s:g}s on " + ", ".join(f"{i.name} {i.public_ip}" for i in waiting))
            self.sleep(min(self.poll_s, 1.0))
        self.say(f"aliyun: SSH answers on all {len(instances)}")

    def undo(self) -> str:
        """Release what this session created, stop what it started; a sentence saying so ('' if nothing).

        Created means every ``task{i}.{job}`` instance now there, not only the ids recorded: a
        creation interrupted mid-call, or whose reply was lost, still made one (the job had none
        before). An instance still booting or stopping cannot be released or stopped: wait for it."""
        parts = []
        if self.creating:
            try:
                names = {task_name(i, self.job) for i in range(self.count)}
                made = sorted({*self.created, *(i.id for i in self.api.describe(self.job) if i.name in names)})
            except CloudError as exc:
                made = list(self.created)
                parts.append(f"could not list the job's instances ({exc})")
            parts += self._apply(made, self.api.delete, "released the {n} instance(s) this session created ({ids})",
                                 "could NOT release {ids}: {exc}: release them in the console or with dlperf cluster kill")
            self.created, self.creating = [], False
        if self.started:
            parts += self._apply(list(self.started), self.api.stop, "stopped the {n} instance(s) this session started ({ids})",
                                 "could NOT stop {ids}: {exc}")
            self.started = []
        return "".join(f"; {p}" for p in parts)

    def _apply(self, ids: list[str], act: Callable[[list[str]], None], done: str, failed: str) -> list[str]:
        if not ids:
            return []
        shown = ", ".join(ids)
        try:
            self._settle(ids)
            act(ids)
            return [done.format(n=len(ids), ids=shown)]
        except (CloudError, ProvisionError) as exc:
            return [failed.format(ids=shown, exc=exc)]

    def _settle(self, ids: list[str]) -> None:
        """Wait (bounded) until none of ``ids`` is Pending, Starting or Stopping."""
        settled(lambda: [i for i in self.api.describe(self.job) if i.id in ids], self.settle_s,
                min(self.poll_s, 1.0), self.clock, self.sleep)

    def finish(self, after: str) -> str:
        """At the session's end: stop (StopCharging), release or keep the job's instances."""
        if after not in AFTER:
            raise ValueError(f"after={after!r}: one of {', '.join(AFTER)}")
        ids = [i.id for i in self.instances]
        if not ids or after == "keep":
            return f"aliyun: kept {len(ids)} instance(s) of job {self.job!r} running" if ids else ""
        if after == "release":
            self.api.delete(ids)
            return f"aliyun: released {len(ids)} instance(s) of job {self.job!r}"
        self.api.stop(ids)
        return f"aliyun: stopped {len(ids)} instance(s) of job {self.job!r} (StopCharging; --dlperf-aliyun-after release deletes them)"


def settled(now: Callable[[], list[Instance]], wait: float, poll: float,
            clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> list[Instance]:
    """``now()``'s instances once none is Pending, Starting or Stopping (ECS neither stops, starts
    nor releases those), asking every ``poll`` s for at most ``wait`` s; else ProvisionError."""
    deadline = clock() + wait
    while True:
        insts = now()
        moving = [i for i in insts if i.status in MOVING]
        if not moving:
            return insts
        if clock() > deadline:
            raise ProvisionError(f"still {', '.join(f'{i.name} {i.status}' for i in moving)} after {wait:g}s")
        sleep(poll)


def _port_open(host: str, port: int, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            return s.recv(4).startswith(b"SSH")  # sshd speaks first: a banner, not just an open port
    except OSError:
        return False
