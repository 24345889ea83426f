"""Preset names: architectures with random weights, and trained checkpoints.

Two kinds of name, told apart by their spelling:

- **Architecture only** (`bert_tiny` ... `bert_large`): the sizes Google
  released, vocabulary 30522 (uncased English WordPiece). `from_preset`
  builds them with *random* weights, for pre-training from scratch.
- **Trained weights** (`bert_base_en_uncased`, ... — keras-hub's names,
  with the language and casing in them): each names a checkpoint on the
  Hugging Face Hub. `from_checkpoint(name)`, `from_preset(name)`,
  `BertTokenizer.from_checkpoint(name)` and every recipe's
  `--init_checkpoint=name` load its trained weights and vocabulary,
  through `huggingface_hub`'s cache (see `keras_bert.checkpoints.hub`).

All have 512 positions and 2 segments; Google's sizes have heads of
width 64 and a feed-forward of 4H.

| preset        | L  | H    | A  | parameters (backbone with pooler) |
|---------------|----|------|----|-----------------------------------|
| `bert_tiny`   | 2  | 128  | 2  | 4,385,920                         |
| `bert_mini`   | 4  | 256  | 4  | 11,170,560                        |
| `bert_small`  | 4  | 512  | 8  | 28,763,648                        |
| `bert_medium` | 8  | 512  | 8  | 41,373,184                        |
| `bert_base`   | 12 | 768  | 12 | 109,482,240                       |
| `bert_large`  | 24 | 1024 | 16 | 335,141,888                       |

Trained checkpoints (all Apache-2.0) and their Hub ids:

- `bert_tiny_en_uncased`: `google/bert_uncased_L-2_H-128_A-2`
- `bert_mini_en_uncased`: `google/bert_uncased_L-4_H-256_A-4`
- `bert_small_en_uncased`: `google/bert_uncased_L-4_H-512_A-8`
- `bert_medium_en_uncased`: `google/bert_uncased_L-8_H-512_A-8`
- `bert_base_en_uncased`: `google-bert/bert-base-uncased`
- `bert_base_en`: `google-bert/bert-base-cased`
- `bert_base_zh`: `google-bert/bert-base-chinese`
- `bert_base_multi`: `google-bert/bert-base-multilingual-cased`
- `bert_large_en_uncased`: `google-bert/bert-large-uncased`
- `bert_large_en`: `google-bert/bert-large-cased`
- `all_minilm_l6_v2_en`: `sentence-transformers/all-MiniLM-L6-v2`

README.md's preset table gives every name's architecture, source, licence
and parameter count. `tests/models/test_presets.py` asserts the counts by
building each architecture (no download) and checks that table and this
list against `PRESETS`; MiniLM's architecture against its real config.

`suggest_preset(name)` gives the closest names to a misspelt one, for
errors (`difflib`).
"""

import difflib

_COMMON = {
    "vocabulary_size": 30522,
    "max_sequence_length": 512,
    "num_segments": 2,
}
# Google's releases are Apache-2.0, as is sentence-transformers' MiniLM
# (its model card's `license: apache-2.0`).
_APACHE = "Apache-2.0"


def _preset(num_layers, hidden_dim, **overrides):
    return {
        **_COMMON,
        "num_layers": num_layers,
        "num_heads": hidden_dim // 64,
        "hidden_dim": hidden_dim,
        "intermediate_dim": 4 * hidden_dim,
        **overrides,
    }


def _random(config):
    return {"config": config, "hub_id": None, "license": None}


def _trained(hub_id, config, license=_APACHE):
    return {"config": config, "hub_id": hub_id, "license": license}


# Every preset name: its architecture (`BertBackbone` arguments) and, for
# trained checkpoints, where the weights are (`hub_id`) and their licence.
PRESETS = {
    "bert_tiny": _random(_preset(2, 128)),
    "bert_mini": _random(_preset(4, 256)),
    "bert_small": _random(_preset(4, 512)),
    "bert_medium": _random(_preset(8, 512)),
    "bert_base": _random(_preset(12, 768)),
    "bert_large": _random(_preset(24, 1024)),
    "bert_tiny_en_uncased": _trained(
        "google/bert_uncased_L-2_H-128_A-2", _preset(2, 128)
    ),
    "bert_mini_en_uncased": _trained(
        "google/bert_uncased_L-4_H-256_A-4", _preset(4, 256)
    ),
    "bert_small_en_uncased": _trained(
        "google/bert_uncased_L-4_H-512_A-8", _preset(4, 512)
    ),
    "bert_medium_en_uncased": _trained(
        "google/bert_uncased_L-8_H-512_A-8", _preset(8, 512)
    ),
    "bert_base_en_uncased": _trained(
        "google-bert/bert-base-uncased", _preset(12, 768)
    ),
    "bert_base_en": _trained(
        "google-bert/bert-base-cased",
        _preset(12, 768, vocabulary_size=28996),
    ),
    "bert_base_zh": _trained(
        "google-bert/bert-base-chinese",
        _preset(12, 768, vocabulary_size=21128),
    ),
    "bert_base_multi": _trained(
        "google-bert/bert-base-multilingual-cased",
        _preset(12, 768, vocabulary_size=119547),
    ),
    "bert_large_en_uncased": _trained(
        "google-bert/bert-large-uncased", _preset(24, 1024)
    ),
    "bert_large_en": _trained(
        "google-bert/bert-large-cased",
        _preset(24, 1024, vocabulary_size=28996),
    ),
    "all_minilm_l6_v2_en": _trained(
        "sentence-transformers/all-MiniLM-L6-v2",
        # 12 heads of width 32: not Google's 64.
        _preset(6, 384, num_heads=12),
    ),
}

# The architecture-only names (random weights).
BACKBONE_PRESETS = {
    name: preset["config"]
    for name, preset in PRESETS.items()
    if preset["hub_id"] is None
}


def preset_hub_id(name):
    """The Hugging Face Hub id of trained preset `name`, else `None`.

    Example:
    ```python
    preset_hub_id("bert_base_en_uncased")  # "google-bert/bert-base-uncased"
    preset_hub_id("bert_base")  # None: architecture only
    ```
    """
    preset = PRESETS.get(name) if isinstance(name, str) else None
    return preset["hub_id"] if preset else None


def suggest_preset(name):
    """A sentence naming the preset closest to `name`, or `""`.

    Example:
    ```python
    suggest_preset("bert_base_en_uncase")
    # " Did you mean 'bert_base_en_uncased'?"
    suggest_preset("xyz")  # ""
    ```
    """
    close = difflib.get_close_matches(str(name), PRESETS, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def get_preset_config(name):
    """Returns a copy of the backbone config of preset `name`."""
    if name not in PRESETS:
        raise ValueError(
            f"Unknown preset {name!r}.{suggest_preset(name)} "
            "Architecture-only presets (random "
            f"weights): {', '.join(BACKBONE_PRESETS)}. Trained checkpoints: "
            f"{', '.join(n for n in PRESETS if n not in BACKBONE_PRESETS)}. "
            "`from_preset` and `from_checkpoint` also take a checkpoint "
            "directory or a Hugging Face Hub id (org/name, or hf://name for "
            "a one-part id)."
        )
    return dict(PRESETS[name]["config"])
