r"""Long documents: windows against truncation, keras-bert against
transformers, telling a Linux kernel documentation page's top-level
`Documentation/` folder (six labels; `benchmarks/data_sets.py
--data_set=kernel_docs --output_dir=DIR` builds them, `--data_dir=DIR`).

- keras_bert_windows: `BertClassifier(..., doc_stride=, max_windows=)`,
  each page read in windows of `sequence_length - 2` tokens every
  `doc_stride` (at most `max_windows`), the mean of the windows' logits
  scored in `fit` and `evaluate`; a batch is `batch_size // max_windows`
  pages (`--window_batch_pages`), about as many windows as torch_windows'
  batch, so both make about as many updates of the same compute;
- keras_bert_truncation: `BertClassifier` as it comes (the first tokens);
- torch_windows: `BertForSequenceClassification` with the windowing a
  transformers user writes (`return_overflowing_tokens=True`, `stride`
  the overlap, the first `max_windows` of a page), each window a training
  example with its page's label, a page's windows' logits averaged at
  evaluation; it also checks that its windows hold keras-bert's token ids
  (`DocumentWindows`), page by page;
- torch_truncation: the same model on `truncation=True` alone.

torch trains in `contestants/torch_loop.py`, keras-bert in `fit` with the
same optimizer (PyTorch's epsilon); every side reads its rows in the same
seeded permutation per epoch (keras-bert's `fit` gets a `tf.data` of text
batches in that order, not its length-grouped batches, which on a few
hundred pages whose length goes with their folder sort an epoch by
length). `--limit_train` / `--limit_eval` take every k-th page.
"""

import json
import os
import time

import numpy as np

from benchmarks import common
from benchmarks.tasks import FLAGS
from benchmarks.tasks import epoch_order
from benchmarks.tasks import pad
from benchmarks.tasks import threads
from benchmarks.tasks import torch_fine_tune
from benchmarks.tasks import torch_model
from benchmarks.tasks import torch_predict

CONTESTANTS = (
    "keras_bert_windows", "keras_bert_truncation", "torch_windows",
    "torch_truncation",
)  # fmt: skip
RECORDS = "long_documents"
SETTINGS = dict(
    sequence_length=128, doc_stride=63, max_windows=2, epochs=1,
    batch_size=16, learning_rate=1e-4, warmup_fraction=0.1,
    weight_decay=0.01, adam_beta_1=0.9, adam_beta_2=0.999,
    adam_epsilon=1e-6, clipnorm=1.0, dropout=0.1, seed=0,
)  # fmt: skip


def settings():
    """`SETTINGS` with the flags that override them (the records keep
    what ran)."""
    s = dict(SETTINGS, seed=FLAGS.seed)
    for name in ("epochs", "max_windows", "learning_rate"):
        s[name] = FLAGS[name].value or s[name]
    s["window_batch_pages"] = FLAGS.window_batch_pages or max(
        1, s["batch_size"] // s["max_windows"]
    )
    return s


def read_split(split, limit):
    """`(texts, labels)` of `<data_dir>/<split>.jsonl`, every k-th page
    when `limit` asks for about that many."""
    with open(os.path.join(FLAGS.data_dir, f"{split}.jsonl")) as file:
        rows = [json.loads(line) for line in file]
    if limit and limit < len(rows):
        step = len(rows) / limit
        rows = [rows[int(i * step)] for i in range(limit)]
    return [row["text"] for row in rows], [row["label"] for row in rows]


def record_name(contestant):
    return f"{contestant}_seed{FLAGS.seed}"


