"""The guard every workaround passes first: Keras' private names, checked.

A Keras release that renamed a private name keras_bert relies on would
otherwise fail deep inside `fit`; `require_keras_internals` names the
version and the fix at once. `keras_tf_trainer` is Keras' TensorFlow
trainer module, checked for what `support_distributed_fit` and
`training.trace_per_shape` use.
"""

# The Keras releases keras_bert is tested with: setup.cfg's requirement
# (tests/training/test_keras_untouched.py checks that the two agree).
TESTED_KERAS = ">=3.15,<3.16"


def require_keras_internals(owner, names):
    """Raises a clear error unless `owner` has the private `names`.

    keras_bert works around Keras bugs through a few private Keras
    attributes (always on its own models and optimizers, never for the
    whole process). A Keras release that renamed them would otherwise fail
    deep inside `fit`; this names the version and the fix instead.

    Example:
    ```python
    require_keras_internals(keras.Model, ["_symbolic_build"])
    ```
    """
    import keras

    missing = [name for name in names if not hasattr(owner, name)]
    if missing:
        raise RuntimeError(
            f"keras_bert needs {', '.join(missing)} of "
            f"{getattr(owner, '__name__', type(owner).__name__)}, which "
            f"Keras {keras.__version__} does not have. keras_bert is tested "
            f'with Keras {TESTED_KERAS}: pip install "keras{TESTED_KERAS}".'
        )


def keras_tf_trainer():
    """Keras' TensorFlow trainer module, checked for what we rely on."""
    from keras.src.backend.tensorflow import trainer

    require_keras_internals(
        trainer, ["reduce_per_replica", "_collective_all_reduce_multi_worker"]
    )
    return trainer
