"""The backbone of a model: the one function every floor above asks."""

from keras_bert.models.bert_backbone import BertBackbone


def backbone_of(model):
    """`model` if it is a `BertBackbone`, else its `backbone`.

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.

    Example:
    ```python
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    keras_bert.models.backbone_of(classifier) is backbone  # True
    ```
    """
    if isinstance(model, BertBackbone):
        return model
    backbone = getattr(model, "backbone", None)
    if not isinstance(backbone, BertBackbone):
        raise ValueError(
            f"Expected a keras_bert.BertBackbone or a task model built on "
            f"one; received a {type(model).__name__} without a `backbone`."
        )
    return backbone
