"""What TensorFlow runs for each serving export: ops after grappler, outputs
against the reference, and time on SST-2 dev, each variant side by side.

The MiniLM-L6-H384 `BertClassifier` (real weights, a random 2-class head)
exported as each serving variant (`VARIANTS`), every export loaded as TF
Serving's loader does (`tf.compat.v1.saved_model.load` into a Session: its
grappler config, TensorFlow's default thread pools unless the variant
documents others), each in a fresh process:

- ops: one batch-1 `predict_ids` request of SST-2 dev's mean trimmed width
  (24 tokens), traced: the ops the executor ran (step stats; `Const`,
  `_Arg`, `_Retval`, `NoOp` counted apart), the op kinds of the graph after
  grappler (partition graphs) with the fused kernels' `fused_ops`, and the
  op types the SavedModel stores (what a server must know);
- outputs: `predict_ids` on SST-2 dev's first 64 sentences, against the
  same classifier computed by the `reference` implementation
  (`optimizations=()`) in Keras: max |probability difference|;
- time (`--rounds`, paired: the variants alternate in each round, a fresh
  process each): `serving_default` on SST-2 dev's sentences as requests of
  1 (the first `--sentences`, sequential) and of 32 (all 872):
  examples/s, and each variant's ratio to `fast` per round.

Variants: `fast` (the export before `serving_graph`: the block's `fast`
implementation, Keras' layers, variables), `streams_2`
(`export_saved_model(streams=2)`: `serving_graph_streams`, served with 1
intra-op and 2 inter-op threads), `streams_2_without_forms` (the same
without `"remapper_serving_graph"`: the block's `streams` implementation,
Keras' layers, what `streams=2` exported before `serving_graph_streams`),
`int8` (`quantize="int8"`), `int8_calibrated` (the same calibrated on
the first `CALIBRATION_SENTENCES` SST-2 train sentences:
`serving_graph_int8_calibrated`), `serving_graph` (the default export in
the remapper's forms, on every CPU: weights frozen into constants),
`bfloat16` (`precision="bfloat16"`: `serving_graph_bfloat16`, its dense
matmuls in bfloat16; needs a CPU with AVX512-BF16 or AMX),
`bfloat16_streams_2` (`precision="bfloat16", streams=2`:
`serving_graph_streams_bfloat16`, threads as `streams_2`) and
`serving_graph_variables` (the same reading variables), the latter also with
`TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1` (`..._assume_frozen`). Fused kernels
that run in bfloat16 (`T`) are listed as `...[bfloat16]`, and every op
the graph runs in bfloat16 after grappler is counted, with the casts to
and from it: a bfloat16 matmul that grappler cast back to float32 would
show as a float32 kernel.

A variant whose option this CPU does not serve (int8 or bfloat16, where
the serving plan refuses it: `keras_bert.serving.plan.cpu_problem`) is
left out, and the section says why. Run with `TF_ENABLE_ONEDNN_OPTS=0` (in
its own `--results_section`) for the forms on TensorFlow's Eigen kernels:
what an AVX2-only CPU runs by default.

    python benchmarks/serving_ops.py [--rounds=3] [--sentences=200]

Two profiles instead of the race (printed, nothing written):

`--threads`: p50 milliseconds of `predict_ids` on SST-2-sized requests
(`SHAPES`: batch 1 of 24 tokens and batch 32 of 48, SST-2 dev's mean
widths trimmed to the longest row) of `THREAD_VARIANTS` at intra-op and
inter-op threads (1, 1), (2, 2) and (1, 2), a fresh process per setting
(TensorFlow fixes its pools at start-up), under each `--onednn` setting
of the serving processes. `--trace` also traces `--calls` batch-1
requests at each `--trace_at` setting (step stats): op time per op type,
the matmuls' share, the ops run.

`--matmul` (the int8 matmul choices against float32, section
`int8_matmul_eigen`) is retired: `git show
193fb03:benchmarks/serving_ops_modes/matmul.py`.

    python benchmarks/serving_ops.py --threads [--trace] [--calls=100] \
        [--trace_at=1,1 --trace_at=1,2] [--onednn=1,0]

`--accuracy --classifier=DIR` (section "serving_precision", record
`benchmarks/serving_precision/record.json`): accuracy of each serving
precision. A `recipes/glue.py --task=sst2` model directory (its
`best.weights.h5`; MiniLM-L6-H384 fine-tuned by the recipe, e.g.
`--epochs=1 --learning_rate=5e-5`) exported as each of `--precisions`
(`PRECISIONS`: the default float32 export, `precision="bfloat16"`,
`quantize="int8"`), loaded in a Session as above, its `serving_default`
run on every SST-2 dev sentence in requests of 32: dev accuracy and its
difference from the float32 export's (goal: within 0.5 points), the share
of sentences labelled as the float32 export labels them, and the max and
mean |probability - the float32 Keras model's| (`classifier.predict`).
The bfloat16 export is refused on a CPU without AVX512-BF16 or AMX
(`--precisions=float32,int8` there).

    python benchmarks/serving_ops.py --accuracy --classifier=DIR
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.serving_ops_modes import accuracy  # noqa: E402
from benchmarks.serving_ops_modes import ops  # noqa: E402
from benchmarks.serving_ops_modes import threads  # noqa: E402
from benchmarks.serving_ops_modes.exports import EXPORT_OF  # noqa: E402
from benchmarks.serving_ops_modes.exports import NEEDS  # noqa: E402
from benchmarks.serving_ops_modes.exports import VARIANTS  # noqa: E402

flags.DEFINE_integer("rounds", 3, "Paired timing rounds (0: ops only).")
flags.DEFINE_integer("sentences", 200, "Batch-1 requests timed per job.")
flags.DEFINE_string("work_dir", "/tmp/keras_bert_serving_ops", "Exports.")
flags.DEFINE_string(
    "worker", None, "Internal: `ops|time,VARIANT` or `threads,INTRA,INTER`."
)
flags.DEFINE_bool("threads", False, "Profile the thread settings instead.")
flags.DEFINE_bool("trace", False, "With --threads: where the op time goes.")
flags.DEFINE_multi_string(
    "trace_at", ["1,2"], "With --trace: the `intra,inter` settings traced."
)
flags.DEFINE_integer("calls", 100, "Timed batch-1 calls (batch 32: a fifth).")
flags.DEFINE_list(
    "onednn",
    ["default"],
    "With --threads: TF_ENABLE_ONEDNN_OPTS of the serving processes, each "
    "setting in turn (`default`: as this process has it).",
)
flags.DEFINE_bool("accuracy", False, "Score the serving precisions instead.")
flags.DEFINE_string(
    "classifier", None, "--accuracy: a recipe's model_dir or best.weights.h5."
)
flags.DEFINE_string(
    "init_checkpoint",
    None,
    "--accuracy: the checkpoint it was fine-tuned from (default: MiniLM).",
)
flags.DEFINE_list("precisions", None, "--accuracy: default all PRECISIONS.")
flags.DEFINE_string("glue_dir", common.GLUE, "--accuracy: GLUE data.")
flags.DEFINE_string(
    "record",
    os.path.join(os.path.dirname(__file__), "serving_precision", "record.json"),
    "--accuracy: where the record goes.",
)
FLAGS = flags.FLAGS


def main(argv):
    del argv
    if FLAGS.accuracy:
        if not FLAGS.classifier:
            raise app.UsageError(
                "Pass --classifier=DIR: a recipes/glue.py --task=sst2 "
                "model_dir (see this script's docstring)."
            )
        record = accuracy.measure_accuracy()
        common.write_record(FLAGS.record, record)
        return common.publish(
            "serving_precision", accuracy.accuracy_summary(record)
        )
    if FLAGS.worker:
        mode, name = FLAGS.worker.split(",", 1)
        with open(os.path.join(FLAGS.work_dir, "paths.json")) as f:
            paths = json.load(f)
        if mode == "threads":
            return threads.threads_worker(*map(int, name.split(",")), paths)
        path = paths[EXPORT_OF.get(name, name)]
        if mode == "ops":
            inputs = os.path.join(FLAGS.work_dir, "inputs.npz")
            return common.print_result(ops.ops_worker(name, path, inputs))
        return common.print_result(ops.time_worker(name, path))

    from keras_bert.serving.plan import cpu_problem

    skipped = {
        name: cpu_problem(NEEDS[name]) for name in VARIANTS if name in NEEDS
    }
    skipped = {name: why for name, why in skipped.items() if why}
    variants = tuple(name for name in VARIANTS if name not in skipped)
    shutil.rmtree(FLAGS.work_dir, ignore_errors=True)
    os.makedirs(FLAGS.work_dir)
    if FLAGS.threads:
        return threads.profile_threads(skipped)
    ops.race(variants, skipped)


if __name__ == "__main__":
    app.run(main)
