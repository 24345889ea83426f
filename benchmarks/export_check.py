r"""An exported SavedModel answers as the Keras model did, on real data.

`--check=predict`: a `BertQuestionAnswerer` and a `BertTokenClassifier`
from the real all-MiniLM-L6-v2 weights with a fresh, seeded head (equality
needs no fine-tuning) and a preprocessor; the Keras model's `predict` and
its export's `serving_default` (`tf.saved_model.load` in this process) get
the same raw text in the same batches: the first `--max_questions` of
SQuAD v1.1 dev (windows of 384 tokens every 128) and every sentence of
CoNLL-2003 valid (its words joined by spaces; windows of 128). Equal: QA
answer, start, end, score; NER every entity's text, type, start, end,
score, and the count. Writes `--output` and the "raw_text_predict_parity"
section of RESULTS.md.

`--check=ner` and `--check=squad`: a fine-tuned recipe's export, loaded in
a process that imports only TensorFlow and tensorflow-text (it fails if
keras_bert got imported), against the Keras model: every entity (text,
type, start and end exactly, score within 1e-5) of each sentence of
`--conll_file` as raw text, against what `--write_expected` (a first step,
with keras_bert: the recipe's best model and `find_entities`) wrote to
`--expected`; or every answer to the questions of `--predict_file` against
the recipe's `--predictions`. Each served entity or answer must also be
`text[start:end]`.

    python benchmarks/export_check.py --check=predict --max_questions=1000
    python benchmarks/export_check.py --check=ner --write_expected \
        --run_dir=/tmp/ner_runs/conll2003/keras_bert_seed0 \
        --conll_file=../shared/conll2003/valid.txt --expected=/tmp/e.json
    python benchmarks/export_check.py --check=ner \
        --export_dir=/tmp/ner_runs/conll2003/keras_bert_seed0_export/1 \
        --conll_file=../shared/conll2003/valid.txt --expected=/tmp/e.json
    python benchmarks/export_check.py --check=squad \
        --export_dir=/tmp/squad_runs/keras_bert_export/1 \
        --predict_file=../shared/squad/dev.json \
        --predictions=/tmp/squad_runs/keras_bert/predictions.json

Prints the counts, how many are identical, the largest score difference
and the times; exits non-zero unless all are identical.
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402, F401  (registers the tokenizer ops)
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_enum("check", None, ["predict", "ner", "squad"], "What to check.")
flags.DEFINE_string("export_dir", None, "The SavedModel version directory.")
flags.DEFINE_integer("batch_size", 32, "Texts per request.")
flags.DEFINE_integer("max_questions", 1000, "predict: SQuAD questions; 0: all.")
flags.DEFINE_integer("max_texts", 0, "predict: CoNLL sentences; 0: all.")
flags.DEFINE_list("tasks", ["qa", "ner"], "predict: the tasks.")
flags.DEFINE_integer("seed", 0, "predict: the seed of the fresh heads.")
flags.DEFINE_string("output", "/tmp/raw_text_predict_parity.json", "Results.")
flags.DEFINE_bool("write_expected", False, "ner: write the Keras entities.")
flags.DEFINE_string("run_dir", None, "ner, --write_expected: the recipe's run.")
flags.DEFINE_string("conll_file", None, "ner: the sentences to tag.")
flags.DEFINE_string("expected", None, "ner: JSON of the Keras entities.")
flags.DEFINE_string("predict_file", None, "squad: the questions to ask.")
flags.DEFINE_string("predictions", None, "squad: the recipe's predictions.")
flags.mark_flag_as_required("check")
FLAGS = flags.FLAGS


def read_json(path):
    with tf.io.gfile.GFile(path) as file:
        return json.load(file)


def conll_texts(path):
    """Each sentence's words joined by spaces (first column, any layout)."""
    texts, words = [], []
    with tf.io.gfile.GFile(path) as file:
        for line in [*file, ""]:
            columns = line.split()
            if columns and columns[0] != "-DOCSTART-":
                words.append(columns[0])
            elif words:
                texts.append(" ".join(words))
                words = []
    return texts


def write_expected(texts):
    import keras_bert
    from keras_bert.fine_tuning.ner.entities import find_entities

    results = read_json(f"{FLAGS.run_dir}/results.json")
    config, labels = results["config"], results["labels"]
    model = keras_bert.BertTokenClassifier.from_checkpoint(
        config["init_checkpoint"], num_classes=len(labels), labels=labels
    )
    model.load_weights(f"{FLAGS.run_dir}/best.weights.h5")
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(config["init_checkpoint"]),
        sequence_length=config["sequence_length"],
    )
    entities = find_entities(
        model, preprocessor, texts, stride=config["stride"]
    )
    with tf.io.gfile.GFile(FLAGS.expected, "w") as file:
        json.dump({"texts": texts, "entities": entities}, file)
    print(f"Keras: {sum(map(len, entities))} entities in {len(texts)} texts")


