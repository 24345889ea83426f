r"""QA and NER `predict` on raw text answer as their SavedModels, on real data.

A `BertQuestionAnswerer` and a `BertTokenClassifier` from the real
all-MiniLM-L6-v2 weights with a fresh, seeded head (equality needs no
fine-tuning) and a preprocessor, each exported (`export_saved_model`, its
default options) and loaded with `tf.saved_model.load`; the Keras model's
`predict` and the export's `serving_default` get the same raw text in the
same batches:

- SQuAD v1.1 dev (`../shared/squad/dev.json`): the first `--max_questions`
  questions (0: all), windows of 384 tokens every 128;
- CoNLL-2003 valid (`../shared/conll2003/valid.txt`): every sentence, its
  words joined by spaces, windows of 128 positions.

    python benchmarks/raw_text_predict_parity.py --max_questions=1000

Prints, per task, how many examples are equal (QA: answer, start, end,
score; NER: every entity's text, type, start, end, score, and the count)
and the largest score difference; writes them to `--output` (JSON) and to
RESULTS.md's `raw_text_predict_parity` section; exits non-zero unless
every example is equal.
"""

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

flags.DEFINE_string("squad_file", f"{common.SHARED}/squad/dev.json", "SQuAD.")
flags.DEFINE_string("conll_dir", f"{common.SHARED}/conll2003", "CoNLL-2003.")
flags.DEFINE_integer("max_questions", 1000, "SQuAD questions; 0: all.")
flags.DEFINE_integer("max_texts", 0, "CoNLL sentences compared; 0: all.")
flags.DEFINE_integer("batch_size", 32, "Examples per batch, both sides.")
flags.DEFINE_integer("seed", 0, "Seed of the fresh heads.")
flags.DEFINE_enum("task", "both", ["both", "qa", "ner"], "What to compare.")
flags.DEFINE_string("output", "/tmp/raw_text_predict_parity.json", "Results.")
FLAGS = flags.FLAGS


def both_ways(model, directory, padding=None, **inputs):
    """`(predicted, served, predict seconds, SavedModel seconds)`: the
    model's `predict` and its export's `serving_default` on `inputs` in
    batches (numpy, strings decoded; outputs padded per batch widened to
    the widest batch with `padding`)."""
    start = time.perf_counter()
    arguments = inputs if len(inputs) > 1 else next(iter(inputs.values()))
    predicted = model.predict(arguments, batch_size=FLAGS.batch_size, verbose=0)
    predict_seconds, start = time.perf_counter() - start, time.perf_counter()
    path = keras_bert.serving.export_saved_model(model, model.preprocessor, directory)  # fmt: skip
    serve = tf.saved_model.load(path).signatures["serving_default"]
    count, batches = len(next(iter(inputs.values()))), []
    for first in range(0, count, FLAGS.batch_size):
        chunk = {k: tf.constant(v[first : first + FLAGS.batch_size]) for k, v in inputs.items()}  # fmt: skip
        batches.append({k: v.numpy() for k, v in serve(**chunk).items()})
    served = {}
    for name in batches[0]:
        arrays = [batch[name] for batch in batches]
        if arrays[0].dtype == object:
            decode = np.vectorize(lambda v: v.decode("utf-8", "replace"), otypes=[object])  # fmt: skip
            arrays = [decode(array) for array in arrays]
        if padding and name in padding:
            width = max(array.shape[1] for array in arrays)
            arrays = [
                np.pad(a, [(0, 0), (0, width - a.shape[1])], constant_values=padding[name])  # fmt: skip
                for a in arrays
            ]
        served[name] = np.concatenate(arrays)
    return predicted, served, predict_seconds, time.perf_counter() - start


