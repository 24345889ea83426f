"""Does the tagging head's initialiser change how fast NER trains?

One epoch of CoNLL-2003 (`../shared/conll2003/train.txt`) on
all-MiniLM-L6-v2 with the settings of `benchmarks/ner_finetune.py`
(windows of 128, the same length-grouped batches of 32 in the same order,
AdamW 5e-5 with PyTorch's epsilon, warmup 10% then linear decay, clipping
1.0, dropout 0.1, seed 0), in a plain `train_on_batch` loop. Only the
head's initial kernel differs between the `--head` variants:

  copied      the head of transformers' `BertForTokenClassification`
              (`normal_(0, 0.02)`, torch.manual_seed(seed)) copied in
  normal      drawn from a normal, std 0.02 (`BertTokenClassifier`'s default)
  truncated   drawn from a truncated normal, std 0.02 (values beyond 2 std
              redrawn: 0.88x the std), the init of Google's BERT heads

It prints the mean training loss of the epoch and of each quarter of it.
Measured (Intel Xeon, 2 cores): copied 0.3754, normal 0.3662, truncated
0.3920; transformers' own loop on these batches: 0.3759
(`benchmarks/ner_finetune.py --contestant=torch`, seed 0). That is why
`BertTokenClassifier` draws its kernel from a normal.

    python benchmarks/ner_head_init.py --head=truncated
"""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

import keras_bert  # noqa: E402
from benchmarks import common  # noqa: E402
from benchmarks.contestants import keras_loop  # noqa: E402
from keras_bert.data.length_grouped_epochs import length_grouped_order  # noqa: E402
from keras_bert.fine_tuning.ner import label_list  # noqa: E402
from keras_bert.fine_tuning.ner import ner_features  # noqa: E402
from keras_bert.fine_tuning.ner import read_conll  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_enum(
    "head", "normal", ["copied", "normal", "truncated"], "Variant."
)
flags.DEFINE_integer("seed", 0, "Seed of the head, dropout and batch order.")
flags.DEFINE_string(
    "train_file",
    os.path.join(common.SHARED, "conll2003", "train.txt"),
    "CoNLL training file.",
)

BATCH, LENGTH, STRIDE, LEARNING_RATE = 32, 128, 63, 5e-5


def main(argv):
    del argv
    import torch
    import transformers  # the reference head of --head=copied

    model_dir = common.minilm_dir()
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(model_dir)
    train = read_conll(FLAGS.train_file)
    labels = label_list(train["tags"])
    index = {label: i for i, label in enumerate(labels)}
    features = ner_features(
        tokenizer,
        train["words"],
        [[index[tag] for tag in tags] for tags in train["tags"]],
        sequence_length=LENGTH,
        stride=STRIDE,
    )
    lengths = features["padding_mask"].sum(1)
    order = length_grouped_order(lengths, BATCH, FLAGS.seed, 0)
    batches = [
        common.cut_batch(features, order[first : first + BATCH], LENGTH)
        for first in range(0, len(order), BATCH)
    ]

    torch.manual_seed(FLAGS.seed)
    reference = transformers.BertForTokenClassification.from_pretrained(
        model_dir, num_labels=len(labels)
    )
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertTokenClassifier.from_checkpoint(
        model_dir, num_classes=len(labels)
    )
    kernel = model.output_dense.kernel
    if FLAGS.head == "copied":
        kernel.assign(reference.classifier.weight.detach().numpy().T)
        model.output_dense.bias.assign(
            reference.classifier.bias.detach().numpy()
        )
    elif FLAGS.head == "truncated":
        kernel.assign(
            keras.initializers.TruncatedNormal(0.0, 0.02, FLAGS.seed)(
                kernel.shape
            )
        )
    # "normal": the model's own init.
    losses = keras_loop.train_on_batches(
        model, batches, LEARNING_RATE, epsilon_hat=False
    )
    quarter = len(losses) // 4
    quarters = [
        np.mean(losses[i * quarter : (i + 1) * quarter]) for i in range(4)
    ]
    print(
        f"head={FLAGS.head} seed={FLAGS.seed}: mean loss {np.mean(losses):.4f} "
        f"over {len(losses)} steps; quarters "
        + ", ".join(f"{q:.4f}" for q in quarters)
    )


if __name__ == "__main__":
    app.run(main)
