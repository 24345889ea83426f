"""Fine-tuning step by step against transformers + torch.optim.AdamW.

Real all-MiniLM-L6-v2 weights as a 9-tag token classifier (the head drawn
by `transformers`, copied into ours), the first `--steps` length-grouped
batches of 32 CoNLL-2003 training windows (`keras_bert.fine_tuning.ner`
features), dropout off, and BERT's fine-tuning optimisation on both sides:
AdamW (lr 5e-5, betas 0.9/0.999, eps 1e-6, weight decay 0.01 except biases
and LayerNorm), linear warmup over 10% of the steps then linear decay,
gradient clipping to global norm 1.0. Prints, for every step, PyTorch's
loss and how far each keras-bert variant's loss is from it:

  ours              keras_bert.training.create_adamw(..., epsilon_hat=False):
                    PyTorch's epsilon
  ours, default     create_adamw(...): Keras' "epsilon hat"
  keras clipping    epsilon_hat=False, but Keras' own global-norm clipping
                    (which squares an embedding gradient's slices before
                    summing them)

    python benchmarks/fine_tuning_parity.py --steps=30

Needs the CoNLL-2003 train file of `../shared/conll2003/`, `torch` and
`transformers`.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import keras_loop  # noqa: E402
from benchmarks.contestants import torch_loop  # noqa: E402

TRAIN_FILE = os.path.join(common.SHARED, "conll2003", "train.txt")

flags.DEFINE_integer("steps", 30, "Training steps to compare.")
flags.DEFINE_integer("batch_size", 32, "Windows per batch.")
FLAGS = flags.FLAGS


# BERT's fine-tuning optimisation, as `torch_loop.fine_tune` reads it.
SETTINGS = dict(
    epochs=1,
    learning_rate=5e-5,
    warmup_fraction=0.1,
    weight_decay=0.01,
    adam_beta_1=0.9,
    adam_beta_2=0.999,
    adam_epsilon=1e-6,
    clipnorm=1.0,
)


def make_windows(tokenizer, steps, batch_size):
    """The windows of the first `2 × steps × batch_size` training
    sentences, and the rows of the first `steps` length-grouped batches
    (seed 0, epoch 0)."""
    from keras_bert.data.length_grouped_epochs import length_grouped_order
    from keras_bert.fine_tuning.ner import label_list
    from keras_bert.fine_tuning.ner import ner_features
    from keras_bert.fine_tuning.ner import read_conll

    data = read_conll(TRAIN_FILE)
    labels = label_list(data["tags"])
    index = {label: i for i, label in enumerate(labels)}
    count = 2 * steps * batch_size
    words = data["words"][:count]
    label_ids = [[index[t] for t in tags] for tags in data["tags"][:count]]
    features = ner_features(
        tokenizer, words, label_ids, sequence_length=128, stride=63
    )
    lengths = features["padding_mask"].sum(axis=1)
    order = length_grouped_order(lengths, batch_size, 0, 0)
    return features, order[: steps * batch_size], labels


def torch_losses(path, features, rows, num_labels):
    import torch
    import transformers

    model = torch_loop.from_pretrained(
        transformers.BertForTokenClassification,
        path,
        dropout=0.0,
        seed=0,
        num_labels=num_labels,
    )
    head = (
        model.classifier.weight.detach().numpy().T.copy(),
        model.classifier.bias.detach().numpy().copy(),
    )

    def step_loss(batch_rows):
        batch = common.cut_batch(features, batch_rows, 128)
        tensors = {k: torch.from_numpy(v).long() for k, v in batch.items()}
        return model(
            input_ids=tensors["token_ids"],
            token_type_ids=tensors["segment_ids"],
            attention_mask=tensors["padding_mask"],
            labels=tensors["labels"],
        ).loss

    run = torch_loop.fine_tune(
        model,
        dict(SETTINGS, batch_size=FLAGS.batch_size),
        len(rows),
        epoch_order=lambda epoch: rows,
        step_loss=step_loss,
    )
    return run["losses"], head


def keras_losses(path, batches, num_labels, head, **adamw):
    import keras

    import keras_bert

    keras.utils.clear_session()
    backbone = keras_bert.BertBackbone.from_checkpoint(
        path, dropout=0.0, attention_dropout=0.0
    )
    model = keras_bert.BertTokenClassifier(
        backbone, num_classes=num_labels, dropout=0.0
    )
    model.output_dense.kernel.assign(head[0])
    model.output_dense.bias.assign(head[1])
    return keras_loop.train_on_batches(
        model,
        batches,
        SETTINGS["learning_rate"],
        SETTINGS["warmup_fraction"],
        **adamw,
    )


class _KerasClipping:
    """Restores Keras' own `_clip_gradients` on our AdamW for a run."""

    def __enter__(self):
        import keras

        import keras_bert

        self.ours = keras_bert.training.AdamW._clip_gradients
        keras_bert.training.AdamW._clip_gradients = (
            keras.optimizers.AdamW._clip_gradients
        )

    def __exit__(self, *exc):
        import keras_bert

        keras_bert.training.AdamW._clip_gradients = self.ours


def main(argv):
    del argv
    import torch

    import keras_bert

    torch.set_num_threads(2)
    path = common.minilm_dir()
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(path)
    features, rows, labels = make_windows(
        tokenizer, FLAGS.steps, FLAGS.batch_size
    )
    reference, head = torch_losses(path, features, rows, len(labels))
    batches = [
        common.cut_batch(features, rows[first : first + FLAGS.batch_size], 128)
        for first in range(0, len(rows), FLAGS.batch_size)
    ]
    args = (path, batches, len(labels), head)
    variants = {"ours": keras_losses(*args, epsilon_hat=False)}
    variants["ours, default"] = keras_losses(*args)
    with _KerasClipping():
        variants["keras clipping"] = keras_losses(*args, epsilon_hat=False)
    print("| step | torch loss | " + " | ".join(variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for step, loss in enumerate(reference):
        differences = " | ".join(
            f"{losses[step] - loss:+.1e}" for losses in variants.values()
        )
        print(f"| {step} | {loss:.6f} | {differences} |")
    print(
        "max |difference|: "
        + ", ".join(
            f"{name} {max(abs(a - b) for a, b in zip(losses, reference)):.1e}"
            for name, losses in variants.items()
        )
    )


if __name__ == "__main__":
    app.run(main)
