"""Multiple choice: answer-sentence selection built from SQuAD.

For each SQuAD question whose paragraph has four sentences or more, the
question is the context and four of its paragraph's sentences are the
choices: the one holding the (first) answer and three others drawn from
the seed, shuffled; a question whose answer crosses a sentence boundary
is left out. Written in SWAG's CSV layout (`sent1` the question, `sent2`
empty, `ending0..3`, `label`): `--train_questions` of train.json and
`--dev_questions` of dev.json (seeded samples; 0: all), different
articles. Each side runs on `--threads` threads (default one).

- keras_bert: `python recipes/multiple_choice.py`;
- torch: `BertForMultipleChoice` in `contestants/torch_loop.py`, the
  pairs tokenized as `run_swag.py` does, batches padded to their longest
  pair as `DataCollatorForMultipleChoice` pads them.
"""

import csv
import io
import os
import re
import time

import numpy as np

from benchmarks import common
from benchmarks.contestants import recipe
from benchmarks.tasks import FLAGS
from benchmarks.tasks import pad
from benchmarks.tasks import run_dir
from benchmarks.tasks import run_recipe
from benchmarks.tasks import threads
from benchmarks.tasks import torch_fine_tune
from benchmarks.tasks import torch_model
from benchmarks.tasks import torch_predict

SETTINGS = dict(
    sequence_length=128, batch_size=16, learning_rate=5e-5, epochs=1,
    warmup_fraction=0.1, weight_decay=0.01, adam_beta_1=0.9,
    adam_beta_2=0.999, adam_epsilon=1e-6, clipnorm=1.0, dropout=0.1,
)  # fmt: skip
CONTESTANTS = ("keras_bert", "torch")
RECORDS = "multiple_choice"
NUM_CHOICES = 4
INPUTS = ("input_ids", "token_type_ids", "attention_mask")
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


def answer_selection(squad, limit=None, seed=0):
    """SQuAD (its JSON) as answer-sentence selection: `(examples, left
    out)`, each example `(question, choices, label)`."""
    rng = np.random.default_rng(seed)
    examples, skipped = [], 0
    for article in squad["data"]:
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
    return examples, skipped


def data_files():
    """The train and dev CSV files, built once into `--data_dir`."""
    from keras_bert import files
    from keras_bert.fine_tuning.multiple_choice import write_swag_csv

    directory = FLAGS.data_dir or run_dir("data")
    files.makedirs(directory)
    paths = {}
    for split, limit in (
        ("train", FLAGS.train_questions),
        ("dev", FLAGS.dev_questions),
    ):
        path = f"{directory}/{split}_{limit or 'all'}_seed{FLAGS.seed}.csv"
        if not files.exists(path):
            source = os.path.join(common.SHARED, "squad", f"{split}.json")
            examples, skipped = answer_selection(
                files.read_json(source), limit, FLAGS.seed
            )
            write_swag_csv(path, *(list(column) for column in zip(*examples)))
            print(f"{path}: {len(examples)} questions ({skipped} left out)")
        paths[split] = path
    return paths


def read_csv(path):
    from keras_bert import files

    # newline=None: universal newlines, as a text-mode file reads.
    rows = list(
        csv.DictReader(io.StringIO(files.read_text(path), newline=None))
    )
    return (
        [row["sent1"] for row in rows],
        [[row[f"ending{i}"] for i in range(NUM_CHOICES)] for row in rows],
        np.array([int(row["label"]) for row in rows]),
    )


def record_name(contestant):
    return (
        f"{contestant}_train{FLAGS.train_questions}_dev"
        f"{FLAGS.dev_questions or 'all'}_seed{FLAGS.seed}"
    )


