"""Real batches for the TensorFlow workload, read the way TensorFlow users read ImageNet (NVIDIA's NGC
ResNet-50 recipe, the seeds' tf_cnn_benchmarks): tf.data over the TFRecord shards, this worker's share of the
files, parallel interleave, parse and ``tf.io.decode_jpeg``, a random crop of the ImageNet recipe's area and
aspect ranges resized to the case's size, a flip, normalised, batched and prefetched. Each step's wait for
its batch is kept (the input wait), and the pipeline alone is timed before training. Runs on the nodes;
imports nothing from the harness (``dataset.py`` is copied beside it)."""
from __future__ import annotations

import os

import tensorflow as tf

import dataset  # copied beside this file
from workloadkit import Feed, failing, input_facts  # copied beside every workload

FEATURES = {"image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([], tf.int64)}


def _train_image(record: tf.Tensor, size: int) -> tuple[tf.Tensor, tf.Tensor]:
    """One Example: decoded, randomly cropped (area 8-100%, aspect 3/4-4/3), resized, flipped, normalised; the
    label 0-based (the recipe's shards count from 1)."""
    parsed = tf.io.parse_single_example(record, FEATURES)
    image = tf.io.decode_jpeg(parsed["image/encoded"], channels=3)
    begin, extent, _ = tf.image.sample_distorted_bounding_box(
        tf.shape(image), tf.zeros([0, 0, 4], tf.float32), area_range=(0.08, 1.0), aspect_ratio_range=(3 / 4, 4 / 3),
        max_attempts=10, use_image_if_no_bounding_boxes=True)
    image = tf.image.resize(tf.slice(image, begin, extent), [size, size])
    image = tf.image.random_flip_left_right(image)
    image = (image - tf.constant(dataset.MEAN)) / tf.constant(dataset.STD)
    return image, tf.cast(parsed["image/class/label"] - 1, tf.int32)


class Batches(Feed):
    """This worker's batches from its tf.data pipeline (repeated: one endless epoch)."""

    errors = (tf.errors.DataLossError, tf.errors.InvalidArgumentError)

    def __init__(self, data: tf.data.Dataset, fail, ahead: int = 3) -> None:  # noqa: ANN001 - steplog.fail
        super().__init__(lambda k: data, fail, ahead)

    def said(self, exc: BaseException) -> str:
        return (f"reading the TFRecord shards failed: {' '.join(str(exc.message).split())[:400]}; the shard named "
                "there is damaged: replace it (or make the dataset again)")


def real_batches(args, rank: int, world: int, fail) -> tuple[Batches, dict]:  # noqa: ANN001 - argparse, steplog.fail
    """This worker's pipeline over ``args.data_dir``'s shards and what the meta line says of it."""
    with failing(dataset.DatasetError, fail):
        dataset.require(args.data_dir, "tfrecord")
    shards = dataset.tfrecord_shards(args.data_dir)
    if len(shards) < world:
        fail(f"{args.data_dir}: {len(shards)} TFRecord shards for {world} workers: each worker reads its own shards; "
             f"make the dataset with --shards {world} or more")
    files = tf.data.Dataset.from_tensor_slices(shards).shard(world, rank).shuffle(len(shards), seed=args.seed)
    parallel = tf.data.AUTOTUNE if args.data_workers else 1
    data = (files.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(shards)), num_parallel_calls=parallel,
                             deterministic=False)
            .shuffle(1024, seed=args.seed).repeat()
            .map(lambda r: _train_image(r, args.image_size), num_parallel_calls=parallel, deterministic=False)
            .batch(args.batch_size, drop_remainder=True).prefetch(parallel))
    facts = input_facts(args, "tfrecord", "autotune" if args.data_workers else 0,
                        sum(os.path.getsize(s) for s in shards), {"shards": len(shards)})
    return Batches(data, fail), facts
