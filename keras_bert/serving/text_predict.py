"""A model's `serving_default` on raw text, in Python.

`predict_text` runs the raw-text endpoint the serving registry builds for
any served model (`serving_endpoints`; a class given to
`register_endpoints` included) batch by batch in Python, as
`BertQuestionAnswerer.predict` runs its own text function
(`keras_bert.decoding.run_text`).
"""

from keras_bert.decoding.run_text import run_text_function
from keras_bert.serving.endpoints import serving_endpoints


def serving_default(model, preprocessor, **options):
    """`(function, input_signature)` of `model`'s `serving_default`."""
    return serving_endpoints(model, preprocessor, **options)["serving_default"]


def predict_text(model, inputs, *args, **kwargs):
    """`model`'s SavedModel `serving_default`, run on raw text in Python.

    Args:
        model: a task model the serving registry serves, with a
            `keras_bert.BertPreprocessor` as its `preprocessor`.
        inputs: dict from each `serving_default` input name (e.g.
            `question` and `context`) to a list, tuple, array or tensor of
            strings, all of one length.
        *args, **kwargs: `batch_size`, `verbose`, `steps`, `callbacks`,
            `padding` (see `keras_bert.decoding.run_text_function`) and
            the export's options, passed to the model's endpoint builder
            (see `export_saved_model`).

    Returns:
        A dict from each `serving_default` output name to a numpy array
        over all examples, in order; strings as Python `str`.
    """
    return run_text_function(model, serving_default, inputs, *args, **kwargs)