def train_keras_bert(paths):
    """`recipes/multiple_choice.py` with `SETTINGS`; reads its results."""
    directory = run_dir(f"{record_name('keras_bert')}_{os.getpid()}")
    count = str(threads(1))
    os.environ.update(
        TF_NUM_INTRAOP_THREADS=count, TF_NUM_INTEROP_THREADS=count
    )
    training = recipe.training_flags(dict(SETTINGS, seed=FLAGS.seed), directory)
    del training["export_dir"]  # scores only
    results, command, wall_seconds, cpu_seconds = run_recipe(
        "multiple_choice", directory, train_file=paths["train"],
        eval_file=paths["dev"], init_checkpoint=common.minilm_dir(),
        max_seq_length=SETTINGS["sequence_length"], **training,
    )  # fmt: skip
    return {
        "accuracy": results["metrics"]["validation"]["accuracy"],
        "epochs": [
            dict(epoch=e["epoch"], **e["metrics"]["validation"])
            for e in results["epochs"]
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

    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    model = torch_model(transformers.BertForMultipleChoice, SETTINGS, 1)

    def encode(path):
        questions, choices, labels = read_csv(path)
        encoded = tokenizer(
            [q for q in questions for _ in range(NUM_CHOICES)],
            [choice for row in choices for choice in row],
            truncation=True, max_length=SETTINGS["sequence_length"],
        )  # fmt: skip
        return [
            {k: encoded[k][i * NUM_CHOICES : (i + 1) * NUM_CHOICES] for k in INPUTS}
            for i in range(len(questions))
        ], torch.tensor(labels)  # fmt: skip

    def batch(rows, examples):
        """`DataCollatorForMultipleChoice`: padded to the longest pair."""
        width = max(len(ids) for i in rows for ids in examples[i]["input_ids"])
        return {
            key: torch.tensor(
                np.stack([pad(examples[i][key], width) for i in rows])
            )
            for key in INPUTS
        }

    (train, train_labels), (dev, dev_labels) = map(encode, paths.values())

    def evaluate(epoch):
        logits = torch_predict(
            model,
            lambda rows: model(**batch(rows, dev)).logits.numpy(),
            len(dev),
        )
        return {
            "accuracy": float(np.mean(logits.argmax(1) == dev_labels.numpy()))
        }

    def step_loss(rows):
        return model(**batch(rows, train), labels=train_labels[rows]).loss

    start = time.perf_counter()
    run = torch_fine_tune(
        model, SETTINGS, len(train), step_loss, evaluate=evaluate, log_every=25
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


def run(contestant):
    paths = data_files()
    train = train_keras_bert if contestant == "keras_bert" else train_torch
    result = train(paths)
    print(f"{contestant}: dev accuracy {100 * result['accuracy']:.2f}")
    return dict(
        settings=dict(SETTINGS, seed=FLAGS.seed),
        data={
            "train": f"{FLAGS.train_questions} questions of "
            "../shared/squad/train.json",
            "dev": f"{FLAGS.dev_questions or 'all'} questions of "
            "../shared/squad/dev.json",
        },
        **result,
    )


def summarize(records):
    budget = (FLAGS.train_questions, FLAGS.dev_questions or "all")
    runs = common.by_seed(
        r for r in records
        if tuple(r["data"][k].split()[0] for k in ("train", "dev"))
        == tuple(map(str, budget))
    )  # fmt: skip
    lines = []
    for contestant in CONTESTANTS:
        seeded = runs.get(contestant, {})
        for seed, r in sorted(seeded.items()):
            at = f", seed {seed}" * (len(seeded) > 1)
            lines.append(
                f"{contestant}{at}: dev accuracy {100 * r['accuracy']:.2f} "
                f"({r['num_eval_examples']} questions; "
                f"{r['num_train_examples']} training questions, "
                f"epoch {r['best_epoch']})"
            )
        if len(seeded) > 1:
            accuracies = [100 * r["accuracy"] for r in seeded.values()]
            lines.append(
                f"{contestant}: dev accuracy {common.spread(accuracies)} "
                f"(mean ± sd over seeds {common.listed(sorted(seeded))})"
            )
    difference = common.paired_difference(
        runs.get("keras_bert", {}), runs.get("torch", {}),
        lambda r: 100 * r["accuracy"],
    )  # fmt: skip
    if difference:
        lines.append(f"keras_bert - torch: {difference} points")
    return "\n".join(lines)
