"""Multiple choice side by side with transformers in PyTorch: answer-
sentence selection built from SQuAD, dev accuracy of whole fine-tunes.

The data (built here, outside the repository, by `build_answer_selection`):
for each SQuAD question whose paragraph has at least four sentences, the
question is the context and four sentences of its paragraph are the
choices: the one holding the (first) answer span and three others drawn
with a fixed seed, in a shuffled order; questions whose answer crosses a
sentence boundary are left out. Written in SWAG's CSV layout (`sent1` the
question, `sent2` empty, `ending0..3`, `label`). Training questions come
from `../shared/squad/train.json` (`--train_questions` of them, a seeded
sample), evaluation from `dev.json` (`--dev_questions`, a seeded sample;
0: all that qualify): different articles (see ../shared/squad/README.md).
Each side runs on `--threads` threads (one by default: the machine these
ran on was shared).

The contestants, all-MiniLM-L6-v2 with a fresh head drawn from the run's
seed, `SETTINGS` for both (AdamW with decay 0.01 except biases and
LayerNorm, epsilon 1e-6 added as PyTorch adds it, linear warmup over a
tenth of the steps then linear decay to 0, global-norm clipping 1.0,
dropout 0.1; each pair cut at `sequence_length` tokens; batches padded to
their longest pair):

- `keras_bert`: `python recipes/multiple_choice.py` (the
  `MultipleChoiceFineTuning` job; its export too);
- `torch`: `transformers.BertForMultipleChoice.from_pretrained` trained by
  `contestants/torch_loop.py`, the pairs tokenized by transformers'
  tokenizer as `run_swag.py` does (`tokenizer(first, second,
  truncation=True, max_length=...)`), batches padded to their longest row
  as `DataCollatorForMultipleChoice` pads them, each epoch a permutation
  drawn from `(seed, epoch)`.

    python benchmarks/multiple_choice.py --contestant=keras_bert
    python benchmarks/multiple_choice.py --contestant=torch
    python benchmarks/multiple_choice.py --summarize

Each run writes its record to `--records_dir` (default
benchmarks/multiple_choice/) and prints its dev accuracy; `--summarize`
prints both and their difference.
"""

import csv
import io
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402
from benchmarks.contestants import torch_loop  # noqa: E402

SETTINGS = dict(
    sequence_length=128, batch_size=16, learning_rate=5e-5, epochs=1,
    warmup_fraction=0.1, weight_decay=0.01, adam_beta_1=0.9,
    adam_beta_2=0.999, adam_epsilon=1e-6, clipnorm=1.0, dropout=0.1,
)  # fmt: skip
NUM_CHOICES = 4

flags.DEFINE_enum("contestant", None, ["keras_bert", "torch"], "Who runs.")
flags.DEFINE_bool("summarize", False, "Print the records' accuracies.")
flags.DEFINE_string(
    "work_dir", "/tmp/multiple_choice", "Where the data and runs go."
)
flags.DEFINE_string(
    "squad_dir", os.path.join(common.SHARED, "squad"), "SQuAD's train/dev."
)
flags.DEFINE_integer("train_questions", 1000, "Training questions.")
flags.DEFINE_integer(
    "dev_questions", 600, "Dev questions (a seeded sample; 0: all)."
)
flags.DEFINE_integer("seed", 0, "Seed of the data sample, head and order.")
flags.DEFINE_integer(
    "threads", 1, "Threads of each side (TensorFlow's intra- and inter-op)."
)
flags.DEFINE_string(
    "records_dir",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "multiple_choice"),
    "Where the records go.",
)
FLAGS = flags.FLAGS

# A sentence ends at . ! or ? (and closing quotes or brackets) followed by
# white space and an upper-case letter, a digit or an opening quote.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[A-Z0-9])")


