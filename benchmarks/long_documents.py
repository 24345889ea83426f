r"""Long documents: windows against truncation, keras-bert against
transformers, on Linux kernel documentation pages.

    python benchmarks/data_sets.py --data_set=kernel_docs --output_dir=/tmp/kernel_docs
    python benchmarks/long_documents.py --data_dir=/tmp/kernel_docs

Four contestants fine-tune all-MiniLM-L6-v2 to tell a page's top-level
`Documentation/` folder (`benchmarks/data_sets.py --data_set=kernel_docs`: six labels)
with the same budget — `SETTINGS` (sequence length, epochs, batch size,
learning rate, warmup, AdamW, dropout, seed), the same pages — and print
the dev accuracy of the last epoch:

- `keras_bert_windows`: `BertClassifier(..., doc_stride=, max_windows=)`:
  each page read in windows of `sequence_length - 2` tokens every
  `doc_stride` tokens (at most `max_windows`), the mean of the windows'
  logits scored against the page's label in `fit` and in `evaluate`. A
  batch is `batch_size // max_windows` pages (`--window_batch_pages`
  overrides), so that it holds about as many windows as torch_windows'
  batch of `batch_size` windows and both make about as many updates:
  the same compute per update and per epoch. (With `batch_size` pages it
  would make half the updates of torch_windows on twice the windows
  each.)
- `keras_bert_truncation`: `BertClassifier` as it comes: each page's
  first `sequence_length - 2` tokens.
- `torch_windows`: transformers' `BertForSequenceClassification` with
  the windowing a transformers user writes: the fast tokenizer's
  `return_overflowing_tokens=True, stride=sequence_length - 2 -
  doc_stride` (its `stride` is the overlap), the first `max_windows`
  windows of each page (`overflow_to_sample_mapping`), each window a
  training example carrying its page's label (batches of `batch_size`
  windows), and at evaluation each page's windows' logits averaged.
- `torch_truncation`: the same model on `truncation=True` alone.

Both torch contestants train in `benchmarks/contestants/torch_loop.py`
(AdamW without decay on biases and LayerNorm, linear warmup and decay,
global-norm clipping); keras-bert's in `fit` with the same optimizer
(`epsilon_hat=False`, PyTorch's epsilon). Every contestant reads its
training rows (pages; for torch_windows, windows) in a seeded
permutation per epoch (`page_order`): keras-bert's `fit` gets the pages
as a `tf.data.Dataset` of text batches in that order, rather than its
length-grouped batches of raw-text lists (which, on a few hundred pages
whose length goes with their folder, sort a whole epoch by length). Each contestant runs in its own
process (`--contestant=NAME`); the driver prints a Markdown table and
writes each record to `--records_dir`. The torch windows side also checks
that its windows hold the token ids of keras-bert's
(`DocumentWindows`), page by page.

`--limit_train` / `--limit_dev` take every k-th page of a split (a
budget on a slow machine); the table says how many pages ran.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

CONTESTANTS = (
    "keras_bert_windows",
    "keras_bert_truncation",
    "torch_windows",
    "torch_truncation",
)
# What every contestant trains with; `--epochs`, `--max_windows` and
# `--learning_rate` override (the records keep what ran).
SETTINGS = dict(
    sequence_length=128, doc_stride=63, max_windows=2, epochs=1,
    batch_size=16, learning_rate=1e-4, warmup_fraction=0.1,
    weight_decay=0.01, adam_beta_1=0.9, adam_beta_2=0.999,
    adam_epsilon=1e-6, clipnorm=1.0, dropout=0.1, seed=0,
)  # fmt: skip

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "data_dir", None, "data_sets.py --data_set=kernel_docs's --output_dir."
)
flags.DEFINE_enum("contestant", None, list(CONTESTANTS), "Run one (worker).")
flags.DEFINE_list("contestants", list(CONTESTANTS), "The driver runs these.")
flags.DEFINE_integer("limit_train", None, "Every k-th train page, ~N pages.")
flags.DEFINE_integer("limit_dev", None, "Every k-th dev page, ~N pages.")
flags.DEFINE_integer("threads", 2, "torch and TensorFlow threads.")
flags.DEFINE_integer("epochs", SETTINGS["epochs"], "Fine-tuning epochs.")
flags.DEFINE_integer("max_windows", SETTINGS["max_windows"], "Per page.")
flags.DEFINE_float("learning_rate", SETTINGS["learning_rate"], "Peak rate.")
flags.DEFINE_integer(
    "window_batch_pages",
    None,
    "Pages per batch of keras_bert_windows; default batch_size // "
    "max_windows (about batch_size windows, as torch_windows' batches).",
)
flags.DEFINE_bool("summarize", False, "Print the table of --records_dir.")
flags.DEFINE_string(
    "records_dir",
    os.path.join(common.REPO, "benchmarks", "long_documents"),
    "Where each contestant's record goes.",
)


def settings():
    return dict(
        SETTINGS,
        epochs=FLAGS.epochs,
        max_windows=FLAGS.max_windows,
        learning_rate=FLAGS.learning_rate,
        window_batch_pages=FLAGS.window_batch_pages
        or max(1, SETTINGS["batch_size"] // FLAGS.max_windows),
    )


def read_split(split, limit):
    """`(texts, labels)` of `<data_dir>/<split>.jsonl`, every k-th page
    when `limit` asks for about that many."""
    import tensorflow as tf

    path = os.path.join(FLAGS.data_dir, f"{split}.jsonl")
    with tf.io.gfile.GFile(path) as file:
        rows = [json.loads(line) for line in file]
    if limit and limit < len(rows):
        step = len(rows) / limit
        rows = [rows[int(i * step)] for i in range(limit)]
    return [row["text"] for row in rows], [row["label"] for row in rows]


def page_order(num_rows, s, epoch):
    """Epoch `epoch`'s order of the training rows, both sides'."""
    import numpy as np

    return np.random.default_rng([s["seed"], epoch]).permutation(num_rows)


def label_names(labels):
    return sorted(set(labels))


def run_keras_bert(windows):
    import keras
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert.training import TRAINING_DEFAULTS
    from keras_bert.training import FitWarmupLinearDecay

    s = settings()
    train_texts, train_labels = read_split("train", FLAGS.limit_train)
    dev_texts, dev_labels = read_split("dev", FLAGS.limit_dev)
    names = label_names(train_labels)
    keras.utils.set_random_seed(s["seed"])
    window_arguments = (
        dict(doc_stride=s["doc_stride"], max_windows=s["max_windows"])
        if windows
        else {}
    )
    model = keras_bert.BertClassifier.from_checkpoint(
        common.minilm_dir(),
        num_classes=len(names),
        label_names=names,
        dropout=s["dropout"],
        sequence_length=s["sequence_length"],
        **window_arguments,
    )
    model.compile(
        optimizer=TRAINING_DEFAULTS["classifier"].create_optimizer(
            FitWarmupLinearDecay(s["learning_rate"], s["warmup_fraction"]),
            epsilon_hat=False,
        )
    )
    # The pages in the torch contestants' order (`page_order`), batched
    # as they are; `fit` cuts each batch's windows in the pipeline.
    index = {name: i for i, name in enumerate(names)}
    texts = np.array(train_texts, dtype=object)
    targets = np.array([index[label] for label in train_labels])
    orders = [page_order(len(texts), s, e) for e in range(s["epochs"])]
    order = np.concatenate(orders)
    batch_size = s["window_batch_pages"] if windows else s["batch_size"]
    dataset = tf.data.Dataset.from_tensor_slices(
        (list(texts[order]), targets[order])
    ).batch(batch_size)
    start = time.perf_counter()
    model.fit(
        dataset, epochs=s["epochs"], verbose=2,
        steps_per_epoch=-(-len(texts) // batch_size),
    )  # fmt: skip
    train_seconds = time.perf_counter() - start
    logits = model.predict(dev_texts, batch_size=32, verbose=0)
    predicted = np.array(names)[logits.argmax(-1)]
    return dict(
        accuracy=float(np.mean(predicted == np.array(dev_labels))),
        train_seconds=train_seconds,
        train_pages=len(train_texts),
        dev_pages=len(dev_texts),
    )


def torch_features(tokenizer, texts, windows, s):
    """transformers' encodings of `texts` and each row's page."""
    if not windows:
        encoded = tokenizer(
            texts, truncation=True, max_length=s["sequence_length"]
        )
        return encoded["input_ids"], list(range(len(texts)))
    encoded = tokenizer(
        texts,
        truncation=True,
        max_length=s["sequence_length"],
        stride=s["sequence_length"] - 2 - s["doc_stride"],
        return_overflowing_tokens=True,
    )
    ids, pages, seen = [], [], {}
    for row, page in enumerate(encoded["overflow_to_sample_mapping"]):
        seen[page] = seen.get(page, 0) + 1
        if seen[page] <= s["max_windows"]:
            ids.append(encoded["input_ids"][row])
            pages.append(page)
    return ids, pages


def same_windows_as_keras_bert(ids, pages, texts, s):
    """How many pages' windows hold the token ids keras-bert cuts."""
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert.text.document_windows import DocumentWindows

    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir()),
        sequence_length=s["sequence_length"],
    )
    cut = DocumentWindows(preprocessor, s["doc_stride"], s["max_windows"])
    same = 0
    for page, text in enumerate(texts):
        flat = cut.flat(tf.constant([text]))
        ours = [
            list(row[mask > 0])
            for row, mask in zip(
                flat["token_ids"].numpy(), flat["padding_mask"].numpy()
            )
        ]
        theirs = [list(i) for i, p in zip(ids, pages) if p == page]
        same += ours == theirs
    del np
    return same


