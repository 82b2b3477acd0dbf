#!/usr/bin/env python3
"""TensorFlow 2 data-parallel training benchmark on synthetic data (or TFRecord shards, --data real), one
process per worker.

Runs on the nodes and imports nothing from the harness. ``--engine mwms`` (default):
MultiWorkerMirroredStrategy; each worker gets its ``TF_CONFIG`` (the cluster's worker addresses and
its own index) from the environment, as TensorFlow's own multi-worker jobs do. The training step is
a custom loop (``strategy.run`` inside a ``tf.function``, XLA-compiled with ``--xla on``): Keras 3's
``model.fit`` fails across workers (keras-team/keras#20585). ``--engine horovod|perseus``: started
by horovodrun/perseusrun; the gradients of the same custom loop are all-reduced with
``hvd.grouped_allreduce`` (Horovod's Keras optimizer with Keras 3 was seen to train without
synchronising, and ``DistributedGradientTape`` calls ``Variable.ref()``, which Keras 3 variables lack).
The command ``pytest --dlperf-dryrun`` prints starts it by hand.

Timing as the torch workload: warm-up until two steps agree within 10% (bounded), then a window
with a collective barrier at each end and a timestamp per step on every worker, no sync inside.
Output through ``steplog.py`` (the contract, beside this file): meta, steps, and each worker's
parameter digest at the end, so a run whose workers stopped synchronising fails.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# A temporary directory of this worker's own, beside the workload (a run directory of the harness):
# autograph writes a generated module per traced function to the temporary directory and removes
# them only in an atexit hook, which the os._exit at the end skips, so a node's /tmp gathered
# thousands of __autograph_generated_file*.py. Removed at the end; a killed worker's stays here.
PRIVATE_TMP = tempfile.mkdtemp(prefix=f"tmp-{os.getpid()}-", dir=os.path.dirname(os.path.abspath(__file__)))
os.environ["TMPDIR"] = tempfile.tempdir = PRIVATE_TMP

import tensorflow as tf  # noqa: E402

import checkpoints  # noqa: E402  (the timed checkpoint, copied beside this file)
import steplog  # noqa: E402  (the step-log contract, copied beside this file)
import workloadkit  # noqa: E402  (the flags every workload takes, copied beside it as steplog.py)
from nodefacts import cpu_model  # noqa: E402  (copied beside this file, as steplog.py)

START = steplog.StartClock()  # the launch's and this process's start: time to first step
START.mark("imports")


class TfGpuMemory:
    """A worker's peak GPU memory over the window (steplog.MemoryProbe): TensorFlow's allocator
    statistics of its first GPU (tf.config.experimental.get_memory_info, reset_memory_stats)."""

    def __init__(self, device: str) -> None:
        self.device = device

    def reset(self) -> None:
        tf.config.experimental.reset_memory_stats(self.device)

    def peak(self) -> dict:
        return {"bytes": int(tf.config.experimental.get_memory_info(self.device)["peak"]),
                "kind": "tf_gpu_allocated", "scope": "window"}

MODELS = ("resnet50", "vgg16", "bert-base")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workloadkit.add_arguments(p, MODELS, {"real": "--data-dir's TFRecord shards through tf.data (tf_data.py)"},
                              ("mwms", "horovod", "perseus"))
    p.add_argument("--xla", choices=("on", "off"), default="off", help="jit_compile the training step")
    p.add_argument("--bytes-per-pack", type=int, default=0,
                   help="all-reduce gradients in packs of about this many bytes (0: one all-reduce per variable)")
    p.add_argument("--local-worker", type=int, default=0, help="this worker's index on its node (its GPU)")
    return p.parse_args(argv)


def bert_base(seq_len: int, num_classes: int, vocab: int = 30522) -> tf.keras.Model:
    """BERT-base (12 layers, hidden 768, 12 heads, GELU FFN 3072) for sequence classification."""
    layers = tf.keras.layers
    ids = layers.Input((seq_len,), dtype="int32")
    x = layers.Embedding(vocab, 768)(ids)
    x = x + layers.Embedding(512, 768)(tf.range(seq_len)[None, :])
    x = layers.Dropout(0.1)(layers.LayerNormalization(epsilon=1e-12)(x))
    for _ in range(12):
        a = layers.MultiHeadAttention(12, 64, dropout=0.1)(x, x)
        x = layers.LayerNormalization(epsilon=1e-12)(x + layers.Dropout(0.1)(a))
        f = layers.Dense(768)(layers.Dense(3072, activation="gelu")(x))
        x = layers.LayerNormalization(epsilon=1e-12)(x + layers.Dropout(0.1)(f))
    pooled = layers.Dense(768, activation="tanh")(x[:, 0])
    out = layers.Dense(num_classes, dtype="float32")(pooled)
    return tf.keras.Model(ids, out)


def build_model(args: argparse.Namespace) -> tf.keras.Model:
    if args.model == "bert-base":
        return bert_base(args.image_size, 2)
    app = {"resnet50": tf.keras.applications.ResNet50, "vgg16": tf.keras.applications.VGG16}[args.model]
    return app(weights=None, input_shape=(args.image_size, args.image_size, 3), classes=args.num_classes,
               classifier_activation=None)


class MirroredComm:
    """MultiWorkerMirroredStrategy: the step runs under ``strategy.run``; collectives through it."""

    def __init__(self, args: argparse.Namespace, gpus: list) -> None:
        comm = tf.distribute.experimental.CommunicationOptions(
            bytes_per_pack=args.bytes_per_pack,
            implementation=tf.distribute.experimental.CommunicationImplementation.NCCL if gpus
            else tf.distribute.experimental.CommunicationImplementation.RING)
        self.strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=comm)
        tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
        self.rank = int(tf_config.get("task", {}).get("index", 0))
        self.world = self.strategy.num_replicas_in_sync
        self.nnodes = len(tf_config.get("cluster", {}).get("worker", [1]))
        self.name = "grpc+" + ("nccl" if gpus else "ring")
        self.versions: dict[str, str] = {}

        @tf.function
        def all_gather(v):  # a collective: also the barrier at each end of the window
            ctx = lambda t: tf.distribute.get_replica_context().all_gather(t[None], axis=0)  # noqa: E731
            return self.strategy.run(ctx, args=(v,))
        self._all_gather = all_gather

    def scope(self):
        return self.strategy.scope()

    def allreduce(self, grads: list) -> list:
        return grads  # apply_gradients under the strategy all-reduces them

    def run(self, fn):
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, self.strategy.run(fn), axis=None)

    def broadcast_variables(self, variables) -> None:
        pass  # MirroredStrategy variables start equal on every worker

    def shutdown(self) -> None:
        pass

    def gather(self, values: list[float]) -> list[list[float]]:
        out = self._all_gather(tf.constant(values, tf.float64))
        return self.strategy.experimental_local_results(out)[0].numpy().tolist()


class HorovodComm:
    """Horovod's TensorFlow API, or AIACC-Training's copy of it (``perseus.tensorflow.horovod``)."""

    def __init__(self, args: argparse.Namespace, gpus: list) -> None:
        if args.engine == "perseus":
            import perseus.tensorflow.horovod as hvd  # AIACC-Training, not on PyPI
        else:
            import horovod.tensorflow as hvd
        self.hvd = hvd
        hvd.init()
        self.rank, self.world = hvd.rank(), hvd.size()
        self.nnodes = hvd.cross_size()
        how = "mpi" if hvd.mpi_enabled() else "gloo"
        self.name = f"{args.engine}-{how}" + ("+nccl" if gpus and hvd.nccl_built() else "")
        import importlib.metadata
        try:
            self.versions = {args.engine: importlib.metadata.version(args.engine)}
        except importlib.metadata.PackageNotFoundError:
            self.versions = {args.engine: "unknown"}

    def scope(self):
        import contextlib
        return contextlib.nullcontext()

    def allreduce(self, grads: list) -> list:
        return self.hvd.grouped_allreduce(grads, op=self.hvd.Sum)

    def run(self, fn):
        return fn()

    def broadcast_variables(self, variables) -> None:
        for v in variables:
            v.assign(self.hvd.broadcast(tf.convert_to_tensor(v), root_rank=0))

    def gather(self, values: list[float]) -> list[list[float]]:
        rows = self.hvd.allgather(tf.constant([values], tf.float64))
        return rows.numpy().tolist()

    def shutdown(self) -> None:
        self.hvd.shutdown()  # under MPI: finalize, or mpirun calls the exit abnormal


def configure_devices(args: argparse.Namespace) -> list:
    """Threads, this worker's one GPU (the node's k-th visible), and the mixed-precision policy."""
    if args.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    gpus = tf.config.list_physical_devices("GPU")
    local = int(os.environ.get("HOROVOD_LOCAL_RANK", args.local_worker))
    if gpus:
        gpus = [gpus[local % len(gpus)]]
        tf.config.set_visible_devices(gpus, "GPU")
    if args.precision == "amp":
        tf.keras.mixed_precision.set_global_policy("mixed_float16" if gpus else "mixed_bfloat16")
    return gpus


class TfCheckpoint:
    """TensorFlow's way (``checkpoints.Checkpointer``): ``tf.train.Checkpoint`` of the model and its optimizer.
    Under MultiWorkerMirroredStrategy every worker writes (the strategy reads its variables together), the chief the
    checkpoint and the others a directory of their own, removed after (TensorFlow's multi-worker guide), and every
    worker reads the chief's; under Horovod worker 0 writes and reads, and broadcasts the variables."""

    format = "tf.train.Checkpoint"

    def __init__(self, model, opt, comm) -> None:  # noqa: ANN001
        self.ckpt, self.comm = tf.train.Checkpoint(model=model, optimizer=opt), comm
        self.variables = [*model.variables, *opt.variables]
        self.mirrored = isinstance(comm, MirroredComm)

    def save(self, path: str) -> None:
        rank = self.comm.rank
        if self.mirrored:
            where = path if rank == 0 else f"{path}.worker{rank}"
            self.ckpt.write(os.path.join(where, "ckpt"))
            if rank:
                shutil.rmtree(where, ignore_errors=True)
        elif rank == 0:
            self.ckpt.write(os.path.join(path, "ckpt"))

    def load(self, path: str) -> None:
        if self.mirrored or self.comm.rank == 0:
            self.ckpt.read(os.path.join(path, "ckpt")).assert_consumed()
        if not self.mirrored:
            self.comm.broadcast_variables(self.variables)


def build_training(args: argparse.Namespace, comm, gpus: list):
    """The model and its optimizer under the strategy's scope, with the optimizer's slots made."""
    with comm.scope():
        model = build_model(args)
        opt = tf.keras.optimizers.SGD(0.01, momentum=0.9)
        if args.precision == "amp" and gpus:
            opt = tf.keras.mixed_precision.LossScaleOptimizer(opt)
        # Slots made now, not in the first call: a tf.function that creates variables is traced
        # twice (ResNet-50's trace here 8.1 s -> 4.1 s, BERT-base's 7.7 s -> 3.7 s on one core).
        opt.build(model.trainable_variables)
    comm.broadcast_variables(model.variables)
    return model, opt


def synthetic_batch(args: argparse.Namespace, rank: int) -> tuple:
    """This worker's own fixed batch of inputs and labels."""
    g = tf.random.Generator.from_seed(args.seed + rank)
    if args.model == "bert-base":
        x = g.uniform((args.batch_size, args.image_size), 0, 30522, dtype=tf.int32)
        y = g.uniform((args.batch_size,), 0, 2, dtype=tf.int32)
    else:
        x = g.normal((args.batch_size, args.image_size, args.image_size, 3))
        y = g.uniform((args.batch_size,), 0, args.num_classes, dtype=tf.int32)
    return x, y


def make_train_step(args: argparse.Namespace, comm, model, opt, batch: tuple | None, global_batch: int):
    """One training step as a tf.function (XLA-compiled with --xla on); it returns the loss. On a fixed
    synthetic ``batch`` it takes no arguments; with real data (``batch`` None) it takes the batch."""
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    nosync = steplog.no_sync_fault()

    def step_fn(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.reduce_sum(loss_fn(y, tf.cast(logits, tf.float32))) / global_batch
            scaled = opt.scale_loss(loss) if hasattr(opt, "scale_loss") else loss
        grads = tape.gradient(scaled, model.trainable_variables)
        if nosync:  # each worker applies only its own gradients: the digests must catch the drift
            for v, gr in zip(model.trainable_variables, grads):
                v.assign_sub(0.01 * gr)
        else:
            grads = comm.allreduce(grads)  # Horovod: summed, as the strategy sums (loss / global batch)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    if batch is not None:
        x, y = batch

        @tf.function(jit_compile=args.xla == "on")
        def train_step():
            return comm.run(lambda: step_fn(x, y))
        return train_step

    @tf.function(jit_compile=args.xla == "on")
    def train_real(x, y):
        return comm.run(lambda: step_fn(x, y))
    return train_real


def parameter_digest(model) -> list[float]:
    """Sum and sum of squares of every trainable parameter, in float64 slices (a float64 copy of all
    of VGG-16 at once would be 1.1 GB)."""
    digest = [0.0, 0.0]
    for v in model.trainable_variables:
        flat = tf.reshape(v, [-1])
        for i in range(0, int(flat.shape[0]), 1 << 18):
            d = tf.cast(flat[i:i + (1 << 18)], tf.float64)
            digest[0] += float(tf.reduce_sum(d))
            digest[1] += float(tf.reduce_sum(d * d))
    return digest


def final_barrier(gather) -> None:
    """No worker leaves before rank 0 has written the log."""
    try:
        gather([0.0])
    except tf.errors.OpError as exc:
        # gRPC collectives pull: a worker that has every value of this last barrier may exit while
        # another still pulls its share, which then sees "Socket closed". Every worker has passed
        # the previous collective, so the log is complete; a peer that really failed says so by
        # its own exit code.
        if not isinstance(exc, (tf.errors.UnavailableError, tf.errors.CancelledError, tf.errors.AbortedError)):
            raise
        print(f"dlperf: a peer left the final barrier first ({type(exc).__name__}); nothing was lost",
              file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    gpus = configure_devices(args)
    comm = (MirroredComm if args.engine == "mwms" else HorovodComm)(args, gpus)
    START.mark("process_group")
    rank, world = comm.rank, comm.world
    tf.random.set_seed(args.seed)
    model, opt = build_training(args, comm, gpus)
    START.mark("model")
    global_batch = args.batch_size * world
    gather = comm.gather
    batches, data = None, None
    if args.data == "real":
        from tf_data import real_batches  # copied beside this file; imports dataset.py

        batches, data = real_batches(args, rank, world, steplog.fail)
        data["loader_samples_per_s"] = [r[0] for r in gather([batches.alone(args.batch_size)])]
    train_step = make_train_step(args, comm, model, opt, None if batches else synthetic_batch(args, rank),
                                 global_batch)
    step = (lambda: float(train_step(*batches()))) if batches else (lambda: float(train_step()))

    def agree(done: bool, iters: int) -> tuple[bool, int]:  # worker 0 decides for everyone
        decide = gather([float(done), float(iters)])[0]
        return decide[0] > 0, int(decide[1])

    # float(): the step's host sync, inside the step's time (TensorFlow has no device sync to call)
    timed = steplog.time_steps(step, args, rank, global_batch, agree=agree,
                               barrier=lambda: gather([0.0]), memory=TfGpuMemory("GPU:0") if gpus else None)
    started = steplog.start_and_memory(gather, START, timed)
    gathered = gather(timed.seconds)
    if data is not None:
        data["wait_seconds"] = gather(batches.window_waits(timed.warmup, timed.iters))
    digests = gather(parameter_digest(model))
    saved = None
    if args.checkpoint_dir:  # after the digests: a load that puts the chief's state everywhere would hide a drift
        saved = checkpoints.time_checkpoint(args.checkpoint_dir, TfCheckpoint(model, opt, comm), rank,
                                            lambda: gather([0.0]), gather)
    info = json.dumps({"host": socket.gethostname(), "device": gpus[0].name if gpus else cpu_model(),
                       "threads": args.threads or os.cpu_count()})
    hosts = [json.loads(h) for h in steplog.gather_text(gather, info)]

    if rank == 0:
        with steplog.Writer(args.output) as log:
            log.meta(model=args.model, precision=args.precision, batch_size=args.batch_size,
                     image_size=args.image_size, xla=args.xla, warmup_iters=timed.warmup, iters=timed.iters,
                     window_seconds=args.window_seconds, window={"start": timed.window[0], "end": timed.window[1]},
                     world_size=world, ranks=hosts, frameworks={"tensorflow": tf.__version__, **comm.versions},
                     python=platform.python_version(), backend=comm.name, engine=args.engine,
                     nnodes=comm.nnodes,
                     parameters=int(sum(int(tf.size(v)) for v in model.trainable_variables)), **started,
                     **({"checkpoint": saved} if saved else {}),
                     **({"input": data} if data is not None else {}))
            log.steps(timed, gathered, global_batch)
            log.end(digests)
    final_barrier(gather)
    comm.shutdown()
    return 0


if __name__ == "__main__":
    try:
        code = main()
    finally:
        shutil.rmtree(PRIVATE_TMP, ignore_errors=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no teardown of the collective runtime after a finished run