def sentence_spans(text):
    """`(start, end)` of each sentence of `text`, in characters."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def build_answer_selection(squad_file, csv_file, limit=None, seed=0):
    """Writes SQuAD `squad_file` as answer-sentence selection to
    `csv_file` (SWAG's layout; see the module docstring). Returns the
    number of questions written and of those left out."""
    from keras_bert import files
    from keras_bert.fine_tuning.multiple_choice import write_swag_csv

    rng = np.random.default_rng(seed)
    examples, skipped = [], 0
    for article in files.read_json(squad_file)["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            spans = sentence_spans(context)
            if len(spans) < NUM_CHOICES:
                skipped += len(paragraph["qas"])
                continue
            for question in paragraph["qas"]:
                answer = question["answers"][0]
                first = answer["answer_start"]
                last = first + len(answer["text"])
                holding = [
                    i for i, (s, e) in enumerate(spans) if s <= first < e
                ]
                if not holding or last > spans[holding[0]][1]:
                    skipped += 1  # the answer crosses a sentence boundary
                    continue
                others = [i for i in range(len(spans)) if i != holding[0]]
                picked = [holding[0]] + list(
                    rng.choice(others, NUM_CHOICES - 1, replace=False)
                )
                order = rng.permutation(NUM_CHOICES)
                choices = [
                    context[slice(*spans[picked[i]])].strip() for i in order
                ]
                label = int(np.flatnonzero(order == 0)[0])
                examples.append((question["question"].strip(), choices, label))
    if limit and limit < len(examples):
        keep = np.sort(rng.choice(len(examples), limit, replace=False))
        examples = [examples[i] for i in keep]
    write_swag_csv(
        csv_file,
        [question for question, _, _ in examples],
        [choices for _, choices, _ in examples],
        [label for _, _, label in examples],
    )
    return len(examples), skipped


def data_files():
    """The train and dev CSV files, built once into `--work_dir`."""
    from keras_bert import files

    files.makedirs(FLAGS.work_dir)
    paths = {}
    for split, source, limit in (
        ("train", "train.json", FLAGS.train_questions),
        ("dev", "dev.json", FLAGS.dev_questions),
    ):
        path = os.path.join(
            FLAGS.work_dir, f"{split}_{limit or 'all'}_seed{FLAGS.seed}.csv"
        )
        if not files.exists(path):
            written, skipped = build_answer_selection(
                os.path.join(FLAGS.squad_dir, source), path, limit, FLAGS.seed
            )
            print(f"{path}: {written} questions ({skipped} left out)")
        paths[split] = path
    return paths


def read_csv(path):
    from keras_bert import files

    # newline=None: universal newlines, as a text-mode file reads.
    text = io.StringIO(files.read_text(path), newline=None)
    rows = list(csv.DictReader(text))
    return (
        [row["sent1"] for row in rows],
        [[row[f"ending{i}"] for i in range(NUM_CHOICES)] for row in rows],
        np.array([int(row["label"]) for row in rows]),
    )


def train_keras_bert(paths, run_dir):
    """`recipes/multiple_choice.py` with `SETTINGS`; reads its results."""
    settings = dict(SETTINGS, seed=FLAGS.seed)
    command = recipe.command(
        "multiple_choice",
        train_file=paths["train"],
        eval_file=paths["dev"],
        init_checkpoint=common.minilm_dir(),
        max_seq_length=SETTINGS["sequence_length"],
        **recipe.training_flags(settings, run_dir),
    )
    command.remove(f"--export_dir={run_dir}_export")  # scores only
    threads = str(FLAGS.threads)
    os.environ.update(
        TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads
    )
    wall_seconds, cpu_seconds = recipe.run(command)
    results = common.read_record(os.path.join(run_dir, "results.json"))
    return {
        "accuracy": results["metrics"]["validation"]["accuracy"],
        "epochs": [
            {
                "epoch": epoch["epoch"],
                "accuracy": epoch["metrics"]["validation"]["accuracy"],
            }
            for epoch in results["epochs"]
        ],
        "best_epoch": results["best_epoch"],
        "num_train_examples": results["num_train_examples"],
        "num_eval_examples": results["num_eval_examples"]["validation"],
        "wall_seconds": wall_seconds,
        "process_cpu_seconds": cpu_seconds,
        "command": " ".join(command),
    }


def train_torch(paths):
    """`BertForMultipleChoice` fine-tuned by the shared PyTorch loop."""
    import torch
    import transformers

    torch.set_num_threads(FLAGS.threads)
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())

    def encode(path):
        questions, choices, labels = read_csv(path)
        first = [q for q in questions for _ in range(NUM_CHOICES)]
        second = [choice for row in choices for choice in row]
        encoded = tokenizer(
            first,
            second,
            truncation=True,
            max_length=SETTINGS["sequence_length"],
        )
        rows = [
            {
                key: encoded[key][i * NUM_CHOICES : (i + 1) * NUM_CHOICES]
                for key in ("input_ids", "token_type_ids", "attention_mask")
            }
            for i in range(len(questions))
        ]
        return rows, labels

    def batch(rows, examples, labels=None):
        """`DataCollatorForMultipleChoice`: padded to the longest pair."""
        longest = max(
            len(ids) for i in rows for ids in examples[i]["input_ids"]
        )
        tensors = {}
        for key in ("input_ids", "token_type_ids", "attention_mask"):
            tensors[key] = torch.tensor(
                [
                    [
                        ids + [0] * (longest - len(ids))
                        for ids in examples[i][key]
                    ]
                    for i in rows
                ]
            )
        if labels is not None:
            tensors["labels"] = torch.tensor(labels[rows])
        return tensors

    train, train_labels = encode(paths["train"])
    dev, dev_labels = encode(paths["dev"])
    model = torch_loop.from_pretrained(
        transformers.BertForMultipleChoice,
        common.minilm_dir(),
        SETTINGS["dropout"],
        FLAGS.seed,
    )

    def evaluate(epoch):
        outputs = torch_loop.predict(
            model,
            lambda rows: model(**batch(rows, dev)).logits.numpy(),
            len(dev),
        )
        predicted = np.concatenate([output for _, output in outputs]).argmax(1)
        return {"accuracy": float(np.mean(predicted == dev_labels))}

    start = time.perf_counter()
    run = torch_loop.fine_tune(
        model,
        SETTINGS,
        len(train),
        lambda epoch: np.random.default_rng((FLAGS.seed, epoch)).permutation(
            len(train)
        ),
        lambda rows: model(**batch(rows, train, train_labels)).loss,
        evaluate=evaluate,
        log_every=25,
    )
    best = max(run["epochs"], key=lambda e: e["accuracy"])
    return {
        "accuracy": best["accuracy"],
        "epochs": [
            {"epoch": e["epoch"], "accuracy": e["accuracy"]}
            for e in run["epochs"]
        ],
        "best_epoch": best["epoch"],
        "num_train_examples": len(train),
        "num_eval_examples": len(dev),
        "wall_seconds": time.perf_counter() - start,
        "train_cpu_seconds": run["train_cpu_seconds"],
    }


def record_path(contestant):
    return os.path.join(
        FLAGS.records_dir,
        f"{contestant}_train{FLAGS.train_questions}_dev"
        f"{FLAGS.dev_questions or 'all'}_seed{FLAGS.seed}.json",
    )


def summarize():
    from keras_bert import files

    records = {}
    for contestant in ("keras_bert", "torch"):
        path = record_path(contestant)
        if files.exists(path):
            records[contestant] = common.read_record(path)
    for contestant, record in records.items():
        print(
            f"{contestant}: dev accuracy {100 * record['accuracy']:.2f} "
            f"({record['num_eval_examples']} questions; "
            f"{record['num_train_examples']} training questions, "
            f"epoch {record['best_epoch']})"
        )
    if len(records) == 2:
        difference = (
            records["keras_bert"]["accuracy"] - (records["torch"]["accuracy"])
        )
        print(f"keras_bert - torch: {100 * difference:+.2f} points")


def main(argv):
    del argv
    if FLAGS.summarize:
        summarize()
        return
    if FLAGS.contestant is None:
        raise app.UsageError(
            "Pass --contestant=keras_bert|torch or --summarize"
        )
    paths = data_files()
    run_dir = os.path.join(
        FLAGS.work_dir, f"{FLAGS.contestant}_seed{FLAGS.seed}_{os.getpid()}"
    )
    context = common.job_context()
    if FLAGS.contestant == "keras_bert":
        result = train_keras_bert(paths, run_dir)
    else:
        result = train_torch(paths)
    record = dict(
        context,
        contestant=FLAGS.contestant,
        settings=dict(SETTINGS, seed=FLAGS.seed),
        data={
            "train": f"{FLAGS.train_questions} questions of "
            "../shared/squad/train.json",
            "dev": f"{FLAGS.dev_questions or 'all'} questions of "
            "../shared/squad/dev.json",
        },
        **result,
    )
    common.write_record(record_path(FLAGS.contestant), record)
    print(
        f"{FLAGS.contestant}: dev accuracy {100 * result['accuracy']:.2f} "
        f"({result['num_eval_examples']} questions)"
    )


if __name__ == "__main__":
    app.run(main)