def run_torch(windows):
    import numpy as np
    import torch
    import transformers

    from benchmarks.contestants import torch_loop

    s = settings()
    torch.set_num_threads(FLAGS.threads)
    train_texts, train_labels = read_split("train", FLAGS.limit_train)
    dev_texts, dev_labels = read_split("dev", FLAGS.limit_dev)
    names = label_names(train_labels)
    index = {name: i for i, name in enumerate(names)}
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    train_ids, train_pages = torch_features(tokenizer, train_texts, windows, s)
    dev_ids, dev_pages = torch_features(tokenizer, dev_texts, windows, s)
    train_targets = [index[train_labels[page]] for page in train_pages]
    model = torch_loop.from_pretrained(
        transformers.BertForSequenceClassification, common.minilm_dir(),
        dropout=s["dropout"], seed=s["seed"], num_labels=len(names),
    )  # fmt: skip

    def batch(ids, rows):
        width = max(len(ids[row]) for row in rows)
        input_ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            input_ids[i, : len(ids[row])] = torch.tensor(ids[row])
            mask[i, : len(ids[row])] = 1
        return dict(input_ids=input_ids, attention_mask=mask)

    def loss(rows):
        targets = torch.tensor([train_targets[row] for row in rows])
        return model(**batch(train_ids, rows), labels=targets).loss

    def order(epoch):
        return page_order(len(train_ids), s, epoch)

    start = time.perf_counter()
    torch_loop.fine_tune(model, s, len(train_ids), order, loss, log_every=20)
    train_seconds = time.perf_counter() - start
    outputs = torch_loop.predict(
        model,
        lambda rows: model(**batch(dev_ids, rows)).logits.numpy(),
        len(dev_ids),
        batch_size=32,
    )
    logits = np.zeros((len(dev_ids), len(names)), np.float32)
    for rows, output in outputs:
        logits[rows] = output
    pages = np.array(dev_pages)
    page_logits = np.stack(
        [logits[pages == page].mean(axis=0) for page in range(len(dev_texts))]
    )
    predicted = np.array(names)[page_logits.argmax(-1)]
    record = dict(
        accuracy=float(np.mean(predicted == np.array(dev_labels))),
        train_seconds=train_seconds,
        train_pages=len(train_texts),
        dev_pages=len(dev_texts),
        train_rows=len(train_ids),
    )
    if windows:
        record["dev_pages_with_keras_bert_windows"] = (
            same_windows_as_keras_bert(dev_ids, dev_pages, dev_texts, s)
        )
    return record


