"""benchmarks/serving_ops.py's race: each export's ops after grappler,
outputs against the reference, and time on SST-2 dev."""

import collections
import json
import os

from absl import flags

from benchmarks import common
from benchmarks.contestants import serving as contestants
from benchmarks.serving_ops_modes.exports import BOOKKEEPING
from benchmarks.serving_ops_modes.exports import ENV
from benchmarks.serving_ops_modes.exports import EXPORT_OF
from benchmarks.serving_ops_modes.exports import OUTPUT_SENTENCES
from benchmarks.serving_ops_modes.exports import SCRIPT
from benchmarks.serving_ops_modes.exports import SHAPES
from benchmarks.serving_ops_modes.exports import THREADS
from benchmarks.serving_ops_modes.exports import _classifier
from benchmarks.serving_ops_modes.exports import _dtype
from benchmarks.serving_ops_modes.exports import _export
from benchmarks.serving_ops_modes.exports import _feed
from benchmarks.serving_ops_modes.exports import _reference_probabilities
from benchmarks.serving_ops_modes.exports import _step_ops

FLAGS = flags.FLAGS


def ops_worker(name, path, inputs_path):
    """Ops run per request, kinds after grappler, stored op types, and the
    probabilities of the saved inputs."""
    import numpy as np
    import tensorflow as tf

    from keras_bert.serving import saved_model_op_types

    session, signatures = contestants.session(path, THREADS.get(name, (0, 0)))
    signature = signatures["predict_ids"]
    output = signature.outputs["probabilities"].name
    names = {k: v.name for k, v in signature.inputs.items()}
    one = _feed(signature, 1, SHAPES[1])
    for _ in range(3):
        session.run(output, one)
    options = tf.compat.v1.RunOptions(
        trace_level=tf.compat.v1.RunOptions.FULL_TRACE,
        output_partition_graphs=True,
    )
    metadata = tf.compat.v1.RunMetadata()
    session.run(output, one, options=options, run_metadata=metadata)
    run = collections.Counter(op for op, _ in _step_ops(metadata))
    kinds, fused = collections.Counter(), collections.Counter()
    bfloat16, casts = collections.Counter(), collections.Counter()
    for graph in metadata.partition_graphs:
        for node in graph.node:
            kinds[node.op] += 1
            dtype = _dtype(node, "T")
            if node.op.startswith("_"):
                extra = list(node.attr["fused_ops"].list.s)
                kind = node.op + "".join(f"+{s.decode()}" for s in extra)
                fused[kind + ("[bfloat16]" if dtype == "bfloat16" else "")] += 1
            if dtype == "bfloat16":
                bfloat16[node.op] += 1
            if node.op == "Cast" and "bfloat16" in (
                _dtype(node, "SrcT"),
                _dtype(node, "DstT"),
            ):
                casts[f"{_dtype(node, 'SrcT')}->{_dtype(node, 'DstT')}"] += 1
    saved = np.load(inputs_path)
    probabilities = session.run(output, {names[k]: saved[k] for k in names})
    return {
        "ops_run": sum(run.values()),
        "ops_run_compute": sum(
            n for op, n in run.items() if op not in BOOKKEEPING
        ),
        "ops_run_kinds": dict(run),
        "graph_kinds": dict(kinds),
        "fused": dict(fused),
        "bfloat16_kinds": dict(bfloat16),
        "bfloat16_casts": dict(casts),
        "saved_op_types": saved_model_op_types(path),
        "probabilities": probabilities.tolist(),
    }


def time_worker(name, path):
    """examples/s of `serving_default` on SST-2 dev, batch 1 and 32."""
    session, signatures = contestants.session(path, THREADS.get(name, (0, 0)))
    signature = signatures["serving_default"]
    output = signature.outputs["label_id"].name
    text = signature.inputs["text"].name
    sentences = common.read_sst2("dev")[0]
    result = {}
    for size, chosen in ((1, sentences[: FLAGS.sentences]), (32, sentences)):
        latencies, _ = contestants.serve_requests(
            lambda request: session.run(output, {text: request}),
            contestants.request_batches(chosen, size),
            warmup=5,
        )
        key = f"batch{size}_examples_per_second"
        result[key] = len(chosen) / sum(latencies)
    return result


def _run(mode, name, paths):
    env = dict(os.environ)
    if name in ENV:
        env[ENV[name]] = "1"
    command = common.script_command(
        SCRIPT, f"--worker={mode},{name}", *common.flag_values(
            "work_dir", "sentences"
        )
    )  # fmt: skip
    return common.run_worker(command, env=env)[0]


def _fused_list(fused):
    return ", ".join(f"{op} ×{n}" for op, n in sorted(fused.items())) or "none"


