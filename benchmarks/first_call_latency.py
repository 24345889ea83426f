"""One call on a few sentences: our Keras API against the peer a user
would otherwise call, same MiniLM weights, real SST-2 dev sentences.

  embedder    `BertTextEmbedder.from_checkpoint(minilm).encode(sentences)`
              against `SentenceTransformer(minilm).encode(sentences)`
  classifier  `BertClassifier.from_checkpoint(minilm, num_classes=2)
              .predict(sentences)` against `transformers.pipeline(
              "text-classification", model=minilm)(sentences,
              batch_size=len(sentences))` (both heads untrained and
              random: the encoder, the tokenizer and the call are timed)

A call is timed from the strings to the NumPy answer, on 1 and on 10
sentences, consecutive SST-2 dev sentences a call. Each round runs every
contestant's block of calls (the order rotated round to round): a few
untimed warm-up calls, then `--calls` timed calls, whose median is the
round's latency. The table gives each contestant's median over the
rounds and the median of the per-round ratios ours / peer; the goal is
at most 1.5x at one sentence and 1.2x at ten.

    nice -n 10 python benchmarks/first_call_latency.py [--rounds=3] \\
        [--threads=1]
    python benchmarks/first_call_latency.py --fresh [--rounds=3]
    python benchmarks/first_call_latency.py --summarize

With `--fresh`, each contestant runs in a process of its own, as a user's
script does: the library's import, the model's load and the very first
call on one sentence are timed, then the warm median of `--calls` more
one-sentence calls. The goal there: load + first call at most 1.5x the
peer's. With `--served` too, the contestants are our default SavedModel
of that classifier as TF Serving loads it (a C++ Session), `served`
without and `served_warmup` with its warmup requests replayed during the
load, as TF Serving replays them (`keras_bert.serving.warmup`).

Writes `first_call_latency/latency_<threads>.json` (warm blocks) or
`fresh_<threads>.json` (fresh processes), the run's record, and the
"first_call_latency" section of RESULTS.md (every record there).
"""

import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

WARMUP_FILE = "assets.extra/tf_serving_warmup_requests"
OUTPUT_DIR = os.path.join(os.path.dirname(__file__), "first_call_latency")
SIZES = (1, 10)
# (ours, peer, goal: ours / peer at most) at each size.
PAIRS = (("ours_encode", "sentence_transformers"), ("ours_predict", "pipeline"))
GOALS = {1: 1.5, 10: 1.2}
FLAGS = flags.FLAGS

flags.DEFINE_integer("rounds", 3, "Rounds (each contestant once a round).")
flags.DEFINE_integer("calls", 15, "Timed calls per contestant, size, round.")
flags.DEFINE_integer("warmup", 3, "Untimed calls before each block.")
flags.DEFINE_string("output_dir", OUTPUT_DIR, "Where the record goes.")
flags.DEFINE_bool("summarize", False, "Only print the table of the record.")
flags.DEFINE_bool(
    "fresh",
    False,
    "Each contestant in a fresh process: import, load, first call.",
)
flags.DEFINE_bool("served", False, "With --fresh: our SavedModel, warmed?")
flags.DEFINE_string("child", None, "Internal: run one fresh contestant.")
flags.DEFINE_string("saved_model", None, "Internal: the --served export.")
flags.DEFINE_integer(
    "threads",
    0,
    "Threads of TensorFlow (intra- and inter-op) and torch; 0: each "
    "library's default (the machine's cores).",
)


def contestants(model_dir):
    """`{name: call(sentences)}`, each loaded as its documentation says."""
    import tensorflow as tf
    import torch

    if FLAGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
        tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
        torch.set_num_threads(FLAGS.threads)

    import keras_bert

    embedder = keras_bert.BertTextEmbedder.from_checkpoint(model_dir)
    classifier = keras_bert.BertClassifier.from_checkpoint(
        model_dir, num_classes=2
    )
    from sentence_transformers import SentenceTransformer
    from transformers import pipeline

    transformer = SentenceTransformer(model_dir, device="cpu")
    classify = pipeline("text-classification", model=model_dir, device=-1)
    return {
        "ours_encode": embedder.encode,
        # No progress bar, as outside an absl program (absl's INFO level
        # turns sentence-transformers' default bar on).
        "sentence_transformers": lambda texts: transformer.encode(
            texts, show_progress_bar=False
        ),
        "ours_predict": classifier.predict,
        "pipeline": lambda texts: classify(texts, batch_size=len(texts)),
    }


