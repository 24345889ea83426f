"""Fine-tuning step by step against transformers, and the tagging head's init.

Real all-MiniLM-L6-v2 weights as a CoNLL-2003 token classifier on
length-grouped batches of 32 windows (`keras_bert.fine_tuning.ner`
features, sequence 128, stride 63), with BERT's fine-tuning optimisation
on both sides: AdamW (lr 5e-5, 0.9/0.999, epsilon 1e-6, decay 0.01 except
biases and LayerNorm), 10% warmup then linear decay, clipping at 1.0.

Default: dropout off, the head drawn by transformers and copied into ours,
the first `--steps` batches; prints PyTorch's loss at every step
(`contestants/torch_loop.py`) and each keras-bert variant's distance to it
(`contestants/keras_loop.py`): `ours` (`create_adamw(...,
epsilon_hat=False)`: PyTorch's epsilon), `ours, default` (Keras' "epsilon
hat") and `keras clipping` (PyTorch's epsilon, but Keras' own global-norm
clipping, which squares an embedding gradient's slices before summing).

`--head=copied|normal|truncated`: one whole epoch with dropout 0.1, the
settings of `ner_finetune.py`, only the head's initial kernel differing:
transformers' head copied in (`normal_(0, 0.02)` after
`torch.manual_seed(seed)`), `BertTokenClassifier`'s own normal of std
0.02, or a truncated normal of std 0.02 (Google's BERT heads); prints the
epoch's mean training loss and each quarter's.

    python benchmarks/fine_tuning_parity.py --steps=30
    python benchmarks/fine_tuning_parity.py --head=truncated
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import keras_loop  # noqa: E402
from benchmarks.contestants import torch_loop  # noqa: E402

flags.DEFINE_integer("steps", 30, "Training steps to compare.")
flags.DEFINE_enum("head", None, ["copied", "normal", "truncated"], "Head init.")
flags.DEFINE_integer("limit_train", None, "--head: the first N sentences.")
flags.DEFINE_integer("seed", 0, "Seed of the head, dropout and batch order.")
FLAGS = flags.FLAGS

BATCH, LENGTH, LEARNING_RATE = 32, 128, 5e-5
SETTINGS = dict(
    epochs=1,
    batch_size=BATCH,
    learning_rate=LEARNING_RATE,
    warmup_fraction=0.1,
    weight_decay=0.01,
    adam_beta_1=0.9,
    adam_beta_2=0.999,
    adam_epsilon=1e-6,
    clipnorm=1.0,
)


def conll_batches(sentences):
    """The windows of the first `sentences` CoNLL-2003 training sentences,
    the rows of their length-grouped batches (epoch 0) and the labels."""
    import keras_bert
    from keras_bert.data.length_grouped_epochs import length_grouped_order
    from keras_bert.fine_tuning.ner import label_list
    from keras_bert.fine_tuning.ner import ner_features
    from keras_bert.fine_tuning.ner import read_conll

    data = read_conll(os.path.join(common.SHARED, "conll2003", "train.txt"))
    labels = label_list(data["tags"])
    index = {label: i for i, label in enumerate(labels)}
    features = ner_features(
        keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir()),
        data["words"][:sentences],
        [[index[t] for t in tags] for tags in data["tags"][:sentences]],
        sequence_length=LENGTH,
        stride=63,
    )
    lengths = features["padding_mask"].sum(axis=1)
    order = length_grouped_order(lengths, BATCH, FLAGS.seed, 0)
    rows = [order[i : i + BATCH] for i in range(0, len(order), BATCH)]
    return features, rows, labels


def torch_classifier(num_labels, dropout):
    import transformers

    return torch_loop.from_pretrained(
        transformers.BertForTokenClassification,
        common.minilm_dir(),
        dropout=dropout,
        seed=FLAGS.seed,
        num_labels=num_labels,
    )


def head_of(torch_model):
    """transformers' head as a Keras kernel and bias."""
    return (
        torch_model.classifier.weight.detach().numpy().T.copy(),
        torch_model.classifier.bias.detach().numpy().copy(),
    )


