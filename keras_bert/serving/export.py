"""Export a model and its preprocessor as one servable SavedModel."""

import uuid

import keras
import tensorflow as tf

from keras_bert import files
from keras_bert.layers.block_implementations import select_implementation
from keras_bert.models.backbone_of import backbone_of
from keras_bert.serving.endpoints import serving_endpoints
from keras_bert.serving.plan import plan_export
from keras_bert.serving.runtime.remapper_forms import FrozenWeights
from keras_bert.serving.runtime.remapper_forms import reading_frozen
from keras_bert.serving.served_copy import served_copy
from keras_bert.serving.warmup import write_warmup_requests
from keras_bert.text.bert_preprocessor import BertPreprocessor


def export_saved_model(
    model,
    preprocessor=None,
    export_dir=None,
    version=None,
    quantize=None,
    streams=None,
    precision="float32",
    check_cpu=True,
    calibration_texts=None,
    server_cpu=None,
    warmup=True,
    **options,
):
    """Writes `export_dir/<version>/`, a SavedModel for TensorFlow Serving.

    The tokenizer and the packing run inside the graph, so clients send raw
    UTF-8 text and the SavedModel needs only TensorFlow and
    tensorflow-text (whose ops TF Serving links in) — never keras_bert.

    What a model serves comes from the serving registry
    (`keras_bert.serving.serving_endpoints`: keras_bert's models, and the
    classes given to `register_endpoints`); `options` are passed to the
    model's endpoint builder.

    Signatures of a `BertClassifier` (options `labels`, `pair`):
        - `serving_default`: `text`, or `text_a` and `text_b` for a model
          that reads sentence pairs (`pair`, which defaults to the
          model's `pair`: what it was built for or `fit` on), string
          `(batch,)` → `probabilities` float32 `(batch, classes)`,
          `label_id` int32 `(batch,)`, `label` string `(batch,)`; for a
          regressor (`num_classes=1`) → `score` float32 `(batch,)`; for
          a multi-label model → `probabilities` float32 `(batch, labels)`
          and `labels` string `(batch, labels)` (the names over their
          threshold first, in label order, then `""`).
        - `predict_ids`: `token_ids`, `segment_ids`, `padding_mask`, int32
          `(batch, sequence)` → the same outputs.

    Signatures of a `BertBackbone` (option `pair`):
        - `serving_default`: text in → `pooled_output` and
          `mean_pooled_output` (the mean of `sequence_output` over real
          tokens), float32 `(batch, hidden)`.
        - `embed_ids`: ids in → the same plus `sequence_output`.

    Signatures of a `BertMultipleChoice`: `serving_default` on `context`
    string `(batch,)` and `choices` string `(batch, num_choices)` →
    `probabilities` float32 `(batch, num_choices)` and `choice` int32
    `(batch,)`; `predict_ids` on ids `(batch, num_choices, sequence)`
    (see `keras_bert.serving.multiple_choice`).

    Signatures of a `BertMaskedLM` (option `top_k`, default 5): fill-mask,
    `serving_default` on `text` with `[MASK]` → `token`, `token_id`,
    `score` `(batch, masks, top_k)` and `num_masks` `(batch,)`;
    `fill_mask_ids` on ids (see `keras_bert.serving.masked_lm`).

    Signatures of a `BertTextEmbedder` (see
    `keras_bert.serving.text_embedder`):
        - `serving_default`: `text` string `(batch,)` → `embedding`
          float32 `(batch, hidden)`, L2-normalised if the model normalises.
        - `embed_ids`: ids in → the same.

    The encoder blocks are traced as `serving_graph`
    (`keras_bert.layers.block_implementations`): in the forms TensorFlow's
    CPU remapper fuses into oneDNN kernels when a server loads the graph,
    their weights constants of the graph; still only stock ops
    (`saved_models/README.md` says which servers load each export).

    Every raw-text endpoint runs the model only up to the longest row of
    each request, not on all `preprocessor.sequence_length` positions:
    the same outputs, in the time the request's tokens take
    (`keras_bert.serving.endpoints` says how a new endpoint gets this).
    The ids endpoints take any sequence length up to the model's
    `max_sequence_length`.

    Versions are numbered directories, as TF Serving expects. An existing
    version is never overwritten, and TF Serving never loads a half-written
    one: it is written to a hidden directory beside the versions, then
    renamed (on a local disk), or, on object storage, where directories
    cannot be renamed at once, copied with `saved_model.pb` (what TF
    Serving waits for) last.

    Args:
        model: a `keras_bert.BertBackbone` or a task model with a serving
            signature (`BertClassifier`, `BertQuestionAnswerer`, ...).
            What is served is a copy made as the export's plan says
            (`keras_bert.serving.plan.plan_export`, applied by
            `keras_bert.serving.served_copy`): with LoRA enabled, the
            updates merged into the kernels; `model` itself is unchanged.
        preprocessor: the `keras_bert.BertPreprocessor` the model was
            trained with, or `None` (the default) for the one attached to
            the model (`model.preprocessor`). Passing the export directory
            here instead, `export_saved_model(model, "saved_models/x")`,
            also takes the model's.
        export_dir: str. The model's base directory (`.../<model_name>`).
        version: int or `None`. `None` takes the next free version (1 for
            an empty directory).
        quantize: `None` or `"int8"`. With `"int8"` the export serves an
            int8 copy of the model (int8 dense kernels and WordPiece
            table, about 4x smaller variables; `model` itself is
            unchanged), whose matmuls run on TensorFlow's oneDNN int8
            kernels, which need TensorFlow's oneDNN on (by default on
            CPUs with AVX512-VNNI, AVX512-BF16, AVX-VNNI or AMX; elsewhere
            with `TF_ENABLE_ONEDNN_OPTS=1`) and VNNI or AMX to sum int8
            products exactly: refused at export time elsewhere
            (`check_cpu`). Defaults to `None`: float
            weights.
        streams: `None` or int. With `N`, the export serves
            a copy whose blocks each have their
            heads and feed-forward units split into `N` independent
            chains that TensorFlow runs at the same time on its inter-op
            threads, in the serving forms of the default export
            (`serving_graph_streams` in
            `keras_bert.serving.runtime.block`). Serve it with one
            intra-op thread and `N` inter-op threads (TF Serving:
            `--tensorflow_intra_op_parallelism=1
            --tensorflow_inter_op_parallelism=N`), `N` the number of
            cores: then short requests use every core, where TensorFlow's
            matmuls of a few dozen rows use one (docs/serving.md).
            The same outputs, to float rounding; float weights only
            (`keras_bert.serving.plan.INCOMPATIBLE`), float32 or
            bfloat16 matmuls (`precision`). Serves on every CPU.
            Defaults to `None`: the blocks as they are.
        precision: `"float32"` or `"bfloat16"`. With `"bfloat16"`, the
            encoder blocks' dense matmuls (q|k|v, attention output,
            feed-forward) run in bfloat16 on bfloat16 constants
            (`serving_graph_bfloat16` in
            `keras_bert.serving.runtime.block`); the attention's
            scores, softmax and context, the residual adds, the
            LayerNorms, the embeddings, the pooler, the head and every
            output stay float32. On a CPU with AVX512-BF16 or AMX,
            oneDNN runs those matmuls on them (docs/serving.md:
            accuracy; `saved_models/README.md`: which servers load it).
            With `streams`, the streams' matmuls so
            (`serving_graph_streams_bfloat16`). Refused on a CPU without
            either, or in a process with oneDNN off (`check_cpu`), and with
            `quantize`. Defaults to `"float32"`.
        calibration_texts: `None`, or with `quantize="int8"` a few hundred
            sentences of the text the model will serve (a list of strings;
            for sentence pairs a tuple of two lists). The int8 copy runs
            on them first, and each encoder dense layer's inputs are then
            quantized over the range they took there
            (`keras_bert.serving.int8_calibration`), the int8 matmul with
            its bias, GELU and dequantization one oneDNN kernel
            (`serving_graph_int8_calibrated`): faster than per-row ranges,
            but `_QuantizedMatMul`, an internal op of TensorFlow's oneDNN
            builds, is then in the graph (`saved_models/README.md`: which
            servers load it). Defaults to `None`: per-row ranges, stock
            ops. Needs oneDNN on in this process, where it runs (never
            waived by `check_cpu=False`).
        check_cpu: bool. `False` exports an option this CPU cannot serve
            (`quantize="int8"` without oneDNN, `precision="bfloat16"`
            without AVX512-BF16 or AMX) for a server that can, with a
            warning instead of a `ValueError`
            (`keras_bert.serving.plan.CPU_NEEDS`). Defaults to `True`.
        server_cpu: `None`, or the kind of CPU the export will be served
            on, when that is not this one: a key of
            `keras_bert.serving.cpu.SERVER_CPUS` (`"avx2"`, `"avx512"`,
            `"avx512_vnni"`, `"avx512_bf16"`, `"amx"`), with `"+onednn"`
            or `"-onednn"` where the server sets `TF_ENABLE_ONEDNN_OPTS`
            against TensorFlow's default there (e.g. `"avx2+onednn"`), or
            a `keras_bert.serving.cpu.server_cpu(...)`. The export is
            planned for that CPU (e.g. an `"avx2"` server gets Keras'
            layers, which serve faster there without oneDNN) and refused
            if it cannot serve it there. Defaults to `None`: this CPU,
            with this process's oneDNN setting.
        warmup: bool. Write TF Serving's warmup requests
            (`assets.extra/tf_serving_warmup_requests`: one request of
            batch 1 per signature, `keras_bert.serving.warmup`), which TF
            Serving runs as it loads the model, so that its first client
            request does not pay for the graph's optimisation. Defaults
            to `True`.
        **options: the model's export options, e.g. for a classifier
            `labels` (list of str: the label of each class, for the `label`
            output; defaults to the model's `label_names`, else `"0"`,
            `"1"`, ...) and `pair` (bool: the model reads sentence pairs
            `text_a`, `text_b` instead of `text`; defaults to the model's
            `pair`, and one that contradicts it is a `ValueError`); and
            for every model `trim` (bool: `False` runs the
            raw-text endpoints on all `sequence_length` positions: the
            same outputs, slower; for comparisons).

    Returns:
        The path of the written version directory.

    Example:
    ```python
    path = keras_bert.serving.export_saved_model(
        classifier, preprocessor, "saved_models/sst2", labels=["neg", "pos"]
    )
    # int8 weights (a quantized copy; `classifier` stays float):
    path = keras_bert.serving.export_saved_model(
        classifier, preprocessor, "saved_models/sst2", quantize="int8"
    )
    # A model built with `preprocessor=` exports with it:
    path = keras_bert.serving.export_saved_model(
        classifier, export_dir="saved_models/sst2", labels=["neg", "pos"]
    )
    ```
    """
    if isinstance(preprocessor, str) and export_dir is None:
        # export_saved_model(model, export_dir): the model's preprocessor.
        preprocessor, export_dir = None, preprocessor
    if export_dir is None:
        raise ValueError(
            "Received no value for argument `export_dir`, the directory to "
            "export to. Pass export_dir='saved_models/<name>'."
        )
    if preprocessor is None:
        preprocessor = getattr(model, "preprocessor", None)
        if preprocessor is None:
            raise ValueError(
                f"The {type(model).__name__} has no preprocessor attached "
                "and none was passed: the export needs one to read raw "
                "text. Pass `preprocessor=keras_bert.BertPreprocessor("
                "tokenizer)` (the one the model was trained with), or build "
                "the model with `preprocessor=...`."
            )
    if not isinstance(preprocessor, BertPreprocessor):
        raise ValueError(
            "Received an invalid value for argument `preprocessor`, expected "
            "a keras_bert.BertPreprocessor. Received: "
            f"preprocessor={preprocessor!r}"
        )
    plan = plan_export(
        model,
        quantize,
        streams,
        precision,
        calibration_texts,
        check_cpu,
        server_cpu=server_cpu,
    )
    model = served_copy(model, plan, preprocessor, calibration_texts)
    endpoints = serving_endpoints(model, preprocessor, **options)
    version_dir = _new_version_dir(export_dir, version)

    archive = keras.export.ExportArchive()
    # Only what the endpoints read is saved (`write_out` tracks the
    # variables their functions capture): the model is not tracked, which
    # would store each of its weights twice, as Keras wrappers and as the
    # captured variables (keras-team/keras#23553), nor the blocks' own
    # kernels where they are read as constants or laid out per stream.
    archive.track(preprocessor)
    # Read by every endpoint from one function of the SavedModel: stored
    # once (as each block's weights, `shared_trace`).
    frozen = FrozenWeights(_frozen_variables(model, plan))
    for name, (function, signature) in endpoints.items():
        archive.add_endpoint(name, reading_frozen(function, frozen), signature)

    # Written beside the versions, then renamed: TF Serving never sees a
    # half-written version (it ignores names that are not numbers).
    staging = files.join(export_dir, f".export-{uuid.uuid4().hex}")
    try:
        # The endpoints are traced here, their blocks as the plan says.
        archive.write_out(staging, verbose=False)
        if files.exists(version_dir):
            raise FileExistsError(
                f"Version directory {version_dir} appeared while exporting; "
                "nothing was overwritten. Export again to take the next "
                "free version."
            )
        if files.is_local(export_dir):
            if warmup:
                write_warmup_requests(staging, endpoints, preprocessor)
            tf.io.gfile.rename(staging, version_dir)
        else:
            # Into the version before its saved_model.pb, which TF Serving
            # loads it (and reads the warmup file) on; not into the staging
            # copy, whose listing would fail: TensorFlow's ram:// file
            # system lists `assets.extra/x` as a file `.extra` of `assets`.
            if warmup:
                write_warmup_requests(version_dir, endpoints, preprocessor)
            files.copy_tree(staging, version_dir, last=("saved_model.pb",))
    finally:
        if files.exists(staging):
            tf.io.gfile.rmtree(staging)
    return version_dir


