"""The whole user flow with every path on a non-local filesystem.

TensorFlow's in-memory `ram://` filesystem stands in for `gs://`: a path
there is reachable only through `tf.io.gfile`, so any `open`/`os` call on
the way fails. One child process (`ram://` lives in one process) runs the
recipes' `main`s one after the other, with every input and output there:

    build_vocab.py → create_pretraining_data.py → pretrain.py (2 steps,
    then re-run to 4: it resumes from the step-2 checkpoint) → glue.py
    (MNLI demo sample, from the pre-trained export) → its SavedModel,
    loaded and queried → save_huggingface → from_checkpoint.

The corpus is a few real files of python3.11-doc, copied to `ram://`.
"""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import glob, importlib.util, json, os, sys
import numpy as np
import tensorflow as tf
from absl import flags

ROOT = "ram://flow"
FLAGS = flags.FLAGS
# The recipes import their sibling `cpu_backend`, as run from recipes/.
sys.path.insert(0, "recipes")


def run_recipe(name, **values):
    # A recipe's flags are global: define them, parse, run, then remove
    # them so that the next recipe can define its own.
    before = set(FLAGS)
    spec = importlib.util.spec_from_file_location(
        f"recipe_{name}", os.path.join("recipes", f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = [name] + [f"--{k}={v}" for k, v in values.items()]
    FLAGS(argv)
    try:
        module.main(argv)
    finally:
        for flag in set(FLAGS) - before:
            delattr(FLAGS, flag)


def local_files(path):
    found = []
    for directory, _, names in tf.io.gfile.walk(path):
        found += [f"{directory.rstrip('/')}/{n}" for n in names]
    return sorted(found)


sources = sorted(glob.glob(
    "/usr/share/doc/python3.11/html/_sources/library/*.rst.txt"
))[:6]
assert len(sources) == 6, "needs python3.11-doc"
for path in sources:
    tf.io.gfile.copy(path, f"{ROOT}/corpus/{os.path.basename(path)}")

run_recipe("build_vocab", input=f"{ROOT}/corpus/*.txt",
           output=f"{ROOT}/vocab/vocab.txt", vocab_size=800)
run_recipe("create_pretraining_data", input_file=f"{ROOT}/corpus/*.txt",
           input_format="text", output_file=f"{ROOT}/data/train.tfrecord",
           vocab_file=f"{ROOT}/vocab/vocab.txt", max_seq_length=32,
           max_predictions_per_seq=5, dupe_factor=1, progress=False)
pretrain = dict(
    input_file=f"{ROOT}/data/train.tfrecord*",
    vocab_file=f"{ROOT}/vocab/vocab.txt",
    preset="bert_tiny", model_dir=f"{ROOT}/pretrain", max_seq_length=32,
    max_predictions_per_seq=5, train_batch_size=4, num_warmup_steps=1,
    save_checkpoints_steps=2, verbose=0,
)
run_recipe("pretrain", num_train_steps=2, **pretrain)
first = json.loads(tf.io.gfile.GFile(f"{ROOT}/pretrain/results.json").read())
run_recipe("pretrain", num_train_steps=4, **pretrain)  # resumes at step 2
second = json.loads(tf.io.gfile.GFile(f"{ROOT}/pretrain/results.json").read())

run_recipe("glue", task="mnli", demo=True, data_dir=f"{ROOT}/glue_data",
           init_checkpoint=f"{ROOT}/pretrain/export",
           model_dir=f"{ROOT}/glue", export_dir=f"{ROOT}/serving/mnli",
           epochs=1, batch_size=16, sequence_length=32)
glue = json.loads(tf.io.gfile.GFile(f"{ROOT}/glue/results.json").read())

serve = tf.saved_model.load(glue["export_dir"]).signatures["serving_default"]
labels = serve(text_a=tf.constant(["A man sleeps."]),
               text_b=tf.constant(["Nobody sleeps."]))["label"].numpy()

import keras_bert
model = keras_bert.BertClassifier.from_checkpoint(
    f"{ROOT}/pretrain/export", num_classes=3
)
tokenizer = keras_bert.BertTokenizer.from_checkpoint(f"{ROOT}/pretrain/export")
keras_bert.checkpoints.save_huggingface(model, tokenizer, f"{ROOT}/hf")
again = keras_bert.BertClassifier.from_checkpoint(f"{ROOT}/hf")
inputs = keras_bert.BertPreprocessor(tokenizer, 16)(["a test of it"])
difference = float(np.abs(model(inputs) - again(inputs)).max())

print("RESULT " + json.dumps({
    "vocab_lines": len(
        tf.io.gfile.GFile(f"{ROOT}/vocab/vocab.txt").read().splitlines()
    ),
    "tfrecords": local_files(f"{ROOT}/data"),
    "first": {k: v for k, v in first.items() if "step" in k},
    "second": {k: v for k, v in second.items() if "step" in k},
    "pretrain_files": local_files(f"{ROOT}/pretrain"),
    "glue_files": local_files(f"{ROOT}/glue"),
    "glue_metrics": glue["metrics"],
    "export_dir": glue["export_dir"],
    "label": labels[0].decode(),
    "hf_files": local_files(f"{ROOT}/hf"),
    "hf_difference": difference,
    "local_gs_dirs": sorted(
        glob.glob("ram:*") + glob.glob("**/ram:*", recursive=True)
    ),
}))
"""


@pytest.mark.slow
def test_the_user_flow_on_a_non_local_filesystem():
    completed = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
    )
    assert completed.returncode == 0, completed.stderr[-5000:]
    line = [x for x in completed.stdout.splitlines() if x.startswith("RESULT ")]
    result = json.loads(line[-1][len("RESULT ") :])
    print(json.dumps(result, indent=2))
    assert result["vocab_lines"] > 100
    assert any(path.endswith("train.tfrecord") for path in result["tfrecords"])
    assert any("stats-" in path for path in result["tfrecords"])
    assert result["first"]["resumed_from_step"] == 0
    assert result["first"]["final_step"] == 2
    assert result["second"]["resumed_from_step"] == 2  # from ram:// ckpt
    assert result["second"]["final_step"] == 4
    assert any("results.json" in p for p in result["pretrain_files"])
    assert any(
        "export/model.safetensors" in p for p in result["pretrain_files"]
    )
    assert any("best.weights.h5" in p for p in result["glue_files"])
    assert result["export_dir"].startswith("ram://flow/serving/mnli/")
    assert result["label"] in ("entailment", "neutral", "contradiction")
    assert any(p.endswith("model.safetensors") for p in result["hf_files"])
    assert result["hf_difference"] == 0.0
    assert result["local_gs_dirs"] == []  # nothing fell back to a local dir
