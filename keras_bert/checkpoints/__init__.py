"""Hugging Face and original Google BERT checkpoint import and export.

`load_checkpoint` (behind `BertBackbone.from_checkpoint` and friends) reads
either format (and keras-hub presets) into our models, all-or-nothing, and
`load_preset` (behind every model's `from_preset`) adds preset names and
`load_weights=False`;
`save_huggingface` writes a directory `transformers` loads, and
`save_keras_hub_preset` one keras-hub loads. What the formats know about
each task head is declared once, in `keras_bert.checkpoints.heads`
(`CheckpointHead`, `register_checkpoint_head`).
"""

from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.heads import CheckpointHead
from keras_bert.checkpoints.heads import checkpoint_head
from keras_bert.checkpoints.heads import register_checkpoint_head
from keras_bert.checkpoints.load_checkpoint import load_checkpoint
from keras_bert.checkpoints.load_preset import load_preset
from keras_bert.checkpoints.read_checkpoint import read_checkpoint
from keras_bert.checkpoints.read_checkpoint import read_checkpoint_config
from keras_bert.checkpoints.save_huggingface import save_huggingface
from keras_bert.checkpoints.save_keras_hub_preset import save_keras_hub_preset

__all__ = [
    "Checkpoint",
    "CheckpointHead",
    "checkpoint_head",
    "load_checkpoint",
    "load_preset",
    "read_checkpoint",
    "read_checkpoint_config",
    "register_checkpoint_head",
    "save_huggingface",
    "save_keras_hub_preset",
]
