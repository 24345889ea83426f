"""The weights and config of a checkpoint, in one naming scheme."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint read into memory, whatever format it came in.

    Every tensor is stored under its Hugging Face name and in Hugging Face
    layout (linear weights `(out, in)`), with the encoder under `bert.` and
    the heads at the top level (`cls.predictions.*`,
    `cls.seq_relationship.*`, `classifier.*`). One table
    (`keras_bert.checkpoints.weight_map`) then maps these names onto our
    layers for every format. Errors name tensors as they are spelled in the
    files, through `source_name` and `source_shape`.

    Args:
        path: str. The checkpoint directory.
        format: str. `"huggingface"` or `"google"`.
        config_path: str. The config file the architecture came from.
        backbone_config: dict. `BertBackbone` keyword arguments.
        tensors: dict. Hugging Face name -> `np.ndarray`.
        source_names: dict. Hugging Face name -> name in the files, for
            every tensor in `tensors`.
        transposed: set. Hugging Face names whose tensor was transposed on
            reading (Google kernels are `(in, out)`).
        name_in_source: callable. Maps a Hugging Face name that is *not* in
            the files to how it would be spelled there, and whether it
            would be transposed; used to name missing tensors.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    keras_bert.checkpoints.save_huggingface(backbone, None, "tiny_bert")
    checkpoint = keras_bert.checkpoints.read_checkpoint("tiny_bert")
    checkpoint.tensors["bert.pooler.dense.weight"].shape  # (8, 8)
    ```
    """

    path: str
    format: str
    config_path: str
    backbone_config: dict
    tensors: dict
    source_names: dict
    transposed: set
    name_in_source: object

    def source_name(self, name):
        """How the tensor `name` is (or would be) spelled in the files."""
        if name in self.source_names:
            return self.source_names[name]
        return self.name_in_source(name)[0]

    def source_shape(self, name, shape):
        """`shape` (Hugging Face layout) as the files would store it."""
        if name in self.tensors:
            transposed = name in self.transposed
        else:
            transposed = self.name_in_source(name)[1]
        return tuple(reversed(shape)) if transposed else tuple(shape)

    def get(self, name):
        """The tensor `name` as a float32 array in Hugging Face layout."""
        return np.asarray(self.tensors[name], dtype="float32")
