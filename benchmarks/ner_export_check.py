r"""The exported NER SavedModel finds the entities the Keras model finds.

Two steps, two processes:

1. `--write_expected`: rebuilds the recipe's best model (the checkpoint it
   started from + `best.weights.h5`) in Keras and runs
   `keras_bert.fine_tuning.ner.entities.find_entities` on every sentence of a
   CoNLL file given as raw text (its words joined by spaces); writes them.
2. Without it: loads the export in a process that imports only TensorFlow
   and tensorflow-text (it fails if keras_bert got imported), sends the same
   raw texts to `serving_default`, and compares every entity (text, type,
   start, end exactly; score within 1e-5), and that each entity is
   `text[start:end]`.

    python benchmarks/ner_export_check.py --write_expected \
        --run_dir=/tmp/ner_runs/conll2003/keras_bert \
        --conll_file=../shared/conll2003/valid.txt \
        --expected=/tmp/ner_runs/conll2003/expected_entities.json
    python benchmarks/ner_export_check.py \
        --export_dir=/tmp/ner_runs/conll2003/keras_bert_export/1 \
        --conll_file=../shared/conll2003/valid.txt \
        --expected=/tmp/ner_runs/conll2003/expected_entities.json

Prints the number of texts and entities, how many are identical, any
differences and the serving time. Exits non-zero unless all are identical.
"""

import json
import sys
import time

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
from absl import app
from absl import flags

flags.DEFINE_bool("write_expected", False, "Step 1: the Keras entities.")
flags.DEFINE_string("run_dir", None, "Step 1: the recipe's --model_dir.")
flags.DEFINE_string("export_dir", None, "Step 2: the SavedModel version.")
flags.DEFINE_string("conll_file", None, "CoNLL file whose sentences to tag.")
flags.DEFINE_string("expected", None, "JSON of the Keras entities.")
flags.DEFINE_integer("batch_size", 32, "Texts per request.")
flags.mark_flags_as_required(["conll_file", "expected"])
FLAGS = flags.FLAGS
SCORE_TOLERANCE = 1e-5


def read_texts(path):
    """Each sentence's words joined by spaces (first column, any layout)."""
    texts, words = [], []
    with tf.io.gfile.GFile(path) as file:
        for line in file:
            columns = line.split()
            if not columns or columns[0] == "-DOCSTART-":
                if words:
                    texts.append(" ".join(words))
                words = []
                continue
            words.append(columns[0])
    if words:
        texts.append(" ".join(words))
    return texts


def write_expected(texts):
    import keras_bert
    from keras_bert.fine_tuning.ner.entities import find_entities

    with tf.io.gfile.GFile(f"{FLAGS.run_dir}/results.json") as file:
        results = json.load(file)
    config = results["config"]
    labels = results["labels"]
    model = keras_bert.BertTokenClassifier.from_checkpoint(
        config["init_checkpoint"], num_classes=len(labels), labels=labels
    )
    model.load_weights(f"{FLAGS.run_dir}/best.weights.h5")
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(
        config["init_checkpoint"]
    )
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=config["sequence_length"]
    )
    start = time.perf_counter()
    entities = find_entities(
        model, preprocessor, texts, stride=config["stride"]
    )
    seconds = time.perf_counter() - start
    with tf.io.gfile.GFile(FLAGS.expected, "w") as file:
        json.dump({"texts": texts, "entities": entities}, file)
    print(
        f"Keras: {sum(map(len, entities))} entities in {len(texts)} texts "
        f"({seconds:.1f} s) -> {FLAGS.expected}"
    )


def check_export(texts):
    with tf.io.gfile.GFile(FLAGS.expected) as file:
        expected = json.load(file)
    if expected["texts"] != texts:
        raise ValueError(f"{FLAGS.expected} was written for other texts.")
    serve = tf.saved_model.load(FLAGS.export_dir).signatures["serving_default"]
    served = []
    start = time.perf_counter()
    for first in range(0, len(texts), FLAGS.batch_size):
        batch = texts[first : first + FLAGS.batch_size]
        outputs = serve(text=tf.constant(batch))
        outputs = {name: value.numpy() for name, value in outputs.items()}
        for row in range(len(batch)):
            served.append(
                [
                    {
                        "entity": outputs["entity"][row, j].decode("utf-8"),
                        "type": outputs["entity_type"][row, j].decode("utf-8"),
                        "start": int(outputs["start"][row, j]),
                        "end": int(outputs["end"][row, j]),
                        "score": float(outputs["score"][row, j]),
                    }
                    for j in range(int(outputs["num_entities"][row]))
                ]
            )
    seconds = time.perf_counter() - start
    leaked = sorted(m for m in sys.modules if m.split(".")[0] == "keras_bert")
    if leaked:
        raise AssertionError(f"keras_bert was imported: {leaked[:5]}")

    def key(entity):
        return (
            entity["entity"],
            entity["type"],
            entity["start"],
            entity["end"],
        )

    identical, differences, spans_ok, worst_score = 0, [], 0, 0.0
    total = sum(map(len, expected["entities"]))
    for text, ours, theirs in zip(texts, served, expected["entities"]):
        spans_ok += sum(
            e["entity"] == text[e["start"] : e["end"]] for e in ours
        )
        if [key(e) for e in ours] == [key(e) for e in theirs]:
            identical += len(theirs)
            for a, b in zip(ours, theirs):
                worst_score = max(worst_score, abs(a["score"] - b["score"]))
        else:
            differences.append({"text": text, "served": ours, "keras": theirs})
    print(
        f"{len(texts)} texts, {total} Keras entities, "
        f"{sum(map(len, served))} served; {identical} identical "
        f"(max score difference {worst_score:.2e}); {spans_ok} served "
        f"entities equal text[start:end]; serving {seconds:.1f} s "
        f"({len(texts) / seconds:.1f} texts/s, batch {FLAGS.batch_size}); "
        f"keras_bert imported: no"
    )
    for difference in differences[:10]:
        print("DIFFERENT:", json.dumps(difference, ensure_ascii=False))
    served_total = sum(map(len, served))
    if differences or worst_score > SCORE_TOLERANCE or spans_ok != served_total:
        sys.exit(1)


def main(argv):
    del argv
    texts = read_texts(FLAGS.conll_file)
    if FLAGS.write_expected:
        write_expected(texts)
    else:
        check_export(texts)


if __name__ == "__main__":
    app.run(main)
