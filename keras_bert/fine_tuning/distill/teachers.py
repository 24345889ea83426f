"""The teachers `recipes/distill.py` reads: a finished
`recipes/classify.py` or `recipes/embeddings.py` run, a `.keras` file or
a Hugging Face directory.

`teacher_task` (classifier or sentence embedder) and `teacher_labels`
(label names, whether several labels per text) read what the data files
need from the files alone, before any model is built, so that a
distillation run reads its data first and builds the teacher inside its
`tf.distribute` strategy's scope (`load_teacher`, `load_embedder_teacher`).
"""

import io
import json
import os
import zipfile

import keras
import numpy as np

from keras_bert import files
from keras_bert.checkpoints.checkpoint_config import labels_from_config
from keras_bert.fine_tuning.classify.predictions import load_finished_classifier
from keras_bert.fine_tuning.predictions import finished_run
from keras_bert.fine_tuning.predictions import load_finished_run
from keras_bert.fine_tuning.run_files import RESULTS
from keras_bert.fine_tuning.starting_model import load_task_model
from keras_bert.models import BertClassifier
from keras_bert.models import BertTextEmbedder
from keras_bert.models import PairEmbeddingModel
from keras_bert.models.pair_embedding_model import PAIR_INPUTS
from keras_bert.text import BertPreprocessor
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS

HUGGING_FACE_CONFIG = "config.json"
# What a sentence-transformers directory has that a plain BERT one lacks.
SENTENCE_TRANSFORMERS_MODULES = "modules.json"
# The `task` of a `recipes/embeddings.py` run's results.json.
EMBEDDINGS_RUN_TASK = "embeddings"
EMBEDDER, CLASSIFIER = "embedder", "classifier"


def teacher_kind(path):
    """`"run"`, `"keras"` or `"huggingface"`: what `path` holds.

    Raises:
        ValueError: naming `path` when it is none of them.
    """
    if str(path).endswith(".keras"):
        if not files.exists(path):
            raise ValueError(f"No such .keras file: {path}.")
        return "keras"
    if files.exists(os.path.join(path, RESULTS)):
        return "run"
    if files.exists(os.path.join(path, HUGGING_FACE_CONFIG)):
        return "huggingface"
    raise ValueError(
        f"Teacher {path} is neither a recipes/classify.py --model_dir "
        "(results.json), a .keras file nor a Hugging Face directory "
        "(config.json). Pass one of those."
    )


def teacher_task(path):
    """`"embedder"` or `"classifier"`: what the teacher at `path` is,
    from its files alone (no model is built).

    An embedder is a `recipes/embeddings.py` run (its `results.json`
    says `"task": "embeddings"`), a `.keras` file of a
    `keras_bert.BertTextEmbedder`, or a Hugging Face directory with
    sentence-transformers files (`modules.json`). Anything else is taken
    for a classifier, as before embedders could be distilled: a plain
    Hugging Face BERT directory among them.

    Example:
    ```python
    teacher_task("sentence-transformers/all-MiniLM-L6-v2")  # "embedder"
    teacher_task("runs/sst2")  # "classifier"
    ```
    """
    kind = teacher_kind(path)
    if kind == "keras":
        embedder = _keras_config(path).get("class_name") == "BertTextEmbedder"
    elif kind == "run":
        embedder = finished_run(path).get("task") == EMBEDDINGS_RUN_TASK
    else:
        embedder = files.exists(
            os.path.join(path, SENTENCE_TRANSFORMERS_MODULES)
        )
    return EMBEDDER if embedder else CLASSIFIER


def _keras_config(path):
    """The top of a `.keras` file's `config.json`: class and config."""
    with zipfile.ZipFile(io.BytesIO(files.read_bytes(path))) as archive:
        return json.loads(archive.read("config.json"))


def teacher_labels(path):
    """`(label_names, multi_label)` of the classifier at `path`, read
    from its files without building it. A Hugging Face head whose
    `id2label` holds placeholders (`LABEL_0`, ...) is named by its class
    ids, `"0"`, `"1"`, ...: the data's labels are then those ids.

    Example:
    ```python
    names, multi_label = teacher_labels("runs/sst2")  # (["0", "1"], False)
    ```
    """
    kind = teacher_kind(path)
    if kind == "run":
        results = finished_run(path)
        if "label_names" not in results:
            raise ValueError(
                f"{path} is a {results.get('task')!r} run, not a "
                "recipes/classify.py one: distil a classifier (a "
                "recipes/embeddings.py run distils with "
                "EmbeddingDistillationJob)."
            )
        return results["label_names"], bool(results["multi_label"])
    if kind == "keras":
        config = _keras_config(path)["config"]
        if "label_mode" not in config:
            raise ValueError(
                f"{path} holds a {config.get('name', 'model')}, not a "
                "keras_bert.BertClassifier: distil a classifier."
            )
        mode = config["label_mode"]
        multi_label = (mode or {}).get("class_name") == "MultiLabel"
        names = config.get("label_names")
        if names is None:  # named by its class ids
            names = [str(i) for i in range(config["num_classes"])]
        return names, multi_label
    config = files.read_json(os.path.join(path, HUGGING_FACE_CONFIG))
    multi_label = config.get("problem_type") == "multi_label_classification"
    num_classes = len(config.get("id2label") or {}) or config.get(
        "num_labels", 2
    )
    names = labels_from_config(config, num_classes)
    return names or [str(i) for i in range(num_classes)], multi_label


