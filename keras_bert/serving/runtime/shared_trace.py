"""One trace of a served block for every endpoint of an export.

A frozen block's weights are constants of the graph it is traced into
(`remapper_forms.weight`). An export traces its model once per endpoint
(`serving_default` on text, `predict_ids` on ids, ...): traced inline,
every endpoint's graph held its own copy of every block's weights: a
SavedModel of MiniLM was 141.4 MB for 90.9 MB of weights
(`benchmarks/file_sizes.py`). Traced here, each block is one function of
the SavedModel's library that every endpoint calls: its constants are
stored once. TensorFlow inlines the call when it optimizes a graph, so
grappler's remapper fuses the same forms (tests/serving/runtime/
test_remapper_forms.py).
"""


def shared_trace(function, block, call, serving):
    """`function(block, call, serving)`, called through one `tf.function`
    per block, `serving` and Python fields of `call` (the tensors' shapes are
    relaxed, so that every endpoint's trace reuses it): in a graph being
    traced, the block's computation is a function call, its frozen
    weights constants of that function only.

    Args:
        function: an implementation, `(block, BlockCall, BlockServing) ->
            (outputs, probabilities)`.
        block: the served `TransformerBlock`.
        call: the `BlockCall`.
        serving: the block's `BlockServing`.

    Returns:
        `function`'s `(outputs, probabilities)`.
    """
    import tensorflow as tf

    fields = (
        call.training,
        call.closed_form_gelu,
        call.split_qkv_first,
        call.int8,
        call.padding_mask is None,
        call.query_positions is None,
    )
    if not all(isinstance(f, (bool, int, type(None))) for f in fields):
        return function(block, call, serving)  # e.g. a tensor `training`
    # Kept by the `BlockServing`, which the block keeps: a new one (a new
    # export's copy, new weights) traces anew.
    traces = serving.traces
    key = (id(block), *fields)
    if key not in traces:

        def run(inputs, padding_mask, query_positions):
            # Its nodes named under the block's name, as when inline.
            with tf.name_scope(block.name):
                return function(
                    block,
                    call._replace(
                        inputs=inputs,
                        padding_mask=padding_mask,
                        query_positions=query_positions,
                    ),
                    serving,
                )

        traces[key] = tf.function(run, reduce_retracing=True)
    return traces[key](call.inputs, call.padding_mask, call.query_positions)


def in_graph():
    """Whether a graph is being traced (an export), not an eager call."""
    import tensorflow as tf

    return not tf.executing_eagerly()