def race(variants, skipped):
    """The exports' race (the default mode): exports `variants` (those
    this CPU serves; `skipped`: the others, why), their ops and outputs,
    then `--rounds` of paired timing; the "serving_ops" section."""
    import numpy as np

    from keras_bert.serving.cpu import this_cpu

    model, preprocessor = _classifier()
    paths = {}
    for name in variants:
        if name not in EXPORT_OF:
            paths[name] = _export(name, model, preprocessor, FLAGS.work_dir)
    with open(os.path.join(FLAGS.work_dir, "paths.json"), "w") as f:
        json.dump(paths, f)
    from keras_bert.data.trim_batch import trim_batch

    inputs = trim_batch(
        preprocessor(common.read_sst2("dev")[0][:OUTPUT_SENTENCES]), 1
    )
    inputs = {k: np.asarray(v) for k, v in inputs.items()}
    np.savez(os.path.join(FLAGS.work_dir, "inputs.npz"), **inputs)
    expected = _reference_probabilities(model, inputs)

    machine = common.machine_description()
    ops = {name: _run("ops", name, paths) for name in variants}
    rows = []
    for name in variants:
        result = ops[name]
        error = np.abs(np.asarray(result["probabilities"]) - expected).max()
        rows.append(
            [f"`{name}`", result["ops_run"], result["ops_run_compute"]]
            + [sum(result["graph_kinds"].values())]
            + [_fused_list(result["fused"]), f"{error:.1e}"]
        )
    lines = [
        "## Serving exports: the ops TensorFlow runs, outputs, time",
        "",
        "MiniLM-L6-H384 `BertClassifier` exports loaded in a TF1 Session "
        "(as TF Serving's loader does); one batch-1 `predict_ids` request "
        "of 24 tokens traced. Ops run: every op the executor ran (step "
        f"stats), and without {', '.join(f'`{b}`' for b in BOOKKEEPING)}. "
        "Graph nodes: the partition graph after grappler. Error: max "
        f"|probability - reference| on SST-2 dev's first {OUTPUT_SENTENCES} "
        "sentences, the reference being the same classifier with "
        "`optimizations=()` in Keras.",
        "",
        *common.table(
            ["variant", "ops run", "ops run, without bookkeeping"]
            + ["graph nodes", "fused kernels after grappler", "error"],
            rows,
            rule=["---", "---:", "---:", "---:", "---", "---:"],
        ),
        "",
    ]
    if skipped:
        lines += [
            "Not exported here (the serving plan refuses them on this CPU): "
            + "; ".join(f"`{name}`: {why}" for name, why in skipped.items()),
            "",
        ]
    for name in variants:
        if ops[name]["bfloat16_kinds"]:
            lines += [
                f"Ops `{name}` runs in bfloat16 after grappler: "
                + ", ".join(
                    f"{op} ×{n}"
                    for op, n in sorted(ops[name]["bfloat16_kinds"].items())
                )
                + "; casts: "
                + ", ".join(
                    f"{cast} ×{n}"
                    for cast, n in sorted(ops[name]["bfloat16_casts"].items())
                )
                + ".",
                "",
            ]
    lines += [
        "Op types each SavedModel stores (what a server must know):",
        "",
    ]
    stored = {name: set(ops[name]["saved_op_types"]) for name in variants}
    common_ops = set.intersection(*stored.values())
    lines.append(f"- every variant: {', '.join(sorted(common_ops))}")
    for name in variants:
        if name in EXPORT_OF:
            continue
        extra = sorted(stored[name] - common_ops)
        lines.append(f"- `{name}` also: {', '.join(extra) or 'nothing'}")

    if FLAGS.rounds:
        records = {}
        loads = []
        for k in range(FLAGS.rounds):
            shift = k % len(variants)
            for name in variants[shift:] + variants[:shift]:
                loads.append(os.getloadavg()[0])
                records[(name, k)] = _run("time", name, paths)
                print(name, k, records[(name, k)], flush=True)
        lines += [
            "",
            "`serving_default` on SST-2 dev's sentences (batch 1: the first "
            f"{FLAGS.sentences}, one request after the other; batch 32: all "
            f"872), {FLAGS.rounds} paired rounds, a fresh process per job: "
            "median examples/s, and the median over rounds of each "
            "variant's ratio to `fast` in the same round.",
            "",
        ]
        rows = []
        for name in variants:
            cells = []
            for size in (1, 32):
                key = f"batch{size}_examples_per_second"
                ours = {k: records[(name, k)][key] for k in range(FLAGS.rounds)}
                fast = {
                    k: records[("fast", k)][key] for k in range(FLAGS.rounds)
                }
                ratio = common.paired_ratio(ours, fast)[0]
                cells += [
                    f"{np.median(list(ours.values())):.1f}",
                    f"{ratio:.2f}",
                ]
            rows.append([f"`{name}`", *cells])
        lines += common.table(
            [
                "variant",
                "batch 1 ex/s",
                "/ `fast`",
                "batch 32 ex/s",
                "/ `fast`",
            ],
            rows,
            rule=["---"] + ["---:"] * 4,
        )
        lines.append("")
        lines.append(
            "Load average (1 min) as each job started: "
            + common.listed(loads, "{:.1f}")
            + "; "
            + common.load_note(loads, common.cores(machine))
        )
    setting = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    command = (
        (f"TF_ENABLE_ONEDNN_OPTS={setting} " if setting else "")
        + "python benchmarks/serving_ops.py "
        + " ".join(common.flag_values("rounds", "sentences"))
        + common.section_flags()
    )
    lines += [
        "",
        f"Command: `{command}`. Machine: {machine}; as the serving plan "
        f"reads it: {this_cpu().description}.",
    ]
    for name in variants:
        print(name, json.dumps(ops[name]["ops_run_kinds"]))
    common.publish("serving_ops", "\n".join(lines))