def run_keras_bert(s, windows, train, dev, names):
    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.training import TRAINING_DEFAULTS
    from keras_bert.training import FitWarmupLinearDecay

    tf.config.threading.set_intra_op_parallelism_threads(threads(2))
    keras.utils.set_random_seed(s["seed"])
    cut = dict(doc_stride=s["doc_stride"], max_windows=s["max_windows"])
    model = keras_bert.BertClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=len(names), label_names=names,
        dropout=s["dropout"], sequence_length=s["sequence_length"],
        **(cut if windows else {}),
    )  # fmt: skip
    model.compile(
        optimizer=TRAINING_DEFAULTS["classifier"].create_optimizer(
            FitWarmupLinearDecay(s["learning_rate"], s["warmup_fraction"]),
            epsilon_hat=False,
        )
    )
    texts = np.array(train[0], dtype=object)
    targets = np.array([names.index(label) for label in train[1]])
    order = np.concatenate(
        [epoch_order(len(texts), e, s["seed"]) for e in range(s["epochs"])]
    )
    batch_size = s["window_batch_pages"] if windows else s["batch_size"]
    dataset = tf.data.Dataset.from_tensor_slices(
        (list(texts[order]), targets[order])
    ).batch(batch_size)
    start = time.perf_counter()
    model.fit(
        dataset, epochs=s["epochs"], verbose=2,
        steps_per_epoch=-(-len(texts) // batch_size),
    )  # fmt: skip
    seconds = time.perf_counter() - start
    return model.predict(dev[0], batch_size=32, verbose=0), dict(
        train_seconds=seconds
    )


def torch_features(tokenizer, texts, windows, s):
    """transformers' encodings of `texts` and each row's page."""
    if not windows:
        encoded = tokenizer(
            texts, truncation=True, max_length=s["sequence_length"]
        )
        return encoded["input_ids"], list(range(len(texts)))
    encoded = tokenizer(
        texts, truncation=True, max_length=s["sequence_length"],
        stride=s["sequence_length"] - 2 - s["doc_stride"],
        return_overflowing_tokens=True,
    )  # fmt: skip
    ids, pages, seen = [], [], {}
    for row, page in enumerate(encoded["overflow_to_sample_mapping"]):
        seen[page] = seen.get(page, 0) + 1
        if seen[page] <= s["max_windows"]:
            ids.append(encoded["input_ids"][row])
            pages.append(page)
    return ids, pages


def same_windows_as_keras_bert(ids, pages, texts, s):
    """How many pages' windows hold the token ids keras-bert cuts."""
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
        same += ours == [list(i) for i, p in zip(ids, pages) if p == page]
    return same


def run_torch(s, windows, train, dev, names):
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    train_ids, train_pages = torch_features(tokenizer, train[0], windows, s)
    dev_ids, dev_pages = torch_features(tokenizer, dev[0], windows, s)
    targets = torch.tensor([names.index(train[1][p]) for p in train_pages])
    model = torch_model(
        transformers.BertForSequenceClassification, s, num_labels=len(names)
    )

    def batch(ids, rows):
        input_ids = torch.tensor(pad([ids[row] for row in rows]))
        return dict(input_ids=input_ids, attention_mask=(input_ids > 0).long())

    def loss(rows):
        return model(**batch(train_ids, rows), labels=targets[rows]).loss

    start = time.perf_counter()
    torch_fine_tune(model, s, len(train_ids), loss, log_every=20)
    train_seconds = time.perf_counter() - start
    logits = torch_predict(
        model, lambda rows: model(**batch(dev_ids, rows)).logits.numpy(),
        len(dev_ids), batch_size=32,
    )  # fmt: skip
    pages = np.array(dev_pages)
    extra = dict(train_seconds=train_seconds, train_rows=len(train_ids))
    if windows:
        extra["dev_pages_with_keras_bert_windows"] = same_windows_as_keras_bert(
            dev_ids, dev_pages, dev[0], s
        )
    return np.stack(
        [logits[pages == page].mean(axis=0) for page in range(len(dev[0]))]
    ), extra


def run(contestant):
    if not FLAGS.data_dir:
        raise ValueError("Pass --data_dir (data_sets.py's --output_dir).")
    s, start = settings(), time.perf_counter()
    train = read_split("train", FLAGS.limit_train)
    dev = read_split("dev", FLAGS.limit_eval)
    names = sorted(set(train[1]))
    side = run_torch if contestant.startswith("torch") else run_keras_bert
    logits, extra = side(s, contestant.endswith("_windows"), train, dev, names)
    predicted = np.array(names)[logits.argmax(-1)]
    return dict(
        accuracy=float(np.mean(predicted == np.array(dev[1]))),
        train_pages=len(train[0]),
        dev_pages=len(dev[0]), settings=s, seconds=time.perf_counter() - start,
        **extra,
    )  # fmt: skip


def summarize(records):
    runs = common.by_seed(records)
    lines = [
        "| contestant | dev accuracy (%) | train pages | dev pages |",
        "|---|---|---|---|",
    ]
    for name in (name for name in CONTESTANTS if name in runs):
        lines += common.seed_rows(
            name, runs[name],
            lambda r: [(100 * r["accuracy"], "{:.1f}"),
                       (r["train_pages"], "{}"), (r["dev_pages"], "{}")],
        )  # fmt: skip
    rows = [
        runs[n][s] for n in CONTESTANTS if n in runs for s in sorted(runs[n])
    ]
    for r in rows:
        same = r.get("dev_pages_with_keras_bert_windows")
        at = f", seed {common.record_seed(r)}" * (
            len(runs[r["contestant"]]) > 1
        )
        lines.append(
            f"\n{r['contestant']}{at}: `{r['command']}`; settings "
            f"{r['settings']}; train {r['train_seconds']:.0f} s, "
            f"load average {r['load_average']} as it started"
            + (
                f"; {same} of {r['dev_pages']} dev pages' windows hold "
                "keras-bert's token ids"
                if same is not None
                else ""
            )
        )
    return "\n".join(lines + ["\n" + rows[0]["machine"]])