def keras_losses(batches, num_labels, head=None, dropout=0.0, **adamw):
    """keras-bert's per-step losses: dropout off (the backbone's and the
    head's) or as the checkpoint has it; `head`: a kernel and bias to
    start from, or a function of the model that sets them."""
    import keras

    import keras_bert

    keras.utils.clear_session()
    keras.utils.set_random_seed(FLAGS.seed)
    if dropout:
        model = keras_bert.BertTokenClassifier.from_checkpoint(
            common.minilm_dir(), num_classes=num_labels
        )
    else:
        backbone = keras_bert.BertBackbone.from_checkpoint(
            common.minilm_dir(), dropout=0.0, attention_dropout=0.0
        )
        model = keras_bert.BertTokenClassifier(
            backbone, num_labels, dropout=0.0
        )
    if callable(head):
        head(model)
    elif head is not None:
        model.output_dense.kernel.assign(head[0])
        model.output_dense.bias.assign(head[1])
    return keras_loop.train_on_batches(model, batches, LEARNING_RATE, **adamw)


def compare_steps():
    import keras
    import numpy as np
    import torch

    import keras_bert

    features, rows, labels = conll_batches(2 * FLAGS.steps * BATCH)
    rows = rows[: FLAGS.steps]
    batches = [common.cut_batch(features, r, LENGTH) for r in rows]
    model = torch_classifier(len(labels), dropout=0.0)
    head = head_of(model)

    def step_loss(batch_rows):
        tensors = {
            k: torch.from_numpy(v).long()
            for k, v in common.cut_batch(features, batch_rows, LENGTH).items()
        }
        return model(
            input_ids=tensors["token_ids"],
            token_type_ids=tensors["segment_ids"],
            attention_mask=tensors["padding_mask"],
            labels=tensors["labels"],
        ).loss

    flat = np.concatenate(rows)
    reference = torch_loop.fine_tune(
        model, SETTINGS, len(flat), lambda epoch: flat, step_loss
    )["losses"]
    variants = {
        "ours": keras_losses(batches, len(labels), head, epsilon_hat=False),
        "ours, default": keras_losses(batches, len(labels), head),
    }
    # Keras' own `_clip_gradients` on our AdamW, for one run.
    ours = keras_bert.training.AdamW._clip_gradients
    keras_bert.training.AdamW._clip_gradients = (
        keras.optimizers.AdamW._clip_gradients
    )
    try:
        variants["keras clipping"] = keras_losses(
            batches, len(labels), head, epsilon_hat=False
        )
    finally:
        keras_bert.training.AdamW._clip_gradients = ours
    print("| step | torch loss | " + " | ".join(variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for step, loss in enumerate(reference):
        differences = " | ".join(
            f"{v[step] - loss:+.1e}" for v in variants.values()
        )
        print(f"| {step} | {loss:.6f} | {differences} |")
    print(
        "max |difference|: "
        + ", ".join(
            f"{name} {max(abs(a - b) for a, b in zip(losses, reference)):.1e}"
            for name, losses in variants.items()
        )
    )


def head_init():
    import keras
    import numpy as np

    features, rows, labels = conll_batches(FLAGS.limit_train)
    batches = [common.cut_batch(features, r, LENGTH) for r in rows]
    head = None  # "normal": the model's own
    if FLAGS.head == "copied":
        head = head_of(torch_classifier(len(labels), dropout=0.1))
    elif FLAGS.head == "truncated":

        def head(model):
            kernel = model.output_dense.kernel
            initializer = keras.initializers.TruncatedNormal(
                0.0, 0.02, FLAGS.seed
            )
            kernel.assign(initializer(kernel.shape))

    losses = keras_losses(
        batches, len(labels), head, dropout=0.1, epsilon_hat=False
    )
    quarter = len(losses) // 4
    quarters = [
        np.mean(losses[i * quarter : (i + 1) * quarter]) for i in range(4)
    ]
    print(
        f"head={FLAGS.head} seed={FLAGS.seed}: mean loss {np.mean(losses):.4f} "
        f"over {len(losses)} steps; quarters {common.listed(quarters, '{:.4f}')}"
    )


def main(argv):
    del argv
    import torch

    torch.set_num_threads(2)
    head_init() if FLAGS.head else compare_steps()


if __name__ == "__main__":
    app.run(main)