def time_block(call, batches, warmup):
    """Median seconds of `call` over `batches` after `warmup` of them."""
    for batch in batches[:warmup]:
        call(batch)
    times = []
    for batch in batches[warmup:]:
        start = time.perf_counter()
        call(batch)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run():
    sentences, _ = common.read_sst2("dev")
    record = common.job_context()
    record["uptime_before"] = _uptime()
    start = time.perf_counter()
    calls = contestants(common.minilm_dir())
    record["load_seconds"] = round(time.perf_counter() - start, 1)
    names = list(calls)
    per_block = FLAGS.warmup + FLAGS.calls
    rounds = []
    for k in range(FLAGS.rounds):
        shift = k % len(names)
        medians = {}
        for name in names[shift:] + names[:shift]:
            for size in SIZES:
                first = (k * per_block * size) % (len(sentences) - size)
                batches = [
                    sentences[first + i * size : first + (i + 1) * size]
                    for i in range(per_block)
                ]
                seconds = time_block(calls[name], batches, FLAGS.warmup)
                medians[f"{name}@{size}"] = round(seconds * 1000, 3)
        print(k, medians, flush=True)
        rounds.append(medians)
    _finish(record, rounds)
    common.write_record(_record_path("latency"), record)
    return record


def fresh_contestant(name, model_dir, sentences):
    """One contestant in this (fresh) process: seconds of the library's
    import, the model's load and the first call on one sentence, then the
    median milliseconds of `--calls` more one-sentence calls after
    `--warmup` untimed ones."""
    start = time.perf_counter()
    if name.startswith("served"):
        return _served_contestant(name, sentences, start)
    if name.startswith("ours"):
        import keras_bert as library
    elif name == "sentence_transformers":
        import sentence_transformers as library
    else:
        import transformers as library
    imported = time.perf_counter()
    _set_threads(name)
    if name == "ours_encode":
        call = library.BertTextEmbedder.from_checkpoint(model_dir).encode
    elif name == "ours_predict":
        call = library.BertClassifier.from_checkpoint(
            model_dir, num_classes=2
        ).predict
    elif name == "sentence_transformers":
        model = library.SentenceTransformer(model_dir, device="cpu")
        call = functools.partial(model.encode, show_progress_bar=False)
    else:
        classify = library.pipeline(
            "text-classification", model=model_dir, device=-1
        )
        call = functools.partial(classify, batch_size=1)
    return _timed(call, sentences, start, imported, time.perf_counter())


def _timed(call, sentences, start, imported, loaded):
    call(sentences[:1])
    first = time.perf_counter()
    batches = [
        sentences[i : i + 1] for i in range(1, 1 + FLAGS.warmup + FLAGS.calls)
    ]
    warm = time_block(call, batches, FLAGS.warmup)
    return {
        "import_s": round(imported - start, 3),
        "load_s": round(loaded - imported, 3),
        "first_s": round(first - loaded, 3),
        "warm_ms": round(warm * 1000, 3),
    }


