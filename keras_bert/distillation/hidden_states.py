"""Hidden states of mapped blocks: what `BertDistiller` matches them by.

Keras' `FeatureDistillation` reads a layer of the task model's graph by
name and calls the student a second time to get it. A keras_bert task
model calls its backbone's blocks in its own graph, so this module finds
each block's node there (its output, the padding mask it was called with
and, for a last block computed at the head's positions only, those
positions) and builds a model of the task model's inputs that returns
the task's output and those states in one forward pass.
"""

import keras

from keras_bert.models.backbone_of import backbone_of

FINAL_OUTPUT = "final_output"  # the key Keras' Distiller reads


def uniform_layer_map(teacher_layers, student_layers):
    """The teacher block each student block copies the output of.

    Student block `j`'s output is matched to teacher block
    `round((j + 1) * teacher_layers / student_layers) - 1`'s: each
    student block stands for the teacher blocks up to the next one's
    start (TinyBERT's uniform mapping), the last to the last: 6 blocks
    to 3 gives `(1, 3, 5)`, 6 to 2 gives `(2, 5)`.

    Example:
    ```python
    uniform_layer_map(6, 3)  # (1, 3, 5)
    ```
    """
    return tuple(
        int((j + 1) * teacher_layers / student_layers + 0.5) - 1
        for j in range(student_layers)
    )


def check_layer_map(teacher, student, hidden_state_layers):
    """`hidden_state_layers` checked (or the uniform map), as a tuple."""
    teacher_backbone = backbone_of(teacher)
    student_backbone = backbone_of(student)
    if teacher_backbone.hidden_dim != student_backbone.hidden_dim:
        raise ValueError(
            "Hidden-state distillation compares the student's and the "
            "teacher's hidden states, which must have one width: the "
            f"teacher's are {teacher_backbone.hidden_dim}, the student's "
            f"{student_backbone.hidden_dim} (no learned projection is "
            "built). Use hidden_state_weight=0.0 or a student of the "
            "teacher's width (e.g. keras_bert.distillation.student_of("
            "teacher, layers=...))."
        )
    teacher_layers = teacher_backbone.num_layers
    student_layers = student_backbone.num_layers
    if hidden_state_layers is None:
        return uniform_layer_map(teacher_layers, student_layers)
    layers = tuple(hidden_state_layers)
    if len(layers) != student_layers or not all(
        isinstance(i, int) and 0 <= i < teacher_layers for i in layers
    ):
        raise ValueError(
            "Received an invalid value for argument `hidden_state_layers`: "
            f"expected one teacher block index (0 to {teacher_layers - 1}) "
            f"per student block ({student_layers}), e.g. "
            f"{uniform_layer_map(teacher_layers, student_layers)}. "
            f"Received: hidden_state_layers={hidden_state_layers!r}"
        )
    return layers


def _block_node(model, block):
    nodes = [
        node
        for depth in model._nodes_by_depth.values()
        for node in depth
        if node.operation is block
    ]
    if len(nodes) != 1:
        how = (
            "calls its backbone as one nested model"
            if not nodes
            else f"calls it {len(nodes)} times"
        )
        raise ValueError(
            "Hidden-state distillation reads each block's output in the "
            f"task model's own graph, once: {type(model).__name__} "
            f"{model.name!r} {how} (block {block.name!r}), which is not "
            "supported yet (a BertClassifier's is). Distil it with "
            "hidden_state_weight=0.0."
        )
    return nodes[0]


def hidden_state_model(model, blocks):
    """A model of `model`'s inputs returning its output and states.

    Args:
        model: a functional keras_bert task model.
        blocks: indices of its backbone's blocks.

    Returns:
        A `keras.Model` of the same layers and inputs returning a dict:
        `final_output` (`model`'s output), `hidden_states`,
        `padding_masks` (one per block: its output and the padding mask
        it read) and, if some blocks computed some positions only,
        `positions` (theirs, in order).
    """
    if not getattr(model, "_nodes_by_depth", None):
        raise ValueError(
            f"Hidden-state distillation needs a functional task model; "
            f"{type(model).__name__} {model.name!r} has no graph."
        )
    transformer_layers = backbone_of(model).transformer_layers
    states, masks, positions = [], [], []
    for i in blocks:
        node = _block_node(model, transformer_layers[i])
        states.append(node.output_tensors[0])
        masks.append(node.arguments.kwargs["padding_mask"])
        positions.append(node.arguments.kwargs.get("query_positions"))
    outputs = {
        FINAL_OUTPUT: model.output,
        "hidden_states": states,
        "padding_masks": masks,
    }
    found = [p for p in positions if p is not None]
    if found:
        outputs["positions"] = found
    model_with_states = keras.Model(
        model.inputs, outputs, name=f"{model.name}_hidden_states"
    )
    # Which entries of `positions` belong to which block.
    model_with_states.positioned = [p is not None for p in positions]
    return model_with_states


def _per_block(features, model_with_states):
    positions = iter(features.get("positions", ()))
    return [
        (state, mask, next(positions) if positioned else None)
        for state, mask, positioned in zip(
            features["hidden_states"],
            features["padding_masks"],
            model_with_states.positioned,
        )
    ]


def _at(values, positions):
    """`values` `(batch, length, ...)` gathered at `positions`."""
    index = keras.ops.cast(positions, "int32")
    if len(values.shape) == 3:
        index = keras.ops.expand_dims(index, -1)
    return keras.ops.take_along_axis(values, index, axis=1)


def hidden_state_loss(teacher_features, student_features, teacher_model,
                      student_model):  # fmt: skip
    """Mean squared error of mapped hidden states, padding masked out.

    For each mapped pair, the mean over the hidden units of the squared
    difference, averaged over the real tokens (the student's padding
    mask); a block computed at some positions only (the last block of a
    `BertClassifier`, at `[CLS]`) is compared there, the other gathered
    there. The pairs' errors are averaged.
    """
    losses = []
    for (t, _, t_at), (s, mask, s_at) in zip(
        _per_block(teacher_features, teacher_model),
        _per_block(student_features, student_model),
    ):
        at = s_at if s_at is not None else t_at
        if at is not None:
            mask = _at(mask, at)
            t = t if t_at is not None else _at(t, at)
            s = s if s_at is not None else _at(s, at)
        t = keras.ops.stop_gradient(keras.ops.cast(t, "float32"))
        error = keras.ops.mean(
            keras.ops.square(keras.ops.cast(s, "float32") - t), axis=-1
        )
        mask = keras.ops.cast(mask, "float32")
        losses.append(
            keras.ops.sum(error * mask)
            / keras.ops.maximum(keras.ops.sum(mask), 1.0)
        )
    return keras.ops.mean(keras.ops.stack(losses))