def worker():
    name = FLAGS.contestant
    windows = name.endswith("_windows")
    if name.startswith("torch"):
        result = run_torch(windows)
    else:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
        result = run_keras_bert(windows)
    common.print_result(result)


def driver():
    for name in FLAGS.contestants:
        command = common.script_command(
            __file__, f"--contestant={name}",
            *common.flag_values(
                "data_dir", "limit_train", "limit_dev", "threads", "epochs",
                "max_windows", "learning_rate", "window_batch_pages",
            ),
        )  # fmt: skip
        context = common.job_context()
        result, seconds, _ = common.run_worker(command)
        record = dict(
            result, contestant=name, settings=settings(), seconds=seconds,
            **context,
        )  # fmt: skip
        common.write_record(
            os.path.join(FLAGS.records_dir, f"{name}.json"), record
        )
        print(json.dumps(record), flush=True)
    summarize()


def summarize():
    """Prints the Markdown table of the records in `--records_dir`."""
    records = {
        record["contestant"]: record
        for record in common.read_records(FLAGS.records_dir)
    }
    rows = [records[name] for name in CONTESTANTS if name in records]
    print("| contestant | dev accuracy (%) | train pages | dev pages |")
    print("|---|---|---|---|")
    for record in rows:
        print(
            f"| {record['contestant']} | {100 * record['accuracy']:.1f} | "
            f"{record['train_pages']} | {record['dev_pages']} |"
        )
    for record in rows:
        same = record.get("dev_pages_with_keras_bert_windows")
        print(
            f"\n{record['contestant']}: `{record['command']}`; settings "
            f"{record['settings']}; train {record['train_seconds']:.0f} s, "
            f"load average {record['load_average']} as it started"
            + (
                f"; {same} of {record['dev_pages']} dev pages' windows hold "
                "keras-bert's token ids"
                if same is not None
                else ""
            )
        )
    print("\n" + rows[0]["machine"])


def main(argv):
    del argv
    if FLAGS.summarize:
        return summarize()
    if not FLAGS.data_dir:
        raise app.UsageError(
            "Pass --data_dir (benchmarks/data_sets.py --data_set=kernel_docs's output)."
        )
    return worker() if FLAGS.contestant else driver()


if __name__ == "__main__":
    app.run(main)
