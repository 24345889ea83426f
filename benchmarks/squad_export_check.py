r"""The exported QA SavedModel answers every question as the Keras model did.

Loads a `BertQuestionAnswerer` export (`recipes/squad.py --export_dir`) in
a process that imports only TensorFlow and tensorflow-text (it fails if
keras_bert got imported), asks it every question of a SQuAD file as raw
`question` and `context` strings, and compares the answers with the
recipe's `predictions.json` (the Keras model + `compute_predictions`):

    python benchmarks/squad_export_check.py \
        --export_dir=/tmp/squad_runs/keras_bert_export/1 \
        --predict_file=../shared/squad/dev.json \
        --predictions=/tmp/squad_runs/keras_bert/predictions.json

Prints the number of questions, how many answers are identical, that
every answer is `context[start:end]`, any differences, and the serving
time. Exits non-zero unless every answer is identical.
"""

import json
import sys
import time

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
from absl import app
from absl import flags

flags.DEFINE_string("export_dir", None, "The SavedModel version directory.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON whose questions to ask.")
flags.DEFINE_string("predictions", None, "The recipe's predictions.json.")
flags.DEFINE_integer("batch_size", 32, "Questions per request.")
flags.mark_flags_as_required(["export_dir", "predict_file", "predictions"])
FLAGS = flags.FLAGS


def main(argv):
    del argv
    with tf.io.gfile.GFile(FLAGS.predict_file) as f:
        data = json.load(f)["data"]
    with tf.io.gfile.GFile(FLAGS.predictions) as f:
        expected = json.load(f)
    questions = [
        (qa["id"], qa["question"], paragraph["context"])
        for article in data
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    serve = tf.saved_model.load(FLAGS.export_dir).signatures["serving_default"]
    answers, offsets_ok = {}, 0
    start = time.perf_counter()
    for first in range(0, len(questions), FLAGS.batch_size):
        batch = questions[first : first + FLAGS.batch_size]
        outputs = serve(
            question=tf.constant([q for _, q, _ in batch]),
            context=tf.constant([c for _, _, c in batch]),
        )
        for index, (qid, _, context) in enumerate(batch):
            answer = outputs["answer"][index].numpy().decode("utf-8")
            begin = int(outputs["start"][index])
            end = int(outputs["end"][index])
            answers[qid] = answer
            offsets_ok += context[begin:end] == answer
    seconds = time.perf_counter() - start
    different = [
        (qid, answers[qid], expected.get(qid))
        for qid, _, _ in questions
        if answers[qid] != expected.get(qid)
    ]
    leaked = sorted(m for m in sys.modules if m.split(".")[0] == "keras_bert")
    print(f"questions: {len(questions)}")
    print(f"identical answers: {len(questions) - len(different)}")
    print(f"answer == context[start:end]: {offsets_ok}")
    print(
        f"serving: {seconds:.1f} s, {len(questions) / seconds:.1f} "
        f"questions/s (batches of {FLAGS.batch_size})"
    )
    for qid, ours, theirs in different[:20]:
        print(f"  {qid}: export {ours!r}, keras {theirs!r}")
    print(f"keras_bert imported: {bool(leaked)}")
    if different or leaked or offsets_ok != len(questions):
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