def _frozen_variables(model, plan):
    """The weights an export reads as constants of its graph
    (`reading_frozen`), where the plan runs the remapper's forms frozen (as
    the blocks' `serving_graph` does theirs): the model's, but the encoder
    blocks' (their serving implementation freezes them itself, or reads
    int8 ones as variables) and the WordPiece table's (gathered from, and
    too large to copy into the graph)."""
    backbone = backbone_of(model)
    if not (plan.remapper_forms and plan.frozen):
        return []
    kept = {id(v) for v in backbone.embedding.token_embedding.weights}
    for block in backbone.transformer_layers:
        kept.update(id(v) for v in block.weights)
    return [v for v in model.weights if id(v) not in kept]


def served_implementation(
    model,
    quantize=None,
    streams=None,
    precision="float32",
    calibrated=False,
    server_cpu=None,
):
    """The encoder implementation an export of `model` with these options
    serves its blocks with: a name of
    `keras_bert.serving.runtime.block.IMPLEMENTATIONS`, or for a model
    built without `"remapper_serving_graph"` (and without streams) the
    blocks' own inference implementation
    (`keras_bert.layers.block_implementations`, e.g. `"fast"`).

    `plan_export(...).implementation`, without writing anything and
    without asking what this CPU serves (`check_cpu=None`): for
    benchmarks and reports that say what each export runs.

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.
        quantize, streams, precision: as `export_saved_model` takes them.
        calibrated: bool. Whether the export is given `calibration_texts`
            (with `quantize="int8"`). Defaults to `False`.
        server_cpu: as `export_saved_model` takes it.

    Returns:
        str, e.g. `"serving_graph"` for the default export,
        `"serving_graph_streams"` with `streams`, `"serving_graph_bfloat16"`
        with `precision="bfloat16"`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=8,
    )
    served_implementation(backbone)  # "serving_graph" ("fast" where oneDNN
    # is off on a CPU without AVX-512)
    served_implementation(backbone, streams=2)  # "serving_graph_streams"
    ```
    """
    plan = plan_export(
        model,
        quantize,
        streams,
        precision,
        [""] if calibrated else None,
        check_cpu=None,
        server_cpu=server_cpu,
    )
    if plan.implementation is not None:
        return plan.implementation
    # The blocks' own inference: what it chooses for an inference call.
    block = backbone_of(model).transformer_layers[0]
    return select_implementation(block, None, None, None, False)[0]


def _new_version_dir(export_dir, version):
    files.makedirs(export_dir)
    existing = [
        int(name.rstrip("/"))
        for name in tf.io.gfile.listdir(export_dir)
        if name.rstrip("/").isdigit()
        and files.isdir(files.join(export_dir, name.rstrip("/")))
    ]
    if version is None:
        version = max(existing, default=0) + 1
    if not isinstance(version, int) or version <= 0:
        raise ValueError(
            "Received an invalid value for argument `version`, expected a "
            f"positive integer or None. Received: version={version!r}"
        )
    path = files.join(export_dir, str(version))
    if files.exists(path):
        raise FileExistsError(
            f"{path} already exists and is never overwritten. Pass another "
            f"`version` (next free: {max(existing, default=0) + 1}) or "
            "version=None."
        )
    return path
