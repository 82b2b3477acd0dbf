"""``--dlperf-cluster aliyun``: ECS instances provisioned (or reused) for the session, then reached as
an SSH cluster; when the session ends they are stopped without charging, released, or kept."""
from __future__ import annotations

import dataclasses
import ipaddress
import socket
import sys
from collections.abc import Callable, Sequence

from ..base import ClusterError, Node
from ..hosts import HostSpec
from ..ssh.cluster import SSHCluster
from ..ssh.connect import SSHSettings
from .api import EcsApi, Instance
from .provision import Provisioner


class AliyunCluster(SSHCluster):
    """The job's instances as SSH nodes; the nodes reach each other at their VPC addresses."""

    kind = "aliyun"

    def __init__(self, provisioner: Provisioner, after: str, settings: SSHSettings, slots: int | None = None,
                 frameworks: Sequence[str] = ("torch",), say: Callable[[str], None] | None = None) -> None:
        self.provisioner, self.after = provisioner, after
        self.say = say or (lambda text: print(text, file=sys.stderr, flush=True) if text else None)
        instances = provisioner.acquire()  # releases what it created itself if this fails
        self.instances: dict[str, Instance] = {i.public_ip: i for i in instances}
        try:
            super().__init__([HostSpec(i.public_ip, slots) for i in instances], settings, slots=slots,
                             frameworks=frameworks, require_frameworks=False)
        except BaseException:  # the nodes cannot be reached: undo this session's part, keep the error
            self.say(self.provisioner.undo().lstrip("; "))
            raise

    def nodes(self) -> list[Node]:
        """The SSH nodes, each with its instance's type (the hardware profile) and VPC address."""
        out = []
        for node in super().nodes():
            inst = self.instances.get(node.name.split("@")[-1])
            if inst is None:
                out.append(node)
                continue
            extra = {**node.extra, "instance_type": inst.instance_type, "instance_id": inst.id,
                     "instance_name": inst.name}
            # The VPC address where the instance has it on an interface (a real ECS instance); else the
            # address the harness reached it at (an emulator's instances, whose VPC addresses are fiction).
            local = node.extra.get("local_addresses", "").split(",")
            address = inst.private_ip if inst.private_ip and inst.private_ip in local else node.address
            out.append(dataclasses.replace(node, address=address, extra=extra))
        return out

    def describe(self) -> dict:
        d = super().describe()
        d["instances"] = [{"name": i.name, "id": i.id, "type": i.instance_type, "zone": i.zone}
                          for i in self.instances.values()]
        return d

    def close(self) -> None:
        try:
            super().close()
        finally:
            try:
                self.say(self.provisioner.finish(self.after))
            except Exception as exc:  # noqa: BLE001 - say it; never leave it unsaid
                ids = ", ".join(i.id for i in self.instances.values())
                raise ClusterError(f"aliyun: could not {self.after} instances {ids}: {exc}. Do it in the "
                                   "console or with dlperf cluster") from None


def caller_cidr(endpoint_host: str, say: Callable[[str], None] | None = None) -> str:
    """This machine's address on the route to the endpoint, as a /32 (the security group admits it).
    A private address is what the group sees only from inside the VPC: said, so NAT users pass theirs."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((endpoint_host, 443))
        address = s.getsockname()[0]
    ip = ipaddress.ip_address(address)
    if say is not None and ip.is_private and not ip.is_loopback:
        say(f"aliyun: admitting {address}/32, a private address: from outside the instances' VPC (behind NAT) "
            "pass your public address with --dlperf-aliyun-admit A.B.C.D/32")
    return f"{address}/32"


def build(api: EcsApi, provisioner: Provisioner, after: str, settings: SSHSettings, slots: int | None,
          frameworks: Sequence[str], security_group: str = "", admit: str = "",
          say: Callable[[str], None] | None = None) -> AliyunCluster:
    """Admit the caller to the security group's SSH port, then provision and connect."""
    if security_group:
        api.allow_ssh(security_group, admit or caller_cidr(api.endpoint_host, say), settings.port or 22)
    return AliyunCluster(provisioner, after, settings, slots=slots, frameworks=frameworks, say=say)
