"""The speed races' model on synthetic batches, as each library runs it.

One architecture (`CONFIG`: L4/H512/A8/I2048, vocabulary 30,522) on random
ids of sequence 128 in batches of 16 (`synthetic_batch`): keras-bert
(`ours`), keras-hub (`hub`) and transformers in PyTorch (`torch`, and
`torch_compile` through `torch.compile`). `keras_training` and
`torch_step_times` train it, `inference_call` runs it forward, and
`flops_per_token` counts what each library computes (for MFU).

Training FLOPs per sequence of S tokens (then divided by S): a step costs 6
FLOPs per weight per row it multiplies (forward 2, backward 4), so a block
of N_b weights (kernels, biases, LayerNorms) on S rows costs 6 S N_b, plus
12 S S H for its attention score and context matmuls. Every library runs
the first L - 1 blocks on all S rows. The last block: ours
(`BertBackbone.outputs_at`) computes keys and values on all S rows (6 S
(2H² + 2H)) and the rest on q rows, q = 1 (`[CLS]`) to classify and 1 + P
to pre-train (P = 20 masked positions), attention 12 q S H; keras-hub and
PyTorch run the whole block on all S rows. The pooler runs on `[CLS]`
(6 (H² + H)); the pre-training head adds 6 (H² + 2H + H V + V) per decoded
row (ours and keras-hub decode the P masked positions, transformers'
`BertForPreTraining` all S), the NSP head (ours and transformers) 6 · 2
(H + 1). Inference: 2 N + 4 L S H per token (N the encoder's weights).
Embedding lookups are not counted.
"""

import time

from benchmarks.common import INPUTS

CONFIG = dict(
    vocabulary_size=30522,
    num_layers=4,
    num_heads=8,
    hidden_dim=512,
    intermediate_dim=2048,
    max_sequence_length=512,
)
BATCH, SEQUENCE, PREDICTIONS = 16, 128, 20


def synthetic_batch(batch=BATCH, seed=0):
    """Random ids, two segments, no padding, sorted masked positions and
    their ids, labels (numpy int32)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, CONFIG["vocabulary_size"], (batch, SEQUENCE))
    half = [0] * (SEQUENCE // 2) + [1] * (SEQUENCE // 2)
    positions = rng.choice(np.arange(1, SEQUENCE), (batch, PREDICTIONS))
    return {
        "token_ids": token_ids.astype("int32"),
        "segment_ids": np.repeat([half], batch, 0).astype("int32"),
        "padding_mask": np.ones((batch, SEQUENCE), "int32"),
        "masked_positions": np.sort(positions, axis=1).astype("int32"),
        "masked_ids": rng.integers(1000, 30000, (batch, PREDICTIONS)).astype(
            "int32"
        ),
        "labels": rng.integers(0, 2, (batch,)).astype("int32"),
    }


def encoder_parameters():
    """Weights of the encoder blocks (no embeddings, pooler or head)."""
    L, H, inter = (
        CONFIG[k] for k in ("num_layers", "hidden_dim", "intermediate_dim")
    )
    # Q, K, V, output projections; two feed-forward layers; two LayerNorms.
    return L * (4 * H * H + 4 * H + 2 * H * inter + inter + H + 4 * H)


def flops_per_token(framework, task):
    """Training FLOPs per token `framework` computes for `task` (`classify`
    or `pretrain`); inference (`task="inference"`) is the same for all."""
    L, H, V = (
        CONFIG[k] for k in ("num_layers", "hidden_dim", "vocabulary_size")
    )
    S, P = SEQUENCE, PREDICTIONS
    if task == "inference":
        return 2 * encoder_parameters() + 4 * L * S * H
    block = encoder_parameters() // L
    key_value = 2 * H * H + 2 * H
    full_block = 6 * S * block + 12 * S * S * H
    last_block = full_block
    if framework == "ours":
        rows = 1 if task == "classify" else 1 + P
        last_block = (
            6 * S * key_value
            + 6 * rows * (block - key_value)
            + 12 * rows * S * H
        )
    flops = (L - 1) * full_block + last_block + 6 * (H * H + H)  # pooler
    if task == "classify":
        flops += 6 * 2 * (H + 1)
    else:
        decoded = S if framework.startswith("torch") else P
        flops += 6 * (H * H + 2 * H + H * V + V) * decoded
        if framework != "hub":
            flops += 6 * 2 * (H + 1)  # next-sentence head
    return flops / S


def keras_training(
    framework, task, jit_compile=False, optimizations=None, keras_adamw=False
):
    """`(model, dataset)`: keras-bert's (`ours`) or keras-hub's (`hub`)
    model for `task`, compiled with the library's own AdamW (lr 1e-5, decay
    0.01; Keras' for `keras_adamw`), and the synthetic batch repeated.
    `optimizations`: the backbone's (ours; None: its default)."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    data = synthetic_batch()
    x = {k: data[k] for k in INPUTS}
    sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    compile_args = {"loss": sparse, "jit_compile": jit_compile}
    adamw = keras.optimizers.AdamW
    if framework == "ours":
        import keras_bert

        adamw = adamw if keras_adamw else keras_bert.training.AdamW
        extra = (
            {} if optimizations is None else {"optimizations": optimizations}
        )
        backbone = keras_bert.BertBackbone(**CONFIG, **extra)
        if task == "classify":
            model, y = keras_bert.BertClassifier(backbone, 2), data["labels"]
        else:
            model = keras_bert.BertMaskedLM(backbone)
            del compile_args["loss"]  # its own: MLM + NSP
            x["masked_positions"] = data["masked_positions"]
            y = {"mlm_logits": data["masked_ids"], "nsp_logits": data["labels"]}
    else:
        import keras_hub

        backbone = keras_hub.models.BertBackbone(**CONFIG)
        if task == "classify":
            model = keras_hub.models.BertTextClassifier(
                backbone, num_classes=2, preprocessor=None
            )
            y = data["labels"]
        else:  # keras-hub's BertMaskedLM has no next-sentence head.
            model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
            x["mask_positions"] = data["masked_positions"]
            y = data["masked_ids"]
    model.compile(optimizer=adamw(1e-5, weight_decay=0.01), **compile_args)
    return model, tf.data.Dataset.from_tensors((x, y)).repeat()


