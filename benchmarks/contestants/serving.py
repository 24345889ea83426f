"""The serving contestants of `benchmarks/serving.py` and their files:
`prepare` writes, from one fine-tuned `BertClassifier`, every contestant's
files with the same weights; `load` (`serving_loaders.py`) returns a
contestant's `predict(texts)`; `serve_requests` times it request by
request, `serve_concurrently` from several client threads."""

import os

# What each runs: the docstring of benchmarks/serving.py.
CONTESTANTS = (
    "ours_fp32", "ours_fp32_tf_function", "ours_fp32_default", "ours_int8",
    "ours_int8_calibrated", "ours_bf16", "ours_bf16_streams", "transformers",
    "onnxruntime_fp32", "onnxruntime_int8", "onnxruntime_int8_static",
    "keras_hub", "keras_hub_xla",
)  # fmt: skip
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Our exports: contestant -> `export_saved_model`'s options (`streams` and
# `calibration_texts`: filled in by `prepare`; ours_fp32_default: none, the
# default export); ours_fp32_tf_function serves ours_fp32's export.
OURS_EXPORTS = {
    "ours_fp32": {"streams": None},
    "ours_fp32_default": {},
    "ours_int8": {"quantize": "int8"},
    "ours_int8_calibrated": {"quantize": "int8", "calibration_texts": None},
    "ours_bf16": {"precision": "bfloat16"},
    "ours_bf16_streams": {"precision": "bfloat16", "streams": None},
}
# The exports refused on a CPU without AVX512-BF16 or AMX.
BFLOAT16 = ("ours_bf16", "ours_bf16_streams")
INT8 = ("ours_int8", "ours_int8_calibrated")
# Run at each count of `--peer_threads` (benchmarks/serving.py's docstring).
THREAD_SWEPT = (
    "transformers", "onnxruntime_fp32", "onnxruntime_int8",
    "onnxruntime_int8_static", "ours_fp32_default", "ours_int8",
    "ours_int8_calibrated", "ours_bf16",
)  # fmt: skip
THREAD_SUFFIX = "_threads"


def thread_variants(names, counts):
    """The job names of `names`: each of `THREAD_SWEPT` once per intra-op
    thread count of `counts` (`onnxruntime_fp32_1_threads`, ...), the
    others as they are."""
    variants = []
    for name in names:
        if name in THREAD_SWEPT and counts:
            variants += [f"{name}_{int(n)}{THREAD_SUFFIX}" for n in counts]
        else:
            variants.append(name)
    return variants


def thread_setting(job, threads):
    """`(contestant, threads)` of a job name of `thread_variants` (a
    peer's intra-op threads; both pools of our exports):
    `("onnxruntime_fp32", 1)` for `onnxruntime_fp32_1_threads`; a plain
    contestant name runs at `threads`."""
    if job.endswith(THREAD_SUFFIX):
        name, _, count = job[: -len(THREAD_SUFFIX)].rpartition("_")
        if name in THREAD_SWEPT and count.isdigit() and int(count) > 0:
            return name, int(count)
        raise ValueError(
            f"Unknown contestant {job!r}: a thread count is swept only for "
            f"{list(THREAD_SWEPT)}, as `<name>_<n>{THREAD_SUFFIX}` with n > 0."
        )
    return job, threads


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
    import time

    for request in requests[:warmup] + requests[-1:]:
        predict(request)
    latencies, labels = [], []
    for request in requests:
        start = time.perf_counter()
        predicted = predict(request)
        latencies.append(time.perf_counter() - start)
        labels.extend(int(label) for label in predicted)
    return latencies, labels


def serve_concurrently(predict, sentences, clients):
    """Every one of `sentences`, one a request, sent by `clients` threads
    sharing `predict` (client k: sentences k, k + clients, ...), all at
    once; returns `(requests_per_second, labels)`, labels in sentence
    order. A client's error is raised here."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    labels = [None] * len(sentences)

    def client(k):
        for i in range(k, len(sentences), clients):
            labels[i] = int(predict(sentences[i : i + 1])[0])

    with ThreadPoolExecutor(clients) as pool:  # a thread a client
        start = time.perf_counter()
        for future in [pool.submit(client, k) for k in range(clients)]:
            future.result()
        seconds = time.perf_counter() - start
    return len(sentences) / seconds, labels


def latency_stats(latencies, examples):
    """p50 / p99 / mean latency (ms) and examples/s of one batch size:
    `examples` served in requests that took `latencies` seconds."""
    ordered, last = sorted(latencies), len(latencies) - 1
    return {
        "p50_ms": 1000 * ordered[int(0.5 * last)],
        "p99_ms": 1000 * ordered[round(0.99 * last)],
        "mean_ms": 1000 * sum(latencies) / len(latencies),
        "examples_per_second": examples / sum(latencies),
        "requests": len(latencies),
        "examples": examples,
    }


def agreement(labels, reference):
    """The fraction of positions where `labels` equals `reference`."""
    if len(labels) != len(reference):
        raise ValueError(
            f"Label lists of different lengths ({len(labels)} and "
            f"{len(reference)}): compare the predictions of the same "
            "sentences."
        )
    return sum(a == b for a, b in zip(labels, reference)) / len(labels)


def weights_path(classifier):
    """The weights of `--classifier`: a recipe's model_dir (its
    `best.weights.h5`) or a `.weights.h5` file."""
    if classifier.endswith(".weights.h5"):
        return classifier
    return os.path.join(classifier, "best.weights.h5")


def fine_tuned(classifier, init_checkpoint):
    """`(classifier, tokenizer)`: the 2-class `BertClassifier` a recipe
    fine-tuned from `init_checkpoint`, its weights from `classifier`
    (`weights_path`), and the checkpoint's tokenizer."""
    import keras_bert

    model = keras_bert.BertClassifier.from_checkpoint(
        init_checkpoint, num_classes=2, preprocessor=None
    )
    model.load_weights(weights_path(classifier))
    return model, keras_bert.BertTokenizer.from_checkpoint(init_checkpoint)


