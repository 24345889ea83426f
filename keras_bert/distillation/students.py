"""Students: a task model with fewer blocks, from the teacher or a preset.

`student_of(teacher, layers=(0, 2, 4))` builds the teacher's own task
class on a backbone of those blocks: the embeddings, the chosen blocks,
the pooler and the head are copied from the teacher (DistilBERT
initialises its student so), the preprocessor is the teacher's own
object. `student_of(teacher, preset="bert_mini")` builds the same head on
a preset architecture with fresh weights instead.
"""

import keras

from keras_bert.models.backbone_of import backbone_of
from keras_bert.models.lora import merged_copy
from keras_bert.models.presets import PRESETS


def every_other_layer(teacher_layers, num_layers):
    """`num_layers` block indices spread evenly over `teacher_layers`.

    The first block and then every `teacher_layers / num_layers`-th,
    rounded: 6 blocks to 3 gives `(0, 2, 4)`, 12 to 6 gives
    `(0, 2, 4, 6, 8, 10)` (DistilBERT's choice), 6 to 2 gives `(0, 3)`.

    Example:
    ```python
    every_other_layer(6, 3)  # (0, 2, 4)
    ```
    """
    if not isinstance(num_layers, int) or not 0 < num_layers <= teacher_layers:
        raise ValueError(
            "Received an invalid value for argument `num_layers`: expected "
            f"an int from 1 to the teacher's {teacher_layers} blocks. "
            f"Received: num_layers={num_layers!r}"
        )
    return tuple(
        int(i * teacher_layers / num_layers + 0.5) for i in range(num_layers)
    )


def _checked_layers(teacher_layers, layers, num_layers, preset):
    chosen = sum(value is not None for value in (layers, num_layers, preset))
    if chosen != 1:
        raise ValueError(
            "Pass exactly one of `layers` (block indices of the teacher, "
            "e.g. (0, 2, 4)), `num_layers` (evenly spread blocks) or "
            f"`preset` (a fresh architecture). Received: layers={layers!r}, "
            f"num_layers={num_layers!r}, preset={preset!r}"
        )
    if num_layers is not None:
        return every_other_layer(teacher_layers, num_layers)
    if layers is None:
        return None
    layers = tuple(layers)
    if (
        not layers
        or not all(isinstance(i, int) for i in layers)
        or any(not 0 <= i < teacher_layers for i in layers)
        or list(layers) != sorted(set(layers))
    ):
        raise ValueError(
            "Received an invalid value for argument `layers`: expected "
            "increasing block indices from 0 to "
            f"{teacher_layers - 1} (the teacher has {teacher_layers} "
            f"blocks), e.g. (0, 2, 4). Received: layers={layers!r}"
        )
    return layers


def _student_backbone_config(teacher_backbone, layers, preset):
    """The config of the student's backbone."""
    config = teacher_backbone.get_config()
    if preset is None:
        return {**config, "num_layers": len(layers)}
    if preset not in PRESETS:
        raise ValueError(
            f"Unknown preset {preset!r}: expected one of "
            f"{sorted(PRESETS)} (e.g. 'bert_mini')."
        )
    architecture = dict(PRESETS[preset]["config"])
    if architecture["vocabulary_size"] != config["vocabulary_size"]:
        raise ValueError(
            f"The preset {preset!r} has a vocabulary of "
            f"{architecture['vocabulary_size']} ids, the teacher one of "
            f"{config['vocabulary_size']}: a student reads the teacher's "
            "ids. Choose a preset of the same vocabulary."
        )
    for name in ("name", "dtype", "optimizations", "max_sequence_length"):
        architecture[name] = config[name]
    return architecture


def _copy_blocks(teacher_backbone, student_backbone, layers):
    """Embeddings, the chosen blocks and the pooler, teacher to student."""
    student_backbone.embedding.set_weights(
        teacher_backbone.embedding.get_weights()
    )
    student_backbone.pooler_dense.set_weights(
        teacher_backbone.pooler_dense.get_weights()
    )
    blocks = teacher_backbone.transformer_layers
    for block, i in zip(student_backbone.transformer_layers, layers):
        block.set_weights(blocks[i].get_weights())


