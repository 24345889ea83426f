"""Where we knowingly differ from Hugging Face, shown on purpose.

Canonical reordering. With `strip_accents`, Hugging Face applies NFD to the
whole text, which sorts runs of combining marks by combining class, then
drops non-spacing marks by its (older) table. 181 combining marks survive
that table (for example U+1B44 BALINESE ADEG ADEG, U+302F HANGUL DOUBLE DOT
TONE MARK, the Glagolitic combining letters U+1E000..U+1E02A). We map each
character on its own, so two surviving marks written out of canonical order
keep their order. The words hold the same characters, and ids differ only
for a vocabulary that holds such mark sequences: none in the corpora and
fuzzing above (MiniLM vocabulary), every id equal.
"""

import tensorflow as tf

import keras_bert
from tests.text import references

# Two marks that survive accent stripping, in decreasing combining class
# (U+1E01C: 230, U+1B44: 9): NFD swaps them.
OUT_OF_ORDER = "x\U0001e01c\u1b44"


def test_marks_keep_their_order_but_ids_agree():
    vocab_path = references.minilm_vocab_path()
    reference = references.reference_tokenizer(vocab_path)
    normalized = reference.normalizer.normalize_str(OUT_OF_ORDER)
    assert normalized == "x\u1b44\U0001e01c"  # reordered by NFD

    tokenizer = keras_bert.BertTokenizer(vocab_path)
    words, _, _ = tokenizer._basic_tokenizer.split(tf.constant([OUT_OF_ORDER]))
    ours = words.to_list()[0][0].decode("utf-8")
    assert ours == OUT_OF_ORDER  # kept as written
    assert sorted(ours) == sorted(normalized)

    ids = tokenizer([OUT_OF_ORDER]).to_list()[0]
    assert ids == reference.encode(OUT_OF_ORDER, add_special_tokens=False).ids
