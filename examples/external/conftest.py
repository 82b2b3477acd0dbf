"""An external benchmark suite: the user's own training script (user_train.py, which prints
DLLogger records as NVIDIA's DeepLearningExamples do), launched by the harness with torchrun over
the cluster, its output read by the dllogger parser, gated against baselines like the built-in
workloads. ``user-train-hvd`` runs the same script under horovodrun and reads Horovod's synthetic
benchmark lines. Select one with ``--backend``:

    pytest examples/external --backend user-train
    pytest examples/external --backend ddp,user-train     # beside the project's own DDP workload
"""
from __future__ import annotations

from pathlib import Path

from pytest_dlperf.launchers.external import ExternalBenchmark, hookimpls

HERE = Path(__file__).resolve().parent
WARMUP, ITERS = 5, 30  # the script's own warm-up and measured steps; the parser drops the same warm-up
COMMON = dict(
    warmup_iters=WARMUP,
    files=(HERE / "user_train.py",), models=("resnet18",), framework="torch",
    sizes={"cpu": {"resnet18": (8, 32)}, "gpu": {"resnet18": (128, 224)}},
    precision_args={"fp32": (), "amp": ("--amp",)},
    install_hint="pip install torch==2.13.0 (CPU nodes: --index-url https://download.pytorch.org/whl/cpu)",
)
ARGS = ("{script}", "--arch", "{model_name}", "--batch-size", "{batch_size}", "--image-size", "{image_size}",
        "--warmup", str(WARMUP), "--iters", str(ITERS), "{precision_args}")

USER_TRAIN = ExternalBenchmark(name="user-train", program=(*ARGS, "--dist", "torch", "--print", "dllogger"),
                               format="dllogger", launch="torchrun", **COMMON)
USER_TRAIN_HVD = ExternalBenchmark(name="user-train-hvd", program=(*ARGS, "--dist", "horovod", "--print", "horovod"),
                                   format="horovod", launch="horovodrun", **COMMON)

pytest_dlperf_backends, pytest_dlperf_make_launcher = hookimpls(USER_TRAIN, USER_TRAIN_HVD)
