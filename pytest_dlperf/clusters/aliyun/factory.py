"""The Aliyun cluster built from the --dlperf-aliyun-* and --dlperf-ssh-* options."""
from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable

import pytest

from ..ssh.factory import ssh_settings
from . import credentials
from .api import CloudError, EcsApi, LaunchSpec
from .cluster import AliyunCluster, build
from .provision import Provisioner, ProvisionError

SPOT = {"no": "NoSpot", "as-price-go": "SpotAsPriceGo", "price-limit": "SpotWithPriceLimit"}


def shown(config: pytest.Config) -> Callable[[str], None]:
    """Progress lines on stderr, past pytest's output capture (provisioning happens while tests
    are collected, when pytest captures what is printed)."""
    capman = config.pluginmanager.getplugin("capturemanager")

    def say(text: str) -> None:
        if text:
            with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
                print(text, file=sys.stderr, flush=True)

    return say


def make_aliyun_cluster(config: pytest.Config, options, frameworks: tuple[str, ...] = ()) -> AliyunCluster:  # noqa: ANN001
    """Provision (or reuse) the job's instances and reach them over SSH; bad input is a usage error."""
    if importlib.util.find_spec("alibabacloud_ecs20140526") is None:  # the SDK is an extra
        raise pytest.UsageError("--dlperf-cluster aliyun needs the ECS SDK: pip install 'pytest-dlperf[aliyun]'")
    if getattr(config, "workerinput", None) is not None:
        raise pytest.UsageError("--dlperf-cluster aliyun provisions once per session: run it without pytest-xdist "
                                "(-n), which would have every worker create and stop the same job's instances")
    get = config.getoption
    need = [f"--dlperf-aliyun-{n}" for n, v in (("instance-type", get("dlperf_aliyun_instance_type")),
                                                ("image", get("dlperf_aliyun_image"))) if not v]
    if need:
        raise pytest.UsageError(f"--dlperf-cluster aliyun needs {' and '.join(need)}")
    spot = SPOT[get("dlperf_aliyun_spot")]
    if (spot == "SpotWithPriceLimit") != (get("dlperf_aliyun_spot_price_limit") is not None):
        raise pytest.UsageError("--dlperf-aliyun-spot price-limit and --dlperf-aliyun-spot-price-limit go together")
    try:
        creds = credentials.load()
        region = credentials.region(given=get("dlperf_aliyun_region"))
    except credentials.CredentialsError as exc:
        raise pytest.UsageError(f"--dlperf-cluster aliyun: {exc}") from None
    api = EcsApi(creds, region, endpoint=get("dlperf_aliyun_endpoint"), protocol=get("dlperf_aliyun_protocol"))
    spec = LaunchSpec(instance_type=get("dlperf_aliyun_instance_type"), image=get("dlperf_aliyun_image"),
                      zone=get("dlperf_aliyun_zone"), vswitch=get("dlperf_aliyun_vswitch"),
                      security_group=get("dlperf_aliyun_security_group"), key_pair=get("dlperf_aliyun_key_pair"),
                      system_disk_gb=get("dlperf_aliyun_system_disk"), data_disk_gb=get("dlperf_aliyun_data_disk"),
                      spot_strategy=spot, spot_price_limit=get("dlperf_aliyun_spot_price_limit"))
    settings = ssh_settings(config)
    wait = get("dlperf_aliyun_wait")
    prov = Provisioner(api, get("dlperf_aliyun_job"), options.nodes or 1, spec, ssh_port=settings.port or 22,
                       wait_running_s=wait, wait_ssh_s=wait, poll_s=2.0,
                       say=shown(config))
    try:
        return build(api, prov, get("dlperf_aliyun_after"), settings, options.gpus_per_node, frameworks,
                     say=prov.say,
                     security_group=spec.security_group, admit=get("dlperf_aliyun_admit"))
    except (CloudError, ProvisionError) as exc:
        raise pytest.UsageError(f"--dlperf-cluster aliyun: {creds.scrub(str(exc))}") from None