def question_answering(tokenizer, directory):
    from keras_bert.fine_tuning.squad.examples import read_squad_examples

    examples = read_squad_examples(FLAGS.squad_file)
    count = min(len(examples["id"]), FLAGS.max_questions or len(examples["id"]))
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertQuestionAnswerer.from_checkpoint(common.minilm_dir())
    model.preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=384)
    contexts = examples["context"][:count]
    ours, theirs, predict_seconds, serve_seconds = both_ways(
        model, directory, question=examples["question"][:count], context=contexts
    )
    same = np.ones(count, bool)
    for name in ("answer", "start", "end"):
        same &= ours[name] == theirs[name]
    score_difference = np.abs(ours["score"] - theirs["score"])
    slices = zip(contexts, ours["answer"], ours["start"], ours["end"])
    return {
        "data": f"SQuAD v1.1 dev, first {count} questions",
        "examples": count,
        "equal_answer_and_offsets": int(same.sum()),
        "equal_all": int((same & (score_difference == 0)).sum()),
        "max_abs_score_difference": float(score_difference.max()),
        "answer_is_context_slice": sum(c[s:e] == a for c, a, s, e in slices),
        "predict_seconds": round(predict_seconds, 1),
        "saved_model_seconds": round(serve_seconds, 1),
    }


def token_classification(tokenizer, directory):
    from keras_bert.fine_tuning.ner.conll import label_list
    from keras_bert.fine_tuning.ner.conll import read_conll
    from keras_bert.serving.token_classifier import ENTITY_PADDING

    labels = label_list(read_conll(f"{FLAGS.conll_dir}/train.txt")["tags"])
    valid = read_conll(f"{FLAGS.conll_dir}/valid.txt")
    texts = [" ".join(words) for words in valid["words"]][: FLAGS.max_texts or None]
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertTokenClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=len(labels), labels=labels
    )
    model.preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=128)
    ours, theirs, predict_seconds, serve_seconds = both_ways(
        model, directory, ENTITY_PADDING, text=texts
    )
    same = ours["num_entities"] == theirs["num_entities"]
    for name in ("entity", "entity_type", "start", "end"):
        same &= (ours[name] == theirs[name]).all(axis=1)
    score_difference = np.abs(ours["score"] - theirs["score"])
    return {
        "data": f"CoNLL-2003 valid, {len(texts)} sentences",
        "examples": len(texts),
        "entities": int(ours["num_entities"].sum()),
        "equal_entities": int(same.sum()),
        "equal_all": int((same & (score_difference == 0).all(axis=1)).sum()),
        "max_abs_score_difference": float(score_difference.max(initial=0.0)),
        "predict_seconds": round(predict_seconds, 1),
        "saved_model_seconds": round(serve_seconds, 1),
    }


def main(argv):
    del argv
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    loads = [os.getloadavg()[0]]
    results = {"machine": common.machine_description(), "batch_size": FLAGS.batch_size, "seed": FLAGS.seed}  # fmt: skip
    tasks = {"question_answering": ("QA", question_answering), "token_classification": ("NER", token_classification)}  # fmt: skip
    with tempfile.TemporaryDirectory() as directory:
        for key, (name, compare) in tasks.items():
            if FLAGS.task in ("both", name.lower()):
                results[key] = compare(tokenizer, os.path.join(directory, key))
                print(results[key], flush=True)
    loads.append(os.getloadavg()[0])
    common.write_record(FLAGS.output, results)
    rows = [
        f"| {name} | {r['data']} | {r['examples']} | {r['equal_all']} | "
        f"{r['max_abs_score_difference']:.3g} | {r['predict_seconds']} s | "
        f"{r['saved_model_seconds']} s |"
        for key, (name, _) in tasks.items()
        if (r := results.get(key))
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
        f"comparison; load average (1 min) at the start and the end: "
        f"{common.listed(loads, '{:.1f}')}, "
        + common.load_note(loads, os.cpu_count(), paired=False)
        + "\n\n| task | data | examples | equal | max \\|score diff\\| | predict "
        "| SavedModel |\n|---|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\n{results['machine']}\n",
    )
    unequal = [k for k in tasks if k in results and results[k]["equal_all"] != results[k]["examples"]]  # fmt: skip
    if unequal:
        sys.exit(f"Not all equal: {unequal}")


if __name__ == "__main__":
    app.run(main)
