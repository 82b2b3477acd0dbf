"""The Aliyun cluster built from the --dlperf-aliyun-* and --dlperf-ssh-* options (AliyunOptions, SSHOptions)."""
from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import pytest

from ..progress import shown
from ..ssh.options import SSHOptions
from . import credentials
from .api import CloudError, EcsApi, LaunchSpec
from .cluster import AliyunCluster, build
from .options import AliyunOptions
from .provision import Provisioner, ProvisionError

if TYPE_CHECKING:
    from ...options.core import RunOptions


def _check(config: pytest.Config, aliyun: AliyunOptions) -> None:
    """What the session must have before any cloud call: the SDK, one provisioner, the instance's type and image."""
    if importlib.util.find_spec("alibabacloud_ecs20140526") is None:  # the SDK is an extra
        raise pytest.UsageError("--dlperf-cluster aliyun needs the ECS SDK: pip install 'pytest-dlperf[aliyun]'")
    if getattr(config, "workerinput", None) is not None:
        raise pytest.UsageError("--dlperf-cluster aliyun provisions once per session: run it without pytest-xdist "
                                "(-n), which would have every worker create and stop the same job's instances")
    need = [f"--dlperf-aliyun-{n}" for n, v in (("instance-type", aliyun.instance_type),
                                                ("image", aliyun.image)) if not v]
    if need:
        raise pytest.UsageError(f"--dlperf-cluster aliyun needs {' and '.join(need)}")
    if (aliyun.spot_strategy == "SpotWithPriceLimit") != (aliyun.spot_price_limit is not None):
        raise pytest.UsageError("--dlperf-aliyun-spot price-limit and --dlperf-aliyun-spot-price-limit go together")


def make_aliyun_cluster(config: pytest.Config, options: RunOptions, aliyun: AliyunOptions, ssh: SSHOptions,
                        frameworks: tuple[str, ...] = ()) -> AliyunCluster:
    """Provision (or reuse) the job's instances and reach them over SSH; bad input is a usage error."""
    _check(config, aliyun)
    try:
        creds = credentials.load()
        region = credentials.region(given=aliyun.region)
    except credentials.CredentialsError as exc:
        raise pytest.UsageError(f"--dlperf-cluster aliyun: {exc}") from None
    api = EcsApi(creds, region, endpoint=aliyun.endpoint, protocol=aliyun.protocol)
    spec = LaunchSpec(instance_type=aliyun.instance_type, image=aliyun.image, zone=aliyun.zone,
                      vswitch=aliyun.vswitch, security_group=aliyun.security_group, key_pair=aliyun.key_pair,
                      system_disk_gb=aliyun.system_disk_gb, data_disk_gb=aliyun.data_disk_gb,
                      spot_strategy=aliyun.spot_strategy, spot_price_limit=aliyun.spot_price_limit)
    settings = ssh.settings()
    prov = Provisioner(api, aliyun.job, options.nodes or 1, spec, ssh_port=settings.port or 22,
                       wait_running_s=aliyun.wait, wait_ssh_s=aliyun.wait, poll_s=2.0,
                       say=shown(config))
    try:
        return build(api, prov, aliyun.after, settings, options.gpus_per_node, frameworks,
                     say=prov.say, security_group=spec.security_group, admit=aliyun.admit)
    except (CloudError, ProvisionError) as exc:
        raise pytest.UsageError(f"--dlperf-cluster aliyun: {creds.scrub(str(exc))}") from None
