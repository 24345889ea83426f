"""benchmarks/serving_ops.py --accuracy: each serving precision's accuracy
on SST-2 dev, and its section."""

import os
import tempfile

from absl import flags

from benchmarks import common
from benchmarks.contestants import serving as contestants
from benchmarks.serving_ops_modes.exports import _softmax

FLAGS = flags.FLAGS

# --accuracy: precision -> export_saved_model's options; the goal.
PRECISIONS = {
    "float32": {},
    "bfloat16": {"precision": "bfloat16"},
    "int8": {"quantize": "int8"},
}
GOAL_POINTS = 0.5
# What the record keeps of the recipe's results.json: how it was trained.
TRAINING = ("task", "epochs", "learning_rate", "batch_size", "seed")


def classifier_and_preprocessor():
    import keras_bert

    classifier, tokenizer = contestants.fine_tuned(
        FLAGS.classifier, FLAGS.init_checkpoint or common.minilm_dir()
    )
    return classifier, keras_bert.BertPreprocessor(tokenizer, 128)


def keras_probabilities(classifier, preprocessor, sentences):
    """The float32 Keras model's probabilities, float64."""
    import numpy as np

    requests = contestants.request_batches(sentences, 32)
    return _softmax(
        np.concatenate(
            [classifier.predict(preprocessor(r), verbose=0) for r in requests]
        )
    )


def served_probabilities(path, sentences):
    """`serving_default`'s probabilities from a TF1 Session, as TF Serving
    runs the export."""
    import numpy as np

    session, signatures = contestants.session(path, (0, 0))
    signature = signatures["serving_default"]
    output = signature.outputs["probabilities"].name
    text = signature.inputs["text"].name
    probabilities = np.concatenate(
        [
            session.run(output, {text: r})
            for r in contestants.request_batches(sentences, 32)
        ]
    )
    session.close()
    return probabilities.astype("float64")


def training_config():
    """The recipe's settings, from `<classifier>/results.json` (if any)."""
    path = os.path.join(
        os.path.dirname(contestants.weights_path(FLAGS.classifier)),
        "results.json",
    )
    if not os.path.exists(path):
        return None
    config = common.read_record(path)["config"]
    return {name: config.get(name) for name in TRAINING}


def measure_accuracy():
    import numpy as np

    from keras_bert.serving import export_saved_model

    sentences, gold = common.read_sst2("dev", FLAGS.glue_dir)
    gold = np.asarray(gold)
    classifier, preprocessor = classifier_and_preprocessor()
    expected = keras_probabilities(classifier, preprocessor, sentences)
    work_dir = tempfile.mkdtemp(prefix="serving_precision_")
    variants = {}
    served = {}
    for name in FLAGS.precisions or PRECISIONS:
        path = export_saved_model(
            classifier,
            preprocessor,
            os.path.join(work_dir, name),
            labels=["negative", "positive"],
            **PRECISIONS[name],
        )
        served[name] = served_probabilities(path, sentences)
        difference = np.abs(served[name] - expected)
        variants[name] = {
            "accuracy": float((served[name].argmax(-1) == gold).mean()),
            "max_probability_difference": float(difference.max()),
            "mean_probability_difference": float(difference.mean()),
        }
    reference = served["float32"].argmax(-1)
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


def accuracy_summary(record):
    variants = record["variants"]
    reference = variants["float32"]["accuracy"]
    training = record["training"]
    trained = " ".join(
        ["recipes/glue.py"]
        + [f"--{name}={value}" for name, value in (training or {}).items()]
    )
    rows = []
    for name, result in variants.items():
        points = 100 * (result["accuracy"] - reference)
        goal = "" if name == "float32" else (
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
            f"of 32. Goal: accuracy within {GOAL_POINTS} points of "
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
