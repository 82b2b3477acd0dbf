"""The ECS calls the provisioner makes, through the official SDK (``alibabacloud-ecs20140526``):
typed results, throttling retried with backoff, every error a CloudError with the secret scrubbed."""
from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from .credentials import Credentials

# Codes the service answers when it is asked too often or is briefly unavailable, and a reply that
# never came (timeout, dropped connection): retried. RunInstances carries a ClientToken, so a retry
# after a lost reply returns the instance the first call created instead of a second one.
RETRIED = ("Throttling", "ServiceUnavailable", "InternalError", "NetworkError")
TAG_KEY = "dlperf-job"
_SDK_MESSAGE = re.compile(r"^code: \d+, (.*?)(?: request id: \S+)?$", re.DOTALL)  # every instance a session creates carries its job name under this tag


class CloudError(Exception):
    """An ECS call that failed: the API's code and message, the request id (for a support ticket)."""

    def __init__(self, action: str, code: str, message: str, request_id: str = "", status: int | None = None) -> None:
        self.action, self.code, self.message, self.request_id, self.status = action, code, message, request_id, status
        rid = f" (RequestId {request_id})" if request_id else ""
        super().__init__(f"ECS {action}: {code}: {message}{rid}")


@dataclass(frozen=True)
class Instance:
    """What the provisioner needs of one ECS instance."""

    id: str
    name: str
    instance_type: str
    status: str  # Pending, Starting, Running, Stopping, Stopped
    image: str = ""
    zone: str = ""
    public_ip: str = ""
    private_ip: str = ""
    created: str = ""  # ISO 8601, as DescribeInstances gives it
    stopped_mode: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    spot_strategy: str = ""
    security_groups: tuple[str, ...] = ()
    key_pair: str = ""

    @property
    def job(self) -> str:
        return self.tags.get(TAG_KEY, "")


@dataclass(frozen=True)
class LaunchSpec:
    """What RunInstances is asked for; reuse compares an existing instance with it."""

    instance_type: str
    image: str
    zone: str = ""
    vswitch: str = ""
    security_group: str = ""
    key_pair: str = ""
    system_disk_gb: int | None = None
    data_disk_gb: int | None = None
    spot_strategy: str = "NoSpot"  # NoSpot | SpotAsPriceGo | SpotWithPriceLimit
    spot_price_limit: float | None = None
    bandwidth_out: int = 10  # Mbit/s of public bandwidth: the harness reaches the nodes over SSH

    def differences(self, inst: Instance) -> list[str]:
        """How an existing instance differs from this spec (what reuse cannot accept)."""
        out = []
        if inst.instance_type != self.instance_type:
            out.append(f"instance type {inst.instance_type} (asked {self.instance_type})")
        if self.image and inst.image and inst.image != self.image:
            out.append(f"image {inst.image} (asked {self.image})")
        if self.zone and inst.zone and inst.zone != self.zone:
            out.append(f"zone {inst.zone} (asked {self.zone})")
        return out