def student_of(teacher, layers=None, num_layers=None, preset=None, dtype=None):
    """A smaller model of the teacher's task class, to distil into.

    The same class, head and settings as `teacher` (labels, label mode,
    pairs, windows, pooling, ...) on a backbone of fewer blocks:

    - `layers` or `num_layers`: the teacher's embeddings, the chosen
      blocks (in order), its pooler and its head, copied (so the student
      starts as the teacher with the other blocks removed);
    - `preset`: a `keras_bert` preset architecture (e.g. `"bert_mini"`)
      of the teacher's vocabulary, with fresh weights, and a fresh head.

    The student's `preprocessor` is the teacher's object itself: both
    read the same ids. The student is trainable (even where the teacher
    is frozen, e.g. by a `BertDistiller`) and an ordinary task model (`fit`,
    `save`, `export_saved_model`), compiled with its class's defaults.

    Args:
        teacher: a task model built on a `keras_bert.BertBackbone`
            (`BertClassifier`, `BertTokenClassifier`, `BertTextEmbedder`,
            ...). A teacher with LoRA (`enable_lora`, or a run trained
            with `--lora_rank`) gives its blocks with the LoRA updates
            merged into the kernels: the student has no LoRA weights.
        layers: sequence of int. Increasing indices of the teacher's
            blocks to keep, e.g. `(0, 2, 4)`.
        num_layers: int. Keep this many blocks, spread evenly from the
            first (`every_other_layer`).
        preset: str. A preset name of `keras_bert.models.presets.PRESETS`.
        dtype: str, a `keras.DTypePolicy` or `None`. The student's dtype
            policy, e.g. `"mixed_bfloat16"` to distil in mixed precision
            (its weights stay float32); `None`: the teacher's.

    Returns:
        A model of `type(teacher)`.

    Example:
    ```python
    teacher = keras_bert.BertClassifier(
        keras_bert.BertBackbone.from_preset("bert_mini"), num_classes=2
    )
    student = keras_bert.distillation.student_of(teacher, num_layers=2)
    student.backbone.num_layers  # 2: the teacher's blocks 0 and 2
    ```
    """
    teacher_backbone = backbone_of(teacher)
    if teacher_backbone is teacher:
        raise ValueError(
            "`student_of` takes a task model (e.g. a BertClassifier); "
            "received a BertBackbone. Distil a model with a head."
        )
    if teacher_backbone.lora_rank is not None and preset is None:
        # W + A @ B as one kernel: the same blocks, without LoRA (a preset
        # student copies no weights, and its config has no LoRA).
        teacher_backbone = merged_copy(teacher_backbone)
    layers = _checked_layers(
        teacher_backbone.num_layers, layers, num_layers, preset
    )
    backbone_config = _student_backbone_config(teacher_backbone, layers, preset)
    if dtype is not None:
        backbone_config["dtype"] = keras.dtype_policies.get(dtype)
    config = teacher.get_config()
    config.update(
        name=f"{teacher.name}_student",
        backbone={
            **keras.layers.serialize(teacher_backbone),
            "config": backbone_config,
        },
        preprocessor=None,
    )
    student = type(teacher).from_config(config)
    # A teacher a `BertDistiller` froze passes `trainable=False` on in its
    # config: the student is to be trained.
    student.trainable = True
    student.preprocessor = teacher.preprocessor
    if preset is None:
        _copy_blocks(teacher_backbone, backbone_of(student), layers)
        _copy_head(teacher, student)
    return student


def _copy_head(teacher, student):
    """The weights of every layer but the backbone, by name."""
    backbone = backbone_of(teacher)
    for layer in teacher.layers:
        if layer is backbone or not layer.weights:
            continue
        student.get_layer(layer.name).set_weights(layer.get_weights())