def serve_in_batches(export_dir, **inputs):
    """`serving_default` on `inputs` (lists of str) in batches: the outputs
    of each batch (numpy) and the serving seconds."""
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    count, batches = len(next(iter(inputs.values()))), []
    start = time.perf_counter()
    for first in range(0, count, FLAGS.batch_size):
        chunk = {
            k: v[first : first + FLAGS.batch_size] for k, v in inputs.items()
        }
        outputs = serve(**{k: tf.constant(v) for k, v in chunk.items()})
        batches.append({k: v.numpy() for k, v in outputs.items()})
    return batches, time.perf_counter() - start


def without_keras_bert():
    if [m for m in sys.modules if m.split(".")[0] == "keras_bert"]:
        raise AssertionError("keras_bert was imported.")


def predict_and_serve(model, directory, padding=None, **inputs):
    """`(predicted, served, predict seconds, SavedModel seconds)`: the
    model's `predict` and its export's `serving_default` on `inputs` in
    batches (numpy, strings decoded, outputs padded per batch widened with
    `padding` to the widest batch)."""
    import keras_bert

    start = time.perf_counter()
    arguments = inputs if len(inputs) > 1 else next(iter(inputs.values()))
    predicted = model.predict(arguments, batch_size=FLAGS.batch_size, verbose=0)
    predict_seconds = time.perf_counter() - start
    path = keras_bert.serving.export_saved_model(
        model, model.preprocessor, directory
    )
    batches, serve_seconds = serve_in_batches(path, **inputs)
    served = {}
    for name in batches[0]:
        arrays = [batch[name] for batch in batches]
        if arrays[0].dtype == object:
            decode = np.vectorize(
                lambda v: v.decode("utf-8", "replace"), otypes=[object]
            )
            arrays = [decode(array) for array in arrays]
        if padding and name in padding:
            width = max(array.shape[1] for array in arrays)
            arrays = [
                np.pad(
                    a,
                    [(0, 0), (0, width - a.shape[1])],
                    constant_values=padding[name],
                )
                for a in arrays
            ]
        served[name] = np.concatenate(arrays)
    return predicted, served, predict_seconds, serve_seconds


def question_answering(tokenizer, directory):
    import keras

    import keras_bert
    from keras_bert.fine_tuning.squad.examples import read_squad_examples

    examples = read_squad_examples(f"{common.SHARED}/squad/dev.json")
    count = min(len(examples["id"]), FLAGS.max_questions or len(examples["id"]))
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertQuestionAnswerer.from_checkpoint(common.minilm_dir())
    model.preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=384
    )
    contexts = examples["context"][:count]
    ours, theirs, predict_seconds, serve_seconds = predict_and_serve(
        model,
        directory,
        question=examples["question"][:count],
        context=contexts,
    )
    same = np.ones(count, bool)
    for name in ("answer", "start", "end"):
        same &= ours[name] == theirs[name]
    difference = np.abs(ours["score"] - theirs["score"])
    slices = zip(contexts, ours["answer"], ours["start"], ours["end"])
    return {
        "data": f"SQuAD v1.1 dev, first {count} questions",
        "examples": count,
        "equal_answer_and_offsets": int(same.sum()),
        "equal_all": int((same & (difference == 0)).sum()),
        "max_abs_score_difference": float(difference.max()),
        "answer_is_context_slice": sum(c[s:e] == a for c, a, s, e in slices),
        "predict_seconds": round(predict_seconds, 1),
        "saved_model_seconds": round(serve_seconds, 1),
    }


def token_classification(tokenizer, directory):
    import keras

    import keras_bert
    from keras_bert.decoding.entities import ENTITY_PADDING
    from keras_bert.fine_tuning.ner.conll import label_list
    from keras_bert.fine_tuning.ner.conll import read_conll

    conll = f"{common.SHARED}/conll2003"
    labels = label_list(read_conll(f"{conll}/train.txt")["tags"])
    texts = conll_texts(f"{conll}/valid.txt")[: FLAGS.max_texts or None]
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertTokenClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=len(labels), labels=labels
    )
    model.preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=128
    )
    ours, theirs, predict_seconds, serve_seconds = predict_and_serve(
        model, directory, ENTITY_PADDING, text=texts
    )
    same = ours["num_entities"] == theirs["num_entities"]
    for name in ("entity", "entity_type", "start", "end"):
        same &= (ours[name] == theirs[name]).all(axis=1)
    difference = np.abs(ours["score"] - theirs["score"])
    return {
        "data": f"CoNLL-2003 valid, {len(texts)} sentences",
        "examples": len(texts),
        "entities": int(ours["num_entities"].sum()),
        "equal_entities": int(same.sum()),
        "equal_all": int((same & (difference == 0).all(axis=1)).sum()),
        "max_abs_score_difference": float(difference.max(initial=0.0)),
        "predict_seconds": round(predict_seconds, 1),
        "saved_model_seconds": round(serve_seconds, 1),
    }


