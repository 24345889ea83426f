"""What a served model runs: the serving-only computations.

- `block`: the encoder block's serving implementations (`BlockServing`,
  what a served block's `served_call` holds).
- `embedding`: the embedding's serving form.
- `remapper_forms`: ops in the forms TensorFlow's CPU remapper fuses.
- `stream_layout`: a block's weights dealt out to parallel streams.

`keras_bert.serving.served_copy` sets them on a copy of the model, as the
export's plan (`keras_bert.serving.plan`) says.
"""
