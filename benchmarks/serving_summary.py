"""benchmarks/serving.py's section, from its round records alone: the
table of examples/s and latencies (each swept peer at its best thread
count), the paired ratios of each of ours, accuracy and agreement, what
`exports.json` says of the exports, the goals."""

import os
import statistics

from benchmarks import common
from benchmarks.contestants import serving as contestants

OUTPUT_DIR = os.path.join(os.path.dirname(__file__), "serving")
OURS, OURS_INT8, OURS_BF16 = "ours_fp32", "ours_int8", "ours_bf16"
OURS_INT8_CALIBRATED = "ours_int8_calibrated"
OURS_BF16_STREAMS = "ours_bf16_streams"
OURS_DEFAULT, ORT_FP32 = "ours_fp32_default", "onnxruntime_fp32"
SST2_DEV_SIZE = 872
# The goals: (ours, peer, at least this ratio of examples/s).
GOALS = (
    (OURS, "onnxruntime_fp32", 1.0),
    (OURS, "transformers", 2.0),
    (OURS_DEFAULT, "onnxruntime_fp32", 1.0),
    (OURS_DEFAULT, "transformers", 2.0),
    (OURS_INT8, "onnxruntime_int8", 1.0),
    (OURS_INT8_CALIBRATED, "onnxruntime_int8", 1.0),
    (OURS_INT8, "onnxruntime_int8_static", 1.0),
    (OURS_INT8_CALIBRATED, "onnxruntime_int8_static", 1.0),
    (OURS_BF16, "onnxruntime_fp32", 1.5),
    (OURS_BF16_STREAMS, "onnxruntime_fp32", 1.5),
)
# Each variant's dev accuracy within this many points of ours_fp32's.
ACCURACY_POINTS = 0.5
# The columns of ratios: each of ours against the row's contestant.
RATIO_COLUMNS = (
    OURS,
    OURS_DEFAULT,
    OURS_INT8,
    OURS_INT8_CALIBRATED,
    OURS_BF16,
    OURS_BF16_STREAMS,
)


def best_jobs(timed, names, batch, key="examples_per_second"):
    """`{contestant: job}` at `batch`: for each of `names`, of its jobs
    (`contestants.thread_variants`) in `timed` (job -> round -> batches,
    or clients), the one with the most `key`, median over its rounds."""
    best = {}
    for name in names:
        jobs = [
            job
            for job in timed
            if contestants.thread_setting(job, None)[0] == name
            and all(str(batch) in r for r in timed[job].values())
        ]
        if jobs:
            best[name] = max(
                jobs,
                key=lambda job: statistics.median(
                    r[str(batch)][key] for r in timed[job].values()
                ),
            )
    return best


