"""The Alibaba Cloud ECS cluster kind's options (--dlperf-aliyun-*), its plugin's ``pytest_addoption``,
and :class:`AliyunOptions`, their typed values resolved once per session. Credentials come from the
environment or the Alibaba credentials file, never from an option (they would show in ps and CI logs).
Light on purpose: loaded into every pytest session, it imports no cloud SDK."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from ...options.argtypes import positive_int, positive_seconds
from ...options.groups import OptionGroup

# --dlperf-aliyun-spot: ECS's SpotStrategy for each choice.
SPOT = {"no": "NoSpot", "as-price-go": "SpotAsPriceGo", "price-limit": "SpotWithPriceLimit"}
AFTER = ("stop", "release", "keep")


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def add_options(parser: pytest.Parser) -> None:
    """--dlperf-cluster aliyun: the job's ECS instances, provisioned or reused (reached with --dlperf-ssh-*)."""
    a = OptionGroup(parser, "dlperf-aliyun", "pytest-dlperf: --dlperf-cluster aliyun (Alibaba Cloud ECS)",
                    after="dlperf-ssh")
    a("--dlperf-aliyun-instance-type", default=None, metavar="TYPE",
      help="--dlperf-cluster aliyun: the ECS instance type, e.g. ecs.gn6v-c8g1.16xlarge (also the profile name); "
           "required, with --dlperf-aliyun-image")
    a("--dlperf-aliyun-image", default=None, metavar="ID", help="the image id the instances boot")
    a("--dlperf-aliyun-region", default=None, metavar="REGION",
      help="default: ALIBABA_CLOUD_REGION_ID or FastGPU's ALIYUN_DEFAULT_REGION")
    a("--dlperf-aliyun-zone", default="", metavar="ZONE", help="the instances' zone (default: the account's)")
    a("--dlperf-aliyun-vswitch", default="", metavar="ID", help="the instances' vSwitch (default: the account's)")
    a("--dlperf-aliyun-security-group", default="", metavar="ID",
      help="its SSH port is opened to the caller's address only (--dlperf-aliyun-admit)")
    a("--dlperf-aliyun-admit", default="", metavar="CIDR",
      help="the address the security group admits (default: this machine's address on the route to the endpoint, /32)")
    a("--dlperf-aliyun-key-pair", default="", metavar="NAME", help="the ECS key pair the instances accept")
    a("--dlperf-aliyun-system-disk", type=positive_int, default=None, metavar="GB",
      help="system disk size (default: the image's)")
    a("--dlperf-aliyun-data-disk", type=positive_int, default=None, metavar="GB",
      help="data disk size (default: the image's)")
    a("--dlperf-aliyun-spot", choices=tuple(SPOT), default="no",
      help="spot instances: NoSpot (default), SpotAsPriceGo, or SpotWithPriceLimit with --dlperf-aliyun-spot-price-limit")
    a("--dlperf-aliyun-spot-price-limit", type=positive_seconds, default=None, metavar="PRICE",
      help="the spot instances' price limit; goes with --dlperf-aliyun-spot price-limit")
    a("--dlperf-aliyun-job", default="dlperf", metavar="NAME",
      help="the job: instances are named task{i}.NAME (FastGPU's names) and reused by the next session")
    a("--dlperf-aliyun-after", choices=AFTER, default="stop",
      help="when the session ends: stop without charging (default), release (delete), or keep running")
    a("--dlperf-aliyun-endpoint", default=None, metavar="HOST[:PORT]",
      help="the ECS API endpoint (default ecs.REGION.aliyuncs.com; VPC endpoints: ecs-vpc.REGION.aliyuncs.com)")
    a("--dlperf-aliyun-protocol", choices=("https", "http"), default="https", help="the ECS API's protocol")
    a("--dlperf-aliyun-wait", type=positive_seconds, default=600.0, metavar="S",
      help="seconds to wait for the instances to run and for SSH to answer (each; default 600)")


@dataclass(frozen=True)
class AliyunOptions:
    """The --dlperf-aliyun-* values."""

    instance_type: str | None = None
    image: str | None = None
    region: str | None = None
    zone: str = ""
    vswitch: str = ""
    security_group: str = ""
    admit: str = ""
    key_pair: str = ""
    system_disk_gb: int | None = None
    data_disk_gb: int | None = None
    spot: str = "no"  # a key of SPOT
    spot_price_limit: float | None = None
    job: str = "dlperf"
    after: str = "stop"
    endpoint: str | None = None
    protocol: str = "https"
    wait: float = 600.0

    @classmethod
    def from_config(cls, config: pytest.Config) -> AliyunOptions:
        get = config.getoption
        return cls(instance_type=get("dlperf_aliyun_instance_type"), image=get("dlperf_aliyun_image"),
                   region=get("dlperf_aliyun_region"), zone=get("dlperf_aliyun_zone"),
                   vswitch=get("dlperf_aliyun_vswitch"), security_group=get("dlperf_aliyun_security_group"),
                   admit=get("dlperf_aliyun_admit"), key_pair=get("dlperf_aliyun_key_pair"),
                   system_disk_gb=get("dlperf_aliyun_system_disk"), data_disk_gb=get("dlperf_aliyun_data_disk"),
                   spot=get("dlperf_aliyun_spot"), spot_price_limit=get("dlperf_aliyun_spot_price_limit"),
                   job=get("dlperf_aliyun_job"), after=get("dlperf_aliyun_after"),
                   endpoint=get("dlperf_aliyun_endpoint"), protocol=get("dlperf_aliyun_protocol"),
                   wait=get("dlperf_aliyun_wait"))

    @property
    def spot_strategy(self) -> str:
        """ECS's SpotStrategy for --dlperf-aliyun-spot."""
        return SPOT[self.spot]