class EcsApi:
    """One region's ECS, through the SDK client; ``endpoint`` HOST[:PORT] overrides the public one."""

    def __init__(self, creds: Credentials, region: str, endpoint: str | None = None, protocol: str = "https",
                 attempts: int = 6, backoff: float = 1.0, sleep: Callable[[float], None] = time.sleep,
                 timeout_ms: int = 30000) -> None:
        from alibabacloud_ecs20140526.client import Client
        from alibabacloud_tea_openapi import models as open_api_models

        self.creds, self.region = creds, region
        self.attempts, self.backoff, self.sleep = attempts, backoff, sleep
        self.timeout_ms = timeout_ms
        self.endpoint = endpoint or f"ecs.{region}.aliyuncs.com"
        config = open_api_models.Config(access_key_id=creds.access_key_id, access_key_secret=creds.access_key_secret,
                                        region_id=region, protocol=protocol, read_timeout=timeout_ms,
                                        connect_timeout=timeout_ms,
                                        endpoint=self.endpoint)
        self.client = Client(config)

    @property
    def endpoint_host(self) -> str:
        """The endpoint's host, without a scheme or port."""
        return self.endpoint.split("://")[-1].split(":")[0]

    # ------------------------------------------------------------------ calls
    def _call(self, action: str, method: Callable, request, done_if: tuple[str, ...] = ()):
        """One API call, retried with exponential backoff while the service throttles or no reply
        comes. ``done_if``: codes that, on a retry after a lost reply, mean the lost try did the
        work (IncorrectInstanceStatus when stopping an instance that is now stopping)."""
        from alibabacloud_tea_util import models as util_models

        runtime = util_models.RuntimeOptions(read_timeout=self.timeout_ms, connect_timeout=self.timeout_ms)
        delay, lost = self.backoff, False  # lost: an earlier try's reply never came
        for attempt in range(1, self.attempts + 1):
            try:
                return method(request, runtime).body
            except Exception as exc:  # the SDK raises its own classes; code/message/data on them
                err = self._cloud_error(action, exc)
                if lost and err.code in done_if:
                    return None
                lost = lost or err.code == "NetworkError"
                if attempt < self.attempts and err.code.startswith(RETRIED):
                    self.sleep(delay)
                    delay = min(delay * 2, 30.0)
                    continue
                raise err from None
        raise AssertionError("unreachable")

    def _cloud_error(self, action: str, exc: Exception) -> CloudError:
        code = str(getattr(exc, "code", "") or "")
        message = str(getattr(exc, "message", "") or exc)
        if not code:
            inner = getattr(exc, "inner_exception", None)
            if type(exc).__name__ == "UnretryableException" or isinstance(exc, (ConnectionError, TimeoutError)):
                code, message = "NetworkError", f"no reply ({type(exc).__name__}: {inner or exc})"
            else:  # the SDK refusing a request before sending it (validation), or a bug: not retried
                code = type(exc).__name__
        m = _SDK_MESSAGE.match(message)  # the SDK's "code: 400, <Message> request id: <id>"
        message = m.group(1) if m else message
        data = getattr(exc, "data", None)
        request_id = str(data.get("RequestId", "")) if isinstance(data, dict) else ""
        status = getattr(exc, "statusCode", None) or (data.get("statusCode") if isinstance(data, dict) else None)
        scrub = self.creds.scrub
        return CloudError(action, scrub(code), scrub(message), scrub(request_id), status)

    def describe(self, job: str | None) -> list[Instance]:
        """Every instance of the region tagged with this job name (None: with any job), all pages."""
        from alibabacloud_ecs20140526 import models as m

        out: list[Instance] = []
        page = 1
        while True:  # PageNumber/PageSize paging, which every version of the API answers
            req = m.DescribeInstancesRequest(region_id=self.region, page_number=page, page_size=100,
                                             tag=[m.DescribeInstancesRequestTag(key=TAG_KEY, value=job)])
            body = self._call("DescribeInstances", self.client.describe_instances_with_options, req)
            got = [_instance(i) for i in (body.instances.instance if body.instances else None) or []]
            out += got
            if not got or len(out) >= (body.total_count or 0):
                break
            page += 1
        # The names decide (FastGPU's task{i}.{job}): tags are the filter, not the only guard.
        return [i for i in out if job is None or i.name.endswith(f".{job}")]

    def run(self, spec: LaunchSpec, name: str, job: str) -> str:
        """RunInstances for one instance named ``name``, tagged with the job; its id."""
        from alibabacloud_ecs20140526 import models as m

        req = m.RunInstancesRequest(
            region_id=self.region, instance_type=spec.instance_type, image_id=spec.image, amount=1,
            instance_name=name, host_name=name.replace(".", "-"), zone_id=spec.zone or None,
            v_switch_id=spec.vswitch or None, security_group_id=spec.security_group or None,
            key_pair_name=spec.key_pair or None, internet_max_bandwidth_out=spec.bandwidth_out,
            spot_strategy=spec.spot_strategy, spot_price_limit=spec.spot_price_limit,
            system_disk=m.RunInstancesRequestSystemDisk(size=spec.system_disk_gb) if spec.system_disk_gb else None,
            data_disk=[m.RunInstancesRequestDataDisk(size=spec.data_disk_gb, delete_with_instance=True)]
            if spec.data_disk_gb else None,
            tag=[m.RunInstancesRequestTag(key=TAG_KEY, value=job)],
            client_token=uuid.uuid4().hex)  # the same token on every retry of this one creation
        body = self._call("RunInstances", self.client.run_instances_with_options, req)
        ids = body.instance_id_sets.instance_id_set if body.instance_id_sets else []
        if not ids:
            raise CloudError("RunInstances", "NoInstanceId", f"the answer named no instance for {name}", body.request_id or "")
        return ids[0]

    def start(self, ids: list[str]) -> None:
        from alibabacloud_ecs20140526 import models as m

        self._call("StartInstances", self.client.start_instances_with_options,
                   m.StartInstancesRequest(region_id=self.region, instance_id=ids), done_if=("IncorrectInstanceStatus",))

    def stop(self, ids: list[str], charging: bool = False) -> None:
        """Stop; by default without charging for the stopped instances' compute (StopCharging)."""
        from alibabacloud_ecs20140526 import models as m

        self._call("StopInstances", self.client.stop_instances_with_options,
                   m.StopInstancesRequest(region_id=self.region, instance_id=ids,
                                          stopped_mode="KeepCharging" if charging else "StopCharging"),
                   done_if=("IncorrectInstanceStatus",))

    def delete(self, ids: list[str]) -> None:
        """Release, running or not (Force)."""
        from alibabacloud_ecs20140526 import models as m

        self._call("DeleteInstances", self.client.delete_instances_with_options,
                   m.DeleteInstancesRequest(region_id=self.region, instance_id=ids, force=True),
                   done_if=("InvalidInstanceId.NotFound",))

    def allow_ssh(self, security_group: str, cidr: str, port: int = 22) -> None:
        """Admit ``cidr`` (the caller's address, /32) to the SSH port (the same rule again is accepted)."""
        from alibabacloud_ecs20140526 import models as m

        self._call("AuthorizeSecurityGroup", self.client.authorize_security_group_with_options,
                   m.AuthorizeSecurityGroupRequest(region_id=self.region, security_group_id=security_group,
                                                   ip_protocol="tcp", port_range=f"{port}/{port}",
                                                   source_cidr_ip=cidr, policy="accept",
                                                   description="pytest-dlperf: SSH from the harness"))


    def rename(self, instance_id: str, name: str) -> None:
        from alibabacloud_ecs20140526 import models as m

        self._call("ModifyInstanceAttribute", self.client.modify_instance_attribute_with_options,
                   m.ModifyInstanceAttributeRequest(instance_id=instance_id, instance_name=name,
                                                    host_name=name.replace(".", "-")))


def _instance(i) -> Instance:
    """An SDK DescribeInstances instance -> Instance."""
    public = list(i.public_ip_address.ip_address or []) if i.public_ip_address else []
    if not public and i.eip_address and i.eip_address.ip_address:
        public = [i.eip_address.ip_address]
    private = []
    if i.vpc_attributes and i.vpc_attributes.private_ip_address:
        private = list(i.vpc_attributes.private_ip_address.ip_address or [])
    tags = {t.tag_key: t.tag_value for t in (i.tags.tag if i.tags else None) or []}
    return Instance(id=i.instance_id, name=i.instance_name or "", instance_type=i.instance_type or "",
                    status=i.status or "", image=i.image_id or "", zone=i.zone_id or "",
                    public_ip=public[0] if public else "", private_ip=private[0] if private else "",
                    created=i.creation_time or "", stopped_mode=i.stopped_mode or "", tags=tags,
                    spot_strategy=i.spot_strategy or "", key_pair=i.key_pair_name or "",
                    security_groups=tuple((i.security_group_ids.security_group_id or []) if i.security_group_ids else ()))