def keras_step_times(model, dataset, warmup, steps):
    """Seconds of each of `steps` training steps of `fit`, after `warmup`
    untimed ones (which trace)."""
    import keras

    model.fit(dataset, steps_per_epoch=warmup, verbose=0)
    ends = []

    class StepTimes(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if not ends:
                ends.append(time.perf_counter())

        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.perf_counter())

    model.fit(
        dataset, steps_per_epoch=steps, verbose=0, callbacks=[StepTimes()]
    )
    return [b - a for a, b in zip(ends, ends[1:])]


def hf_config(num_labels=2):
    """`CONFIG` as a `transformers.BertConfig`."""
    import transformers

    return transformers.BertConfig(
        vocab_size=CONFIG["vocabulary_size"],
        hidden_size=CONFIG["hidden_dim"],
        num_hidden_layers=CONFIG["num_layers"],
        num_attention_heads=CONFIG["num_heads"],
        intermediate_size=CONFIG["intermediate_dim"],
        max_position_embeddings=CONFIG["max_sequence_length"],
        num_labels=num_labels,
    )


def torch_inputs(batch=BATCH, task="classify"):
    """The synthetic batch as transformers' keyword arguments (labels for
    training tasks: -100 off the masked positions to pre-train)."""
    import torch

    data = {
        k: torch.tensor(v).long() for k, v in synthetic_batch(batch).items()
    }
    inputs = dict(
        input_ids=data["token_ids"],
        token_type_ids=data["segment_ids"],
        attention_mask=data["padding_mask"],
    )
    if task == "classify":
        inputs["labels"] = data["labels"]
    elif task == "pretrain":
        labels = torch.full_like(data["token_ids"], -100)
        labels.scatter_(1, data["masked_positions"], data["masked_ids"])
        inputs.update(labels=labels, next_sentence_label=data["labels"])
    return inputs


def torch_step_times(task, precision, compiled, warmup, steps):
    """Seconds of each of `steps` training steps of transformers'
    `BertForSequenceClassification` (classify) or `BertForPreTraining`
    (pretrain) with `torch.optim.AdamW` (lr 1e-5, decay 0.01), after
    `warmup` untimed ones (where `torch.compile` compiles the forward and
    backward; the optimizer stays eager)."""
    import torch
    import transformers

    from benchmarks.contestants import torch_loop

    torch.manual_seed(0)
    model = (
        transformers.BertForSequenceClassification(hf_config())
        if task == "classify"
        else transformers.BertForPreTraining(hf_config())
    )
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=1e-5, weight_decay=0.01
    )
    batches = [torch_inputs(task=task)] * (warmup + steps)
    forward = torch.compile(model) if compiled else model
    training = torch_loop.train_on(
        model, batches, optimizer, precision, forward=forward
    )
    for _ in range(warmup):
        next(training)
    times, start = [], time.perf_counter()
    for _ in training:
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
    return times


def inference_call(framework, batch, jit_compile=False):
    """One forward call of the classifier on `batch` synthetic rows:
    `predict_on_batch` of keras-bert's or keras-hub's, or transformers'
    in eval mode under `torch.inference_mode()` (`torch_compile`: through
    `torch.compile`)."""
    if framework.startswith("torch"):
        import torch
        import transformers

        torch.manual_seed(0)
        model = transformers.BertForSequenceClassification(hf_config()).eval()
        model = torch.compile(model) if framework == "torch_compile" else model
        inputs = torch_inputs(batch, task="inference")

        def call():
            with torch.inference_mode():
                return model(**inputs).logits

        return call
    import keras

    keras.utils.set_random_seed(0)
    inputs = {k: v for k, v in synthetic_batch(batch).items() if k in INPUTS}
    if framework == "ours":
        import keras_bert

        model = keras_bert.BertClassifier(keras_bert.BertBackbone(**CONFIG), 2)
    else:
        import keras_hub

        model = keras_hub.models.BertTextClassifier(
            keras_hub.models.BertBackbone(**CONFIG),
            num_classes=2,
            preprocessor=None,
        )
    model.compile(jit_compile=jit_compile)
    return lambda: model.predict_on_batch(inputs)
