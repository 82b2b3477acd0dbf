"""TensorFlow 2 MultiWorkerMirroredStrategy: one worker process per device (per slot on CPU nodes),
each with its ``TF_CONFIG``; every worker listens on a port chosen on its own node."""
from __future__ import annotations

import json
import shlex

from ..clusters.base import NodeCommand
from ..specs import Topology
from .base import Launcher, ModelDefaults, RunPlan


# Gradients all-reduced in packs of 32 MiB, not one collective per variable: BERT-base's 200 small
# all-reduces over gRPC took 2.0 s a step on two CPU workers here, packed 1.35 s (TF's own advice
# for MultiWorkerMirroredStrategy: CommunicationOptions(bytes_per_pack=...)).
BYTES_PER_PACK = 32 << 20


class TFLauncher(Launcher):
    """``TF_CONFIG='{"cluster": {"worker": [...]}, "task": {...}}' python tf_mwms.py ...`` per worker."""

    name = "tf"
    unprofiled = ("TensorFlow's profiler writes XPlane protobufs for TensorBoard, not the Chrome trace this diff "
                  "reads")
    framework = "tensorflow"
    models = ("resnet50", "vgg16", "bert-base")
    workload_files = ("tf_mwms.py", "tf_data.py", "dataset.py")
    loader = "tf"  # the NGC recipe's TFRecord shards through tf.data (node/workloads/tf_data.py)
    # CPU: TensorFlow pays more per small step than PyTorch here; sized for the 6-minute budget.
    defaults = {
        "cpu": {"resnet50": ModelDefaults(8, 64), "vgg16": ModelDefaults(4, 32), "bert-base": ModelDefaults(2, 32)},
        "gpu": {"resnet50": ModelDefaults(128, 224), "vgg16": ModelDefaults(64, 224),
                "bert-base": ModelDefaults(32, 128)},
    }

    def ports_needed(self, topology: Topology) -> int:
        return topology.devices_per_node  # one gRPC server per worker

    def variants(self, profile: str, model: str) -> tuple[str, ...]:
        """XLA on/off, as the AIACC benchmark's --disable_xla. On CPU nodes compiling a whole
        training step with XLA costs more than the suite's budget: off only (-k xla on GPUs)."""
        return ("xla", "noxla") if profile == "gpu" else ("noxla",)

    def install_hint(self) -> str:
        return "pip install 'pytest-dlperf[tf]' (tensorflow-cpu; GPU nodes: pip install 'tensorflow[and-cuda]')"

    def commands(self, plan: RunPlan) -> list[NodeCommand]:
        case, m, topo = plan.case, plan.measurement, plan.case.topology
        g = topo.devices_per_node
        workers = [f"{plan.addresses[n.name]}:{plan.ports[n.name][k]}" for n in plan.nodes for k in range(g)]
        cmds = []
        for node_index, node in enumerate(plan.nodes):
            threads = self.threads_per_worker(node, g) if node.gpus == 0 else 0
            env = self.worker_env(plan, node)  # threads go by --threads (TensorFlow's own pools)
            per_worker = []
            for k in range(g):
                index = node_index * g + k
                tf_config = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}},
                                       separators=(",", ":"))
                argv = [node.python, plan.workload[node.name],
                        *self.workload_flags(case, m, threads, plan.output_path(node), plan.checkpoint),
                        "--xla", "on" if case.variant == "xla" else "off", "--bytes-per-pack", str(BYTES_PER_PACK),
                        "--local-worker", str(k), *self.data_flags(plan, node)]
                per_worker.append(({"TF_CONFIG": tf_config}, argv))
            if g == 1:
                (wenv, argv), = per_worker
                cmds.append(NodeCommand(node, argv, {**env, **wenv}, cwd=plan.run_dirs[node.name]))
                continue
            # Several workers on a node: one shell starts them all and fails when any fails.
            lines = [" ".join(f"{k}={shlex.quote(v)}" for k, v in wenv.items()) + " " + shlex.join(argv) + " &"
                     for wenv, argv in per_worker]
            lines.append("for p in $(jobs -p); do wait $p || exit 1; done")
            cmds.append(NodeCommand(node, ["bash", "-c", "\n".join(lines)], env, cwd=plan.run_dirs[node.name]))
        return cmds