def check_predict():
    import keras_bert

    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    loads, results = (
        [os.getloadavg()[0]],
        {"machine": common.machine_description()},
    )
    tasks = {
        "qa": ("QA", question_answering),
        "ner": ("NER", token_classification),
    }
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for task in FLAGS.tasks:
            name, compare = tasks[task]
            results[task] = r = compare(
                tokenizer, os.path.join(directory, task)
            )
            print(r, flush=True)
            rows.append(
                f"| {name} | {r['data']} | {r['examples']} | {r['equal_all']} | "
                f"{r['max_abs_score_difference']:.3g} | {r['predict_seconds']} s | "
                f"{r['saved_model_seconds']} s |"
            )
    loads.append(os.getloadavg()[0])
    common.write_record(FLAGS.output, results)
    common.update_results(
        "raw_text_predict_parity",
        "## QA and NER `predict` on raw text vs. their SavedModels\n\n"
        "`python benchmarks/export_check.py --check=predict` — "
        f"all-MiniLM-L6-v2 with a fresh head (seed {FLAGS.seed}), batches of "
        f"{FLAGS.batch_size}, both sides asked the same batches; equal = "
        "every output identical (QA: answer, start, end, score; NER: each "
        "entity's text, type, offsets, score). The times are one run's "
        "wall clock, end to end (tracing included), not a speed "
        "comparison; load average (1 min) at the start and the end: "
        f"{common.listed(loads, '{:.1f}')}, "
        + common.load_note(loads, os.cpu_count(), paired=False)
        + "\n\n| task | data | examples | equal | max \\|score diff\\| | "
        "predict | SavedModel |\n|---|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\n{results['machine']}\n",
    )
    return all(
        results[t]["equal_all"] == results[t]["examples"] for t in FLAGS.tasks
    )


def check_ner(texts):
    expected = read_json(FLAGS.expected)
    if expected["texts"] != texts:
        raise ValueError(f"{FLAGS.expected} was written for other texts.")
    batches, seconds = serve_in_batches(FLAGS.export_dir, text=texts)
    without_keras_bert()
    served = [
        [
            {
                "entity": out["entity"][row, j].decode(),
                "type": out["entity_type"][row, j].decode(),
                "start": int(out["start"][row, j]),
                "end": int(out["end"][row, j]),
                "score": float(out["score"][row, j]),
            }
            for j in range(int(out["num_entities"][row]))
        ]
        for out in batches
        for row in range(len(out["num_entities"]))
    ]

    def key(entity):
        return tuple(entity[k] for k in ("entity", "type", "start", "end"))

    identical, differences, spans, worst = 0, [], 0, 0.0
    for text, ours, theirs in zip(texts, served, expected["entities"]):
        spans += sum(e["entity"] == text[e["start"] : e["end"]] for e in ours)
        if [key(e) for e in ours] == [key(e) for e in theirs]:
            identical += len(theirs)
            worst = max(
                [worst]
                + [abs(a["score"] - b["score"]) for a, b in zip(ours, theirs)]
            )
        else:
            differences.append({"text": text, "served": ours, "keras": theirs})
    total = sum(map(len, served))
    print(
        f"{len(texts)} texts, {sum(map(len, expected['entities']))} Keras "
        f"entities, {total} served; {identical} identical (max score "
        f"difference {worst:.2e}); {spans} served entities equal "
        f"text[start:end]; serving {seconds:.1f} s ({len(texts) / seconds:.1f} "
        f"texts/s, batch {FLAGS.batch_size}); keras_bert imported: no"
    )
    for difference in differences[:10]:
        print("DIFFERENT:", json.dumps(difference, ensure_ascii=False))
    return not differences and worst <= 1e-5 and spans == total


def check_squad():
    expected = read_json(FLAGS.predictions)
    questions = [
        (qa["id"], qa["question"], paragraph["context"])
        for article in read_json(FLAGS.predict_file)["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    batches, seconds = serve_in_batches(
        FLAGS.export_dir,
        question=[q for _, q, _ in questions],
        context=[c for _, _, c in questions],
    )
    without_keras_bert()
    answers = [a.decode() for out in batches for a in out["answer"]]
    starts = [int(s) for out in batches for s in out["start"]]
    ends = [int(e) for out in batches for e in out["end"]]
    spans = sum(
        context[start:end] == answer
        for (_, _, context), answer, start, end in zip(
            questions, answers, starts, ends
        )
    )
    different = [
        (qid, answer, expected.get(qid))
        for (qid, _, _), answer in zip(questions, answers)
        if answer != expected.get(qid)
    ]
    print(
        f"questions: {len(questions)}; identical answers: "
        f"{len(questions) - len(different)}; answer == context[start:end]: "
        f"{spans}; serving {seconds:.1f} s, {len(questions) / seconds:.1f} "
        f"questions/s (batches of {FLAGS.batch_size}); keras_bert imported: no"
    )
    for qid, ours, theirs in different[:20]:
        print(f"  {qid}: export {ours!r}, keras {theirs!r}")
    return not different and spans == len(questions)


def main(argv):
    del argv
    if FLAGS.check == "predict":
        sys.exit(0 if check_predict() else 1)
    if FLAGS.check == "squad":
        sys.exit(0 if check_squad() else 1)
    texts = conll_texts(FLAGS.conll_file)
    if FLAGS.write_expected:
        return write_expected(texts)
    sys.exit(0 if check_ner(texts) else 1)


if __name__ == "__main__":
    app.run(main)