def session(path, threads):
    """`(session, signature_defs)` of the SavedModel at `path` as TF Serving
    loads it: into a C++ Session (`tf.compat.v1.saved_model.load`, the
    loader TF Serving's `SavedModelBundle` is), its grappler config, its
    pools at `threads` `(intra-op, inter-op)` as the server's
    `--tensorflow_intra_op_parallelism` and
    `--tensorflow_inter_op_parallelism` set them (0: TensorFlow's default,
    the cores)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    intra, inter = threads
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
    )
    graph = tf.Graph()
    tf_session = tf.compat.v1.Session(graph=graph, config=config)
    with graph.as_default():
        meta_graph = tf.compat.v1.saved_model.load(tf_session, ["serve"], path)
    return tf_session, meta_graph.signature_def


def skipped_here(names):
    """`{contestant: why}` for those of `names` this machine cannot run:
    our exports whose option this CPU does not serve (bfloat16 without
    AVX512-BF16 or AMX and oneDNN, int8 without oneDNN's int8 kernel),
    which the export refuses (`keras_bert.serving.plan.cpu_problem`)."""
    from keras_bert.serving.plan import cpu_problem

    skipped = {}
    for option, exports in (("int8", INT8), ("bfloat16", BFLOAT16)):
        wanted = [name for name in exports if name in names]
        problem = cpu_problem(option) if wanted else None
        skipped.update({name: problem for name in wanted} if problem else {})
    return skipped


def exports_of(names):
    """Our exports (keys of `OURS_EXPORTS`) that contestants `names` serve,
    in `OURS_EXPORTS`' order."""
    served = {"ours_fp32_tf_function": "ours_fp32"}
    wanted = {served.get(name, name) for name in names}
    return [name for name in OURS_EXPORTS if name in wanted]


def prepare(
    classifier, tokenizer, work_dir, sequence_length, labels=None,
    streams=None, ours=("ours_fp32", "ours_int8"), calibration_texts=None,
):  # fmt: skip
    """Writes every contestant's files into `work_dir` (`sequence_length`:
    our export's and keras-hub's packing, the others' truncation; `streams`:
    our float32 export's; `ours`: which of our exports, `export_ours`;
    `calibration_texts`: ours_int8_calibrated's and
    onnxruntime_int8_static's); returns the manifest: where each
    contestant's files are, the streams and encoder implementation of our
    exports, their `variables/` bytes, ONNX Runtime's fused operators."""
    import keras_bert

    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length)
    manifest = export_ours(
        classifier, preprocessor, work_dir, ours, labels, streams,
        calibration_texts,
    )  # fmt: skip
    hf_dir = manifest["huggingface"] = os.path.join(work_dir, "huggingface")
    keras_bert.checkpoints.save_huggingface(classifier, tokenizer, hf_dir)
    manifest["keras_hub"] = os.path.join(work_dir, "keras_hub")
    # keras-hub runs the tanh GELU; MiniLM was trained with the exact one.
    keras_bert.checkpoints.save_keras_hub_preset(
        classifier, tokenizer, manifest["keras_hub"],
        allow_approximate_gelu=True,
    )  # fmt: skip
    backbone = classifier.backbone
    manifest.update(
        export_onnx_models(
            hf_dir, work_dir, backbone.num_heads, backbone.hidden_dim,
            calibration_texts, sequence_length,
        )
    )  # fmt: skip
    return manifest


