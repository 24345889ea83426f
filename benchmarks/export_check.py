"""A fine-tuned recipe's export answers as its Keras model did, on real data.

The export is loaded in a process that imports only TensorFlow and
tensorflow-text (the check fails if keras_bert got imported).
`--check=ner`: every entity (text, type, start and end exactly, score
within 1e-5) of each sentence of `--conll_file` as raw text, against what
`--write_expected` (a first step, with keras_bert: the recipe's best model
and `find_entities`) wrote to `--expected`. `--check=squad`: every answer
to the questions of `--predict_file` against the recipe's
`--predictions`. Each served entity or answer must also be
`text[start:end]`. `predict` on raw text against the export of a fresh
model: tests/checkpoints/test_raw_text_predict_parity.py.

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
and the serving time; exits non-zero unless all are identical.
"""

import json
import sys
import time

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
from absl import app
from absl import flags

flags.DEFINE_enum("check", None, ["ner", "squad"], "What to check.")
flags.DEFINE_string("export_dir", None, "The SavedModel version directory.")
flags.DEFINE_integer("batch_size", 32, "Texts per request.")
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
        config["init_checkpoint"], num_classes=len(labels), labels=labels,
        sequence_length=config["sequence_length"],
    )  # fmt: skip
    model.load_weights(f"{FLAGS.run_dir}/best.weights.h5")
    entities = find_entities(
        model, model.preprocessor, texts, stride=config["stride"]
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
        FLAGS.export_dir, question=[q for _, q, _ in questions],
        context=[c for _, _, c in questions],
    )  # fmt: skip
    without_keras_bert()
    answers = [a.decode() for out in batches for a in out["answer"]]
    starts = [int(s) for out in batches for s in out["start"]]
    ends = [int(e) for out in batches for e in out["end"]]
    contexts = [context for _, _, context in questions]
    spans = sum(
        c[s:e] == a for c, a, s, e in zip(contexts, answers, starts, ends)
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
    if FLAGS.check == "squad":
        sys.exit(0 if check_squad() else 1)
    texts = conll_texts(FLAGS.conll_file)
    if FLAGS.write_expected:
        return write_expected(texts)
    sys.exit(0 if check_ner(texts) else 1)


if __name__ == "__main__":
    app.run(main)
