"""Decoding: raw text in, a head's answers out, in one TensorFlow function.

What a task model's `predict` on raw text (and `BertMaskedLM.fill_mask`)
and its exported SavedModel's `serving_default` share: the *text
function* of each head, which tokenizes, cuts long texts into windows,
calls the model and decodes its outputs, all in graph ops.

- `answers`: questions and contexts → the best answer span of each, with
  offsets and scores (`answer_text_function`, `best_answers`).
- `entities`: texts → named entities from word-level tags, with offsets
  and scores (`entity_text_function`, `entities_from_windows`).
- `fill_mask`: texts with `[MASK]` → the likeliest tokens at each mask
  (`fill_mask_text_function`, `fill_mask_outputs`).
- `multi_labels`: a multi-label classifier's probabilities → the names
  over each label's threshold (`labels_over_thresholds`).
- `text_functions`: what they share (`packed_text_function`,
  `trim_to_longest_row`, `same_batch_size`).
- `run_text`: a text function run in Python batch by batch, its outputs
  padded across batches (`run_text_function`).

Its floor is below `models` and above `text` and `data` (whose windows,
tokenizer and packing it uses): the functions take the model as an
argument (any callable from the ids dict to the head's outputs) and know
no model class. So `keras_bert.models` (`predict`, `fill_mask`) and
`keras_bert.serving` (the endpoints) both import them downward, and a
model answers raw text exactly as its export does.
"""

from keras_bert.decoding.answers import answer_text_function
from keras_bert.decoding.entities import entity_text_function
from keras_bert.decoding.fill_mask import fill_mask_text_function
from keras_bert.decoding.multi_labels import labels_over_thresholds
from keras_bert.decoding.run_text import run_text_function
from keras_bert.decoding.text_functions import packed_text_function
from keras_bert.decoding.text_functions import trim_to_longest_row

__all__ = [
    "answer_text_function",
    "entity_text_function",
    "fill_mask_text_function",
    "labels_over_thresholds",
    "packed_text_function",
    "run_text_function",
    "trim_to_longest_row",
]
