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
    python benchmarks/first_call_latency.py --summarize

Writes `first_call_latency/latency_<threads>.json` (the run's record)
and the "first_call_latency" section of RESULTS.md (every record there).
"""

import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

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
    record.update(
        rounds=rounds,
        threads=FLAGS.threads or "library defaults",
        calls=FLAGS.calls,
        warmup=FLAGS.warmup,
        load_average_1min_end=round(os.getloadavg()[0], 1),
        uptime_after=_uptime(),
    )
    common.write_record(_record_path(FLAGS.threads), record)
    return record


def _record_path(threads):
    """One record per thread setting: the section shows each."""
    name = f"threads{threads}" if threads else "default_threads"
    return os.path.join(FLAGS.output_dir, f"latency_{name}.json")


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
        parts += ["", *_table(record)]
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
    loads = [record["load_average"], record["load_average_1min_end"]]
    cores = common.cores(record["machine"])
    lines += [
        "",
        f"Command: `{record['command']}`. Machine: {record['machine']}. "
        f"Load average (1 min) at the start and end: {loads[0]:.1f}, "
        f"{loads[1]:.1f}; {common.load_note(loads, cores)} `uptime` "
        f"before: {record['uptime_before']}",
    ]
    return lines


def _uptime():
    return subprocess.run(
        ["uptime"], capture_output=True, text=True
    ).stdout.strip()


def main(argv):
    del argv
    if not FLAGS.summarize:
        run()
    records = common.read_records(FLAGS.output_dir)
    common.publish("first_call_latency", summary_markdown(records))


if __name__ == "__main__":
    app.run(main)