def summary_markdown(records, names, exports=None):
    """The RESULTS.md section from the round records and, where given,
    `exports.json`'s facts about the exports (and the contestants it says
    were skipped here, with why). Each swept peer is shown at its best
    thread count per batch size (`best_jobs`); a column of ratios for each
    of `RATIO_COLUMNS` that ran."""

    def contestant(job):
        return contestants.thread_setting(job, None)[0]

    exports, timed, failed, served = exports or {}, {}, {}, {}
    for r in records:  # failed: by contestant; timed, served: by job
        job, k = r["contestant"], r["round"]
        if "batches" in r:
            timed.setdefault(job, {})[k] = r["batches"]
        else:
            failed.setdefault(contestant(job), set()).add(str(r.get("failed")))
        if r.get("clients"):
            served.setdefault(job, {})[k] = r["clients"]
    ran = {contestant(job) for job in timed} | set(failed)
    skipped = exports.get("skipped") or {}
    names = [name for name in names if name in ran or name in skipped]
    columns = [name for name in RATIO_COLUMNS if name in ran]
    rounds = sorted({r["round"] for r in records})
    batch_sizes = sorted(
        {int(b) for runs in timed.values() for r in runs.values() for b in r}
    )
    best = {batch: best_jobs(timed, names, batch) for batch in batch_sizes}

    def values(job, batch, key):
        return {k: r[str(batch)][key] for k, r in timed.get(job, {}).items()}

    def paired(ours, peer, values, *point):
        """`common.paired_ratio` of jobs `ours` and `peer` (`None` where
        either did not run, or they share no round)."""
        if ours is None or peer is None or ours == peer:
            return None
        try:
            return common.paired_ratio(*(values(j, *point) for j in (ours, peer)))  # fmt: skip
        except ValueError:
            return None

    def ratio(ours, peer, batch, key="examples_per_second"):
        at = best[batch]
        return paired(at.get(ours), at.get(peer), values, batch, key)

    def accuracy_points(ours, batch):
        """Median over the rounds of `ours`' dev accuracy minus ours_fp32's
        in the same round, in points; `None` where either did not run."""
        ours, reference = best[batch].get(ours), best[batch].get(OURS)
        if ours is None or reference is None:
            return None
        ours = values(ours, batch, "accuracy")
        reference = values(reference, batch, "accuracy")
        deltas = [100 * (v - reference[k]) for k, v in ours.items() if k in reference]  # fmt: skip
        return statistics.median(deltas) if deltas else None

    def shown(value):
        return "—" if value is None else f"{value[0]:.2f}"

    def thread_counts(name):
        return sorted(
            contestants.thread_setting(job, None)[1]
            for job in timed
            if contestant(job) == name and job != name
        )

    def threads_cell(name, job):
        counts = thread_counts(name)
        if job == name or not counts:
            return "—"
        count = contestants.thread_setting(job, None)[1]
        return f"{count} (of {common.listed(counts)})"

    blank = [""] * (len(columns) + 2)
    rows = []
    for batch in batch_sizes:
        for name in names:
            job = best[batch].get(name)
            if name in skipped or job is None:
                why = "; ".join(sorted(failed.get(name, ())))
                why = f"skipped: {skipped[name]}" if name in skipped else f"not run: {why}"  # fmt: skip
                rows.append([batch, name, "", why, "", ""] + blank)
                continue
            medians = [
                statistics.median(values(job, batch, key).values())
                for key in "examples_per_second p50_ms p99_ms accuracy".split()
            ]
            labels = values(job, batch, "labels")
            reference = values(best[batch].get(OURS), batch, "labels")
            agree = [contestants.agreement(v, reference[k]) for k, v in labels.items() if k in reference]  # fmt: skip
            ratios = [shown(ratio(ours, name, batch)) for ours in columns]
            agrees = f"{statistics.median(agree):.4f}" if agree else "—"
            rows.append(
                [batch, name, threads_cell(name, job)]
                + [f"{m:.1f}" for m in medians[:3]]
                + [*ratios, f"{medians[3]:.4f}", agrees]
            )
    header = ["batch", "contestant", "threads", "examples/s", "p50 ms"]
    header += ["p99 ms", *(f"{name} / it" for name in columns)]
    header += ["dev accuracy", f"agrees with {OURS}"]
    swept = [
        n for n in names if n in contestants.THREAD_SWEPT and thread_counts(n)
    ]
    counts = sorted({c for name in swept for c in thread_counts(name)})
    sweep = []
    if swept:
        sweep = [
            "",
            "Each swept contestant at every thread count (examples/s, median over "
            "the rounds; the best, in bold, is the row above):",
            "",
        ]
        sweep_rows = []
        for batch in batch_sizes:
            for name in swept:
                cells = []
                for count in counts:
                    job = f"{name}_{count}{contestants.THREAD_SUFFIX}"
                    found = values(job, batch, "examples_per_second")
                    cell = f"{statistics.median(found.values()):.1f}" if found else "—"  # fmt: skip
                    cells.append(f"**{cell}**" if job == best[batch].get(name) else cell)  # fmt: skip
                sweep_rows.append([batch, name, *cells])
        sweep += common.table(
            ["batch", "contestant"]
            + [f"{c} thread{'s' * (c > 1)}" for c in counts],
            sweep_rows,
        )
    client_counts = sorted(
        {int(n) for runs in served.values() for r in runs.values() for n in r}
    )
    client_rows = []
    for n in client_counts:
        best_n = best_jobs(served, names, n, "requests_per_second")

        def rates(job, key="requests_per_second", n=n):
            return {k: r[str(n)][key] for k, r in served[job].items()}

        for name, job in best_n.items():
            found = paired(job, best_n.get(ORT_FP32), rates)
            medians = [statistics.median(rates(job, key).values()) for key in ("requests_per_second", "accuracy")]  # fmt: skip
            client_rows.append([n, name, threads_cell(name, job), f"{medians[0]:.1f}", shown(found), f"{medians[1]:.4f}"])  # fmt: skip
    if client_rows:
        sweep += [
            "",
            "Concurrent clients (`--clients`): N client threads share the one "
            "loaded model, each sending one sentence a request, the "
            "sentences split among them; requests/s over the whole run "
            "(median over the rounds), each contestant at its thread count "
            f"with the most at that N; `it / {ORT_FP32}` the median of the "
            "per-round paired ratios:",
            "",
            *common.table(
                ["clients", "contestant", "threads", "requests/s"]
                + [f"it / {ORT_FP32}", "dev accuracy"],
                client_rows,
            ),
        ]
    goals = []
    for ours, peer, target in GOALS:
        for batch in batch_sizes:
            goal = f"- {ours} / {peer}, batch {batch}: "
            found = ratio(ours, peer, batch)
            if ours in skipped or found is None:
                why = f": {ours} was skipped on this CPU" * (ours in skipped)
                goals.append(f"{goal}goal ≥{target:g}×, not measured{why}.")
                continue
            verdict = "met" if found[0] >= target else f"missed by {target / found[0]:.2f}×"  # fmt: skip
            rounds_shown = common.listed(found[1], "{:.2f}")
            goals.append(f"{goal}{found[0]:.2f}× (rounds: {rounds_shown}); goal ≥{target:g}×, {verdict}.")  # fmt: skip
    for ours in (OURS_INT8, OURS_INT8_CALIBRATED, OURS_BF16, OURS_BF16_STREAMS):
        for batch in batch_sizes:
            points = accuracy_points(ours, batch)
            if points is None:
                continue
            verdict = "met" if abs(points) <= ACCURACY_POINTS else "missed"
            goals.append(
                f"- {ours} dev accuracy − {OURS}'s, batch {batch}: {points:+.2f} "
                f"points; goal within ±{ACCURACY_POINTS:g}, {verdict}."
            )
    loads = [load for record in records for load in record["load_average_1min"]]
    own = f"the jobs' own client threads (up to {max(client_counts)})" if client_counts else None  # fmt: skip
    machine = records[0]["machine"]
    sentences = max(record.get("sentences", 0) for record in records)
    facts = ""
    if exports.get("onnx_fused_operators"):
        fused = exports["onnx_fused_operators"].items()
        facts += f" ONNX Runtime's optimizer fused: {common.listed(f'{n} {k}' for k, n in fused)}."
    if exports.get("implementations"):
        implementations = exports["implementations"]
        served_as = [f"{n} `{implementations[n]}`" for n in names if n in implementations]  # fmt: skip
        facts += f" Our exports' encoder blocks run as (`served_implementation`): {common.listed(served_as)}."
    if exports.get("variables_bytes"):
        sizes = exports["variables_bytes"].items()
        facts += f" `variables/` of our exports: {common.listed(f'{k} {v / 2**20:.1f} MiB' for k, v in sizes)}."
    if swept:
        ours_swept = [name for name in swept if name.startswith("ours")]
        facts += (
            f" {common.listed(swept)} ran at {common.listed(counts)} "
            "threads (a peer's intra-op threads; both of TensorFlow's pools "
            "for ours, as TF Serving's `--tensorflow_intra_op_parallelism` "
            "and `--tensorflow_inter_op_parallelism` set them), each count "
            "its own job every round; each row shows the count with the most "
            "examples/s at that batch size, the ratios paired with its jobs."
        )
        if OURS in names:
            facts += f" {OURS}: one intra-op thread and an inter-op thread per stream, as `saved_models/README.md` documents."
        if not ours_swept:
            facts += " Ours: the TF Serving settings `saved_models/README.md` documents (the script's docstring)."
    setting = exports.get("onednn")
    command = [f"TF_ENABLE_ONEDNN_OPTS={setting}"] * bool(setting)
    command += ["python benchmarks/serving.py"]
    command += [f"--classifier={exports.get('classifier', 'DIR')}"]
    if names != list(contestants.CONTESTANTS):
        command += [f"--contestants={','.join(names)}"]
    command += [f"--rounds={len(rounds)}"]
    if client_counts != [1, 8, 32]:
        command += [f"--clients={','.join(map(str, client_counts))}"]
    if sentences < SST2_DEV_SIZE:
        command += [f"--sentences={sentences}"]
    if swept and counts != [1, 2]:
        command += [f"--peer_threads={','.join(map(str, counts))}"]
    command = " ".join(command) + common.section_flags(OUTPUT_DIR)
    cpu = machine.split(",")[0]
    return f"""## Serving: our SavedModel against transformers, ONNX Runtime, keras-hub ({cpu})

`{command}` (what each contestant runs: the script's docstring).
MiniLM-L6-H384 fine-tuned on SST-2 by `recipes/glue.py`, the same weights
in every contestant (exported with keras-bert's own writers); the first
{sentences} of the {SST2_DEV_SIZE} SST-2 dev sentences in file order.
Batch 1 is one sequential client; batch 32, consecutive requests of 32.
The tokenizer runs inside each timed request. Medians of {len(rounds)}
rounds, each contestant's round a fresh process, the order rotated each
round; `ours_fp32 / it` (and each `<ours> / it`) is the median of the
per-round paired ratios of examples/s (>1: ours is faster); `agrees with
{OURS}` is the share of sentences labelled as {OURS} (the float32
reference) labels them, paired by round.{facts}

Machine: {machine}. Load average (1 min) at the start and end of the
jobs: {min(loads):.2f} to {max(loads):.2f}; {common.load_note(loads, common.cores(machine), own=own)}

{chr(10).join(common.table(header, rows))}
{chr(10).join(sweep)}

Goals:

{chr(10).join(goals)}
"""