def load_teacher(path, sequence_length=128):
    """The classifier at `path` with its preprocessor attached.

    Args:
        path: str. A finished `recipes/classify.py --model_dir` (rebuilt
            from its `results.json` and `best.weights.h5`), a `.keras`
            file of a `BertClassifier`, or a Hugging Face directory of a
            sequence classifier (read at `sequence_length` tokens).
        sequence_length: int. A Hugging Face teacher's tokens per text.

    Returns:
        A `keras_bert.BertClassifier` whose `preprocessor` is set.
    """
    kind = teacher_kind(path)
    if kind == "keras":
        return keras.models.load_model(path)
    if kind == "run":
        model, preprocessor, _ = load_finished_classifier(path, model_of_run)
        model.preprocessor = preprocessor
        return model
    return BertClassifier.from_checkpoint(path, sequence_length=sequence_length)


def model_of_run(results):
    """The classifier a `recipes/classify.py` run trained, and its
    preprocessor, from the run's `results.json` (before its weights)."""
    config = results["config"]
    sequence_length = config["max_seq_length"]
    windows = {
        "doc_stride": config.get("doc_stride") or None,
        "max_windows": config.get("max_windows"),
        "aggregation": config.get("aggregation", "mean"),
    }
    model, tokenizer = load_task_model(
        BertClassifier,
        sequence_length=sequence_length,
        num_classes=len(results["label_names"]),
        label_names=results["label_names"],
        multi_label=results["multi_label"],
        **windows,
        **{
            name: config[name]
            for name in ("init_checkpoint", "preset", "vocabulary", "lowercase")
        },
    )
    return model, BertPreprocessor(tokenizer, sequence_length=sequence_length)


def load_embedder_teacher(path, sequence_length=128):
    """The sentence embedder at `path` with its preprocessor attached.

    Args:
        path: str. A finished `recipes/embeddings.py --model_dir`
            (rebuilt from its `results.json` and `best.weights.h5`), a
            `.keras` file of a `BertTextEmbedder`, or a Hugging Face
            directory (pooling and normalisation from its
            sentence-transformers files, read at `sequence_length`
            tokens).
        sequence_length: int. A Hugging Face teacher's tokens per text.

    Returns:
        A `keras_bert.BertTextEmbedder` whose `preprocessor` is set.

    Example:
    ```python
    teacher = load_embedder_teacher("sentence-transformers/all-MiniLM-L6-v2")
    ```
    """
    kind = teacher_kind(path)
    if kind == "keras":
        model = keras.models.load_model(path)
        if not isinstance(model, BertTextEmbedder):
            raise ValueError(
                f"{path} holds a {type(model).__name__}, not a "
                "keras_bert.BertTextEmbedder: pass an embedder's file."
            )
        return model
    if kind == "run":
        model, preprocessor, _ = load_finished_run(path, _pair_model_of_run)
        model.embedder.preprocessor = preprocessor
        return model.embedder
    return BertTextEmbedder.from_checkpoint(
        path, sequence_length=sequence_length
    )


def _pair_model_of_run(results):
    """The `PairEmbeddingModel` a `recipes/embeddings.py` run trained
    (its weights are the run's), and the run's preprocessor."""
    config = results["config"]
    sequence_length = config["max_seq_length"]
    pooling = {"pooling": config["pooling"]} if config.get("pooling") else {}
    embedder, tokenizer = load_task_model(
        BertTextEmbedder,
        sequence_length=sequence_length,
        normalize=True,  # as the recipe trains it
        **pooling,
        **{
            name: config[name]
            for name in ("init_checkpoint", "preset", "vocabulary", "lowercase")
        },
    )
    pair = PairEmbeddingModel(embedder, scale=config["scale"])
    # Built (by a call) before the run's weights can load into it.
    ids = {name: np.ones((1, 2), "int32") for name in BACKBONE_INPUTS}
    pair({side: ids for side in PAIR_INPUTS})
    return pair, BertPreprocessor(tokenizer, sequence_length=sequence_length)