def _served_contestant(name, sentences, start):
    """`fresh_contestant` of our SavedModel in a Session, as TF Serving
    loads it and, for `served_warmup`, replays its warmup requests."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    from benchmarks.contestants.serving import session

    imported = time.perf_counter()
    tf_session, signatures = session(FLAGS.saved_model, (FLAGS.threads,) * 2)
    if name == "served_warmup":  # as TF Serving's saved_model_warmup.cc
        from tensorflow_serving.apis.prediction_log_pb2 import PredictionLog

        warmup = os.path.join(FLAGS.saved_model, WARMUP_FILE)
        for raw in tf.compat.v1.io.tf_record_iterator(warmup):
            request = PredictionLog.FromString(raw).predict_log.request
            sig = signatures[request.model_spec.signature_name]
            feed = {sig.inputs[k].name: tf.make_ndarray(v) for k, v in request.inputs.items()}  # fmt: skip
            tf_session.run({k: v.name for k, v in sig.outputs.items()}, feed)
    signature = signatures["serving_default"]
    fetches = {k: v.name for k, v in signature.outputs.items()}
    text = signature.inputs["text"].name
    call = lambda texts: tf_session.run(fetches, {text: np.array(texts)})  # noqa: E731
    return _timed(call, sentences, start, imported, time.perf_counter())


def _set_threads(name):
    if not FLAGS.threads:
        return
    if name.startswith("ours"):
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
        tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    else:
        import torch

        torch.set_num_threads(FLAGS.threads)


def run_fresh():
    """`--rounds` rounds, each contestant once a round (order rotated) in
    a fresh process; its record."""
    started = time.time()
    record = common.job_context()
    record["uptime_before"] = _uptime()
    pairs = [("served_warmup", "served")] if FLAGS.served else PAIRS
    names = [name for pair in pairs for name in pair]
    record["pairs"] = pairs
    if FLAGS.served:  # the default export of the classifier, untrained head
        import keras_bert

        model = keras_bert.BertClassifier.from_checkpoint
        FLAGS.saved_model = keras_bert.serving.export_saved_model(
            model(common.minilm_dir(), num_classes=2),
            export_dir=tempfile.mkdtemp(prefix="first_call_served_"),
        )
    rounds = []
    for k in range(FLAGS.rounds):
        shift = k % len(names)
        results = {}
        for name in names[shift:] + names[:shift]:
            command = [
                sys.executable,
                os.path.abspath(__file__),
                f"--child={name}",
                f"--threads={FLAGS.threads}",
                f"--calls={FLAGS.calls}",
                f"--warmup={FLAGS.warmup}",
            ] + [f"--saved_model={FLAGS.saved_model}"] * FLAGS.served
            done = subprocess.run(
                command, capture_output=True, text=True, check=True
            )
            line = done.stdout.strip().splitlines()[-1]
            results[name] = json.loads(line.removeprefix("RESULT "))
        print(k, results, flush=True)
        rounds.append(results)
    _finish(record, rounds, fresh=True)
    # One record per run (every run's record is kept): its start time.
    stamp = time.strftime("%Y%m%dT%H%M", time.gmtime(started))
    common.write_record(_record_path("fresh", f"_{stamp}"), record)


def _fresh_table(record):
    rounds = record["rounds"]

    def median(name, key):
        return statistics.median(r[name][key] for r in rounds)

    def ready(r, name, with_import=False):
        seconds = r[name]["load_s"] + r[name]["first_s"]
        return seconds + (r[name]["import_s"] if with_import else 0)

    lines = [
        f"Fresh processes, one sentence a call. Threads: "
        f"{record['threads']}; {len(rounds)} rounds; medians over the "
        "rounds (ratios: the median of the per-round ratios).",
        "",
        "| contestant | import s | load s | first call s | warm call ms "
        "| load + first call s | ours / peer | goal ≤1.5× "
        "| import + load + first s | ours / peer |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for ours, peer in record.get("pairs", PAIRS):
        for name in (ours, peer):
            keys = ("import_s", "load_s", "first_s")
            cells = [name, *(f"{median(name, k):.2f}" for k in keys)]
            cells.append(f"{median(name, 'warm_ms'):.1f}")
            cells.append(f"{statistics.median(ready(r, name) for r in rounds):.2f}")  # fmt: skip
            total = statistics.median(ready(r, name, True) for r in rounds)
            if name == ours:
                ratio = statistics.median(
                    ready(r, ours) / ready(r, peer) for r in rounds
                )
                whole = statistics.median(
                    ready(r, ours, True) / ready(r, peer, True) for r in rounds
                )
                verdict = "met" if ratio <= 1.5 else "missed"
                verdict = verdict if (ours, peer) in PAIRS else "no goal"
                cells += [
                    f"{ratio:.2f}",
                    verdict,
                    f"{total:.2f}",
                    f"{whole:.2f}",
                ]
            else:
                cells += ["", "", f"{total:.2f}", ""]
            lines.append("| " + " | ".join(cells) + " |")
    return lines + _footer(record)


def _finish(record, rounds, **extra):
    """What every record says of its run, after the rounds."""
    record.update(
        **extra,
        rounds=rounds,
        threads=FLAGS.threads or "library defaults",
        calls=FLAGS.calls,
        warmup=FLAGS.warmup,
        load_average_1min_end=round(os.getloadavg()[0], 1),
        uptime_after=_uptime(),
    )


def _record_path(kind, suffix=""):
    """`<output_dir>/<kind>_<threads><suffix>.json`: the warm blocks keep
    one record per thread setting, the fresh runs one per run."""
    threads = f"threads{FLAGS.threads}" if FLAGS.threads else "default_threads"
    return os.path.join(FLAGS.output_dir, f"{kind}_{threads}{suffix}.json")


def summary_markdown(records):
    """The section's Markdown, from the records alone (one per thread
    setting)."""
    first = records[0]
    parts = [
        "## First-call latency: one and ten sentences",
        "",
        "Median milliseconds of one call, from the strings to the NumPy "
        f"answer, over {first['calls']} timed calls after {first['warmup']} "
        "warm-up calls, then the median over the rounds (ratios: the "
        "median of the per-round ratios). `ours_encode` is "
        "`BertTextEmbedder.encode`, `sentence_transformers` "
        "`SentenceTransformer.encode`; `ours_predict` is "
        "`BertClassifier.predict`, `pipeline` the `transformers` "
        "text-classification pipeline with `batch_size` = the call's "
        "sentences; all on all-MiniLM-L6-v2 from its local directory, "
        "consecutive SST-2 dev sentences. Goal: ours / peer at most "
        "1.5 at one sentence, 1.2 at ten.",
    ]
    for record in records:
        table = _fresh_table if record.get("fresh") else _table
        parts += ["", *table(record)]
    return "\n".join(parts)


def _table(record):
    rounds = record["rounds"]
    lines = [
        f"Threads: {record['threads']}; {len(rounds)} rounds.",
        "",
        "| sentences | ours | ours ms | peer | peer ms | ours / peer | goal |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in SIZES:
        for ours, peer in PAIRS:
            mine = [r[f"{ours}@{size}"] for r in rounds]
            theirs = [r[f"{peer}@{size}"] for r in rounds]
            ratio = statistics.median(a / b for a, b in zip(mine, theirs))
            goal = GOALS[size]
            verdict = "met" if ratio <= goal else "missed"
            lines.append(
                f"| {size} | {ours} | {statistics.median(mine):.1f} | {peer} "
                f"| {statistics.median(theirs):.1f} | {ratio:.2f} "
                f"| ≤{goal}×: {verdict} |"
            )
    return lines + _footer(record)


def _footer(record):
    loads = [record["load_average"], record["load_average_1min_end"]]
    cores = common.cores(record["machine"])
    return [
        "",
        f"Command: `{record['command']}`. Machine: {record['machine']}. "
        f"Load average (1 min) at the start and end: {loads[0]:.1f}, "
        f"{loads[1]:.1f}; {common.load_note(loads, cores)} `uptime` "
        f"before: {record['uptime_before']}",
    ]


def _uptime():
    return subprocess.run(
        ["uptime"], capture_output=True, text=True
    ).stdout.strip()


def main(argv):
    del argv
    if FLAGS.child:
        sentences, _ = common.read_sst2("dev")
        result = fresh_contestant(FLAGS.child, common.minilm_dir(), sentences)
        print("RESULT " + json.dumps(result))
        return
    if FLAGS.fresh:
        run_fresh()
    elif not FLAGS.summarize:
        run()
    records = common.read_records(FLAGS.output_dir)
    common.publish("first_call_latency", summary_markdown(records))


if __name__ == "__main__":
    app.run(main)
