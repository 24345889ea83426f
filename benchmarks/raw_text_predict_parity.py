r"""QA and NER `predict` on raw text answer as their SavedModels, on real data.

Builds a `BertQuestionAnswerer` and a `BertTokenClassifier` from the real
all-MiniLM-L6-v2 weights (`common.minilm_dir()`) with a fresh, seeded head
(an equality check needs no fine-tuning) and a preprocessor, exports each
(`export_saved_model`, the export's default options), loads the export
with `tf.saved_model.load`, and asks both the Keras model's `predict` and
the export's `serving_default` the same raw text in the same batches:

- SQuAD v1.1 dev (`../shared/squad/dev.json`): the first `--max_questions`
  questions (0: all 10,570), windows of 384 tokens every 128;
- CoNLL-2003 valid (`../shared/conll2003/valid.txt`): every sentence, its
  words joined by spaces, windows of 128 positions every 64.

    python benchmarks/raw_text_predict_parity.py --max_questions=1000

Prints, per task, the number of examples compared, how many are equal
(QA: answer, start, end and score; NER: every entity's text, type, start,
end and score, and the count) and the largest score difference; writes
them to `--output` (JSON) and to RESULTS.md's `raw_text_predict_parity`
section. Exits non-zero unless every example is equal.
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

import keras_bert  # noqa: E402
from benchmarks import common  # noqa: E402
from keras_bert.decoding.entities import ENTITY_PADDING  # noqa: E402
from keras_bert.fine_tuning.ner.conll import label_list  # noqa: E402
from keras_bert.fine_tuning.ner.conll import read_conll  # noqa: E402
from keras_bert.fine_tuning.squad.examples import read_squad_examples  # noqa: E402
from keras_bert.serving import export_saved_model  # noqa: E402

flags.DEFINE_string(
    "squad_file", os.path.join(common.SHARED, "squad", "dev.json"), "SQuAD."
)
flags.DEFINE_string(
    "conll_dir", os.path.join(common.SHARED, "conll2003"), "CoNLL-2003."
)
flags.DEFINE_integer(
    "max_questions", 1000, "SQuAD questions compared, from the first; 0: all."
)
flags.DEFINE_integer("max_texts", 0, "CoNLL sentences compared; 0: all.")
flags.DEFINE_integer("qa_sequence_length", 384, "QA window (max_seq_length).")
flags.DEFINE_integer("ner_sequence_length", 128, "NER window.")
flags.DEFINE_integer("batch_size", 32, "Examples per batch, both sides.")
flags.DEFINE_integer("seed", 0, "Seed of the fresh heads.")
flags.DEFINE_enum("task", "both", ["both", "qa", "ner"], "What to compare.")
flags.DEFINE_string(
    "output", "/tmp/raw_text_predict_parity.json", "Results (JSON)."
)
FLAGS = flags.FLAGS


def served(serve, batch_size, padding=None, **inputs):
    """`serve` on `inputs` in batches, as numpy, strings decoded; outputs
    padded per batch are widened to the widest batch with `padding`."""
    count = len(next(iter(inputs.values())))
    batches = []
    for first in range(0, count, batch_size):
        outputs = serve(
            **{
                name: tf.constant(values[first : first + batch_size])
                for name, values in inputs.items()
            }
        )
        batches.append({name: value.numpy() for name, value in outputs.items()})
    result = {}
    for name in batches[0]:
        arrays = [batch[name] for batch in batches]
        if arrays[0].dtype == object:
            decode = np.vectorize(
                lambda value: value.decode("utf-8", "replace"), otypes=[object]
            )
            arrays = [decode(array) for array in arrays]
        if padding and name in padding:
            width = max(array.shape[1] for array in arrays)
            arrays = [
                np.pad(
                    array,
                    [(0, 0), (0, width - array.shape[1])],
                    constant_values=padding[name],
                )
                for array in arrays
            ]
        result[name] = np.concatenate(arrays)
    return result


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def exported(model, directory):
    path = export_saved_model(model, model.preprocessor, directory)
    return tf.saved_model.load(path).signatures["serving_default"]


def compare_question_answering(tokenizer, directory):
    examples = read_squad_examples(FLAGS.squad_file)
    count = len(examples["id"])
    if FLAGS.max_questions:
        count = min(count, FLAGS.max_questions)
    inputs = {
        "question": examples["question"][:count],
        "context": examples["context"][:count],
    }
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertQuestionAnswerer.from_checkpoint(common.minilm_dir())
    model.preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.qa_sequence_length
    )
    predicted, predict_seconds = timed(
        model.predict, inputs, batch_size=FLAGS.batch_size, verbose=0
    )
    serve = exported(model, os.path.join(directory, "qa"))
    answers, serve_seconds = timed(served, serve, FLAGS.batch_size, **inputs)
    same = (
        (predicted["answer"] == answers["answer"])
        & (predicted["start"] == answers["start"])
        & (predicted["end"] == answers["end"])
    )
    score_difference = np.abs(predicted["score"] - answers["score"])
    contexts = inputs["context"]
    return {
        "data": f"SQuAD v1.1 dev, first {count} questions",
        "examples": count,
        "equal_answer_and_offsets": int(same.sum()),
        "equal_all": int((same & (score_difference == 0)).sum()),
        "max_abs_score_difference": float(score_difference.max()),
        "answer_is_context_slice": int(
            sum(
                context[start:end] == answer
                for context, answer, start, end in zip(
                    contexts,
                    predicted["answer"],
                    predicted["start"],
                    predicted["end"],
                )
            )
        ),
        "predict_seconds": round(predict_seconds, 1),
        "saved_model_seconds": round(serve_seconds, 1),
    }


def compare_token_classification(tokenizer, directory):
    train = read_conll(os.path.join(FLAGS.conll_dir, "train.txt"))
    valid = read_conll(os.path.join(FLAGS.conll_dir, "valid.txt"))
    texts = [" ".join(words) for words in valid["words"]]
    if FLAGS.max_texts:
        texts = texts[: FLAGS.max_texts]
    labels = label_list(train["tags"])
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertTokenClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=len(labels), labels=labels
    )
    model.preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.ner_sequence_length
    )
    predicted, predict_seconds = timed(
        model.predict, texts, batch_size=FLAGS.batch_size, verbose=0
    )
    serve = exported(model, os.path.join(directory, "ner"))
    entities, serve_seconds = timed(
        served, serve, FLAGS.batch_size, ENTITY_PADDING, text=texts
    )
    same = predicted["num_entities"] == entities["num_entities"]
    for name in ("entity", "entity_type", "start", "end"):
        same &= (predicted[name] == entities[name]).all(axis=1)
    score_difference = np.abs(predicted["score"] - entities["score"])
    exact = same & (score_difference == 0).all(axis=1)
    return {
        "data": f"CoNLL-2003 valid, {len(texts)} sentences",
        "examples": len(texts),
        "entities": int(predicted["num_entities"].sum()),
        "equal_entities": int(same.sum()),
        "equal_all": int(exact.sum()),
        "max_abs_score_difference": float(score_difference.max(initial=0.0)),
        "predict_seconds": round(predict_seconds, 1),
        "saved_model_seconds": round(serve_seconds, 1),
    }


def main(argv):
    del argv
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    results = {
        "machine": common.machine_description(),
        "batch_size": FLAGS.batch_size,
        "seed": FLAGS.seed,
    }
    with tempfile.TemporaryDirectory() as directory:
        if FLAGS.task in ("both", "qa"):
            results["question_answering"] = compare_question_answering(
                tokenizer, directory
            )
            print(json.dumps(results["question_answering"]), flush=True)
        if FLAGS.task in ("both", "ner"):
            results["token_classification"] = compare_token_classification(
                tokenizer, directory
            )
            print(json.dumps(results["token_classification"]), flush=True)
    common.write_record(FLAGS.output, results)
    rows = [
        f"| {name} | {r['data']} | {r['examples']} | {r['equal_all']} | "
        f"{r['max_abs_score_difference']:.3g} | {r['predict_seconds']} s | "
        f"{r['saved_model_seconds']} s |"
        for name, r in (
            ("QA", results.get("question_answering")),
            ("NER", results.get("token_classification")),
        )
        if r
    ]
    common.update_results(
        "raw_text_predict_parity",
        "## QA and NER `predict` on raw text vs. their SavedModels\n\n"
        "`python benchmarks/raw_text_predict_parity.py` — all-MiniLM-L6-v2 "
        f"with a fresh head (seed {FLAGS.seed}), batches of "
        f"{FLAGS.batch_size}, both sides asked the same batches; equal = "
        "every output identical (QA: answer, start, end, score; NER: each "
        "entity's text, type, offsets, score). The times are one run's "
        "wall clock, end to end (tracing included), not a speed "
        f"comparison: load average {os.getloadavg()[0]:.1f} at the end.\n\n"
        "| task | data | examples | equal | max \\|score diff\\| | predict "
        "| SavedModel |\n|---|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\n{results['machine']}\n",
    )
    unequal = [
        name
        for name in ("question_answering", "token_classification")
        if name in results
        and results[name]["equal_all"] != results[name]["examples"]
    ]
    if unequal:
        print(f"Not all equal: {unequal}")
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