def export_ours(
    classifier, preprocessor, work_dir, names, labels=None, streams=None,
    calibration_texts=None,
):  # fmt: skip
    """Writes our exports `names` (keys of `OURS_EXPORTS`; those with
    streams with `streams`, ours_int8_calibrated calibrated on
    `calibration_texts`) of `classifier` into `work_dir`; returns their part of the
    manifest: each one's path (ours_fp32_tf_function: ours_fp32's), and
    `streams`, `implementations` (the encoder implementation each export
    traces its blocks as, `keras_bert.serving.export.served_implementation`)
    and `variables_bytes` by contestant."""
    from keras_bert.serving import export_saved_model
    from keras_bert.serving.export import served_implementation

    manifest = {"streams": {}, "implementations": {}, "variables_bytes": {}}
    for name in names:
        filled = {"streams": streams, "calibration_texts": calibration_texts}
        options = {k: filled.get(k, v) for k, v in OURS_EXPORTS[name].items()}
        manifest[name] = export_saved_model(
            classifier, preprocessor, os.path.join(work_dir, name),
            labels=labels, **options,
        )  # fmt: skip
        manifest["streams"][name] = options.get("streams")
        manifest["implementations"][name] = served_implementation(
            classifier,
            **{k: v for k, v in options.items() if k != "calibration_texts"},
            calibrated="calibration_texts" in options,
        )
        variables = os.path.join(manifest[name], "variables")
        sizes = [os.path.getsize(f"{variables}/{f}") for f in os.listdir(variables)]  # fmt: skip
        manifest["variables_bytes"][name] = sum(sizes)
    if "ours_fp32" in names:  # ours_fp32_tf_function serves the same export
        for facts in (
            manifest, manifest["streams"], manifest["implementations"]
        ):  # fmt: skip
            facts["ours_fp32_tf_function"] = facts["ours_fp32"]
    return manifest


def export_onnx_models(
    hf_dir, work_dir, num_heads, hidden_size, calibration_texts=None,
    sequence_length=128,
):  # fmt: skip
    """The ONNX files of `prepare`: the Hugging Face classifier in `hf_dir`
    exported with dynamic batch and sequence axes, ONNX Runtime's BERT
    fusions of it (what Optimum's `ORTOptimizer` runs) and that graph with
    int8 weights, and with `calibration_texts` also statically quantized;
    returns their paths and the fused operators.

    As Optimum exports BERT: the TorchScript exporter (`dynamo=False`) of
    the eager attention, the graph the optimizer fuses into `Attention` and
    `EmbedLayerNormalization` nodes (it fuses neither `sdpa` nor the dynamo
    graph). The int8 graph is Optimum's `avx512_vnni(is_static=False)`:
    int8 weights, activations quantized per call, per tensor, full range;
    the fused nodes' outputs are declared float32, as the quantizer's
    error message advises (shape inference types none of them). The static
    one (`quantize_static`, MinMax ranges over `calibration_texts` in
    requests of 32, tokenized as served): QDQ, int8 activations and
    weights, what ONNX Runtime's "Quantize ONNX Models" page (Data type
    selection) names the first choice on CPU ("S8S8 with QOperator format
    will be slow on x86-64 CPUs"); its `MatMul`s are quantized, the fused
    `Attention` (no QDQ form) stays float32.
    """
    import onnx
    import torch
    import transformers
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic
    from onnxruntime.quantization import quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from onnxruntime.transformers.optimizer import optimize_model

    suffixes = {"onnx": "", "onnxruntime_fp32": "_optimized"}
    suffixes["onnxruntime_int8"] = "_int8"
    if calibration_texts:
        suffixes["onnxruntime_int8_static"] = "_int8_static"
    paths = {k: f"{work_dir}/model{v}.onnx" for k, v in suffixes.items()}
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        hf_dir, attn_implementation="eager"
    ).eval()
    example = torch.ones((2, 8), dtype=torch.int64)
    axes = {name: {0: "batch", 1: "sequence"} for name in ONNX_INPUTS}
    with torch.no_grad():
        torch.onnx.export(
            model, (example, example, torch.zeros_like(example)),
            paths["onnx"], input_names=list(ONNX_INPUTS),
            output_names=["logits"],
            dynamic_axes=dict(axes, logits={0: "batch"}), opset_version=17,
            dynamo=False,
        )  # fmt: skip
    optimized = optimize_model(
        paths["onnx"], model_type="bert", num_heads=num_heads,
        hidden_size=hidden_size,
    )  # fmt: skip
    optimized.save_model_to_file(paths["onnxruntime_fp32"])
    quantize_dynamic(
        paths["onnxruntime_fp32"], paths["onnxruntime_int8"],
        weight_type=QuantType.QInt8, per_channel=False, reduce_range=False,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )  # fmt: skip
    if calibration_texts:
        tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)

        class Batches(list):  # a `CalibrationDataReader`
            def get_next(self):
                return self.pop(0) if self else None

        batches = Batches(
            dict(tokenizer(
                calibration_texts[i : i + 32], padding=True, truncation=True,
                max_length=sequence_length, return_tensors="np",
            ))
            for i in range(0, len(calibration_texts), 32)
        )  # fmt: skip
        # Its quantizer needs every tensor's type: the documented
        # pre-processing (symbolic shape inference, no other optimization).
        typed_path = f"{work_dir}/model_typed.onnx"
        quant_pre_process(
            paths["onnxruntime_fp32"], typed_path, skip_optimization=True
        )
        quantize_static(typed_path, paths["onnxruntime_int8_static"], batches)
    statistics = optimized.get_fused_operator_statistics()
    return dict(
        paths, onnx_fused_operators={k: v for k, v in statistics.items() if v}
    )
