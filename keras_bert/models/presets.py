"""Architectures of the BERT sizes Google released.

All use vocabulary 30522 (uncased English WordPiece), 512 positions,
2 segments, heads of width 64 and a feed-forward of 4H. `from_preset`
builds the architecture with random weights; load trained weights with
`from_checkpoint`.

| preset        | L  | H    | A  | parameters (backbone with pooler) |
|---------------|----|------|----|-----------------------------------|
| `bert_tiny`   | 2  | 128  | 2  | 4,385,920                         |
| `bert_mini`   | 4  | 256  | 4  | 11,170,560                        |
| `bert_small`  | 4  | 512  | 8  | 28,763,648                        |
| `bert_medium` | 8  | 512  | 8  | 41,373,184                        |
| `bert_base`   | 12 | 768  | 12 | 109,482,240                       |
| `bert_large`  | 24 | 1024 | 16 | 335,141,888                       |

The counts are asserted in `tests/models/test_presets.py`.
"""

_COMMON = {
    "vocabulary_size": 30522,
    "max_sequence_length": 512,
    "num_segments": 2,
}


def _preset(num_layers, hidden_dim):
    return {
        **_COMMON,
        "num_layers": num_layers,
        "num_heads": hidden_dim // 64,
        "hidden_dim": hidden_dim,
        "intermediate_dim": 4 * hidden_dim,
    }


BACKBONE_PRESETS = {
    "bert_tiny": _preset(2, 128),
    "bert_mini": _preset(4, 256),
    "bert_small": _preset(4, 512),
    "bert_medium": _preset(8, 512),
    "bert_base": _preset(12, 768),
    "bert_large": _preset(24, 1024),
}


def get_preset_config(name):
    """Returns a copy of the backbone config of preset `name`."""
    if name not in BACKBONE_PRESETS:
        raise ValueError(
            f"Unknown preset {name!r}. Valid presets are: "
            f"{', '.join(BACKBONE_PRESETS)}. To load trained weights from a "
            "directory use `from_checkpoint(path)` instead."
        )
    return dict(BACKBONE_PRESETS[name])
