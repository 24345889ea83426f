"""Fill-mask against `transformers`' `pipeline("fill-mask")` on the real
AntiBERTy masked-LM weights (PyPI `antiberty==0.1.3`, a BERT trained on
antibody sequences; its 25-token vocabulary read cased on both sides, as
its own runner does), and its SavedModel against `fill_mask`.

The texts are real chains written one residue a word (its tokenizer splits
on spaces; unspaced, a chain is one word the vocabulary cannot spell),
each with one residue masked at five places and, from 10 residues, two at
once. `fill_mask(texts, top_k=5)` in batches of 16 against the pipeline
one text at a time: the same five tokens in the same order, scores within
1e-5, and our tokenizer's ids equal to Hugging Face's. `python -m pytest
-s -m slow tests/checkpoints/test_fill_mask_parity.py` prints the figures.
"""

import os

import numpy as np
import pytest

from tests.checkpoints.conftest import require_references
from tests.checkpoints.test_antiberty_parity import SEQUENCES

require_references()

TOLERANCE = 1e-5
# The parity test's chains and fragments, and the heavy and the light chain
# of AntiBERTy's README.
CHAINS = SEQUENCES + [
    "EVQLVQSGPEVKKPGTSVKVSCKASGFTFMSSAVQWVRQARGQRLEWIGWIVIGSGNTNYAQKFQERV"
    "TITRDMSTSTAYMELSSLRSEDTAVYYCAAPYCSSISCNDGFDIWGQGTMVTVS",
    "DVVMTQTPFSLPVSLGDQASISCRSSQSLVHSNGNTYLHWYLQKPGQSPKLLIYKVSNRFSGVPDRFS"
    "GSGSGTDFTLKISRVEAEDLGVYFCSQSTHVPYTFGGGTKLEIK",
]


def max_abs(a, b):
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return float(np.max(np.abs(a - b), initial=0.0))


def masked_texts():
    """Each chain with one residue masked at five places, and chains of 10
    or more with two masked at once (a third and two thirds along)."""

    def masked(chain, places):
        return " ".join(
            "[MASK]" if i in places else r for i, r in enumerate(chain)
        )

    texts = [
        masked(chain, [place])
        for chain in CHAINS
        for place in sorted(
            set(np.linspace(0, len(chain) - 1, 5).round().astype(int))
        )
    ]
    return texts + [
        masked(chain, [len(chain) // 3, 2 * len(chain) // 3])
        for chain in CHAINS
        if len(chain) >= 10
    ]


def fill_mask(checkpoint_dir, vocab_file, texts, top_k=5, batch_size=16):
    """keras_bert's `fill_mask` against the pipeline on `texts`: `(figures,
    outputs, model)`, figures `num_texts`, `num_masks`, `same_tokens`
    (masks whose `top_k` token ids and strings are the pipeline's, in
    order), `max_score_diff`, `same_input_ids` (texts our tokenizer
    encodes as Hugging Face's)."""
    import transformers

    import keras_bert

    model = keras_bert.BertMaskedLM.from_checkpoint(checkpoint_dir)
    model.preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocab_file, lowercase=False),
        sequence_length=256,
    )
    outputs = model.fill_mask(
        texts, top_k=top_k, batch_size=batch_size, verbose=0
    )
    tokenizer = transformers.BertTokenizer(vocab_file, do_lower_case=False)
    reference = transformers.BertForMaskedLM.from_pretrained(
        checkpoint_dir
    ).eval()
    pipeline = transformers.pipeline(
        "fill-mask", model=reference, tokenizer=tokenizer, device="cpu"
    )
    ours = model.preprocessor.tokenizer
    figures = {
        "num_texts": len(texts),
        "num_masks": 0,
        "same_tokens": 0,
        "max_score_diff": 0.0,
        "same_input_ids": sum(
            np.asarray(ours(t)).tolist()
            == tokenizer(t, add_special_tokens=False)["input_ids"]
            for t in texts
        ),
    }
    for index, text in enumerate(texts):
        answer = pipeline(text, top_k=top_k)
        per_mask = answer if isinstance(answer[0], list) else [answer]
        assert outputs["num_masks"][index] == len(per_mask), index
        for mask, guesses in enumerate(per_mask):
            figures["num_masks"] += 1
            figures["same_tokens"] += bool(
                outputs["token_id"][index, mask].tolist()
                == [g["token"] for g in guesses]
                and outputs["token"][index, mask].tolist()
                == [g["token_str"] for g in guesses]
            )
            scores = [g["score"] for g in guesses]
            figures["max_score_diff"] = max(
                figures["max_score_diff"],
                max_abs(outputs["score"][index, mask], scores),
            )
    return figures, outputs, model


@pytest.fixture(scope="module")
def compared(antiberty_dir):
    vocab_file = os.path.join(antiberty_dir, "..", "vocab.txt")
    texts = masked_texts()
    figures, outputs, model = fill_mask(antiberty_dir, vocab_file, texts)
    print(figures)
    return texts, figures, outputs, model


@pytest.mark.slow
def test_fill_mask_matches_the_transformers_pipeline(compared):
    texts, figures, outputs, _ = compared
    assert figures["num_texts"] == len(texts) >= 50
    assert figures["num_masks"] > figures["num_texts"]  # some have two
    assert figures["same_input_ids"] == figures["num_texts"]
    assert figures["same_tokens"] == figures["num_masks"]
    assert figures["max_score_diff"] <= TOLERANCE
    # Trained weights: confident first guesses (uniform would be 1/25).
    assert outputs["score"][:, 0, 0].mean() > 0.3


@pytest.mark.slow
def test_the_saved_model_serves_what_fill_mask_gives(compared, tmp_path):
    import tensorflow as tf

    from keras_bert.serving import export_saved_model

    texts, _, outputs, model = compared
    path = export_saved_model(model, export_dir=str(tmp_path), top_k=5)
    serve = tf.saved_model.load(path).signatures["serving_default"]
    served = {k: v.numpy() for k, v in serve(text=tf.constant(texts)).items()}
    width = outputs["token"].shape[1]
    tokens = served["token"].astype(str)[:, :width]
    np.testing.assert_array_equal(tokens, outputs["token"].astype(str))
    np.testing.assert_array_equal(
        served["token_id"][:, :width], outputs["token_id"]
    )
    np.testing.assert_array_equal(served["num_masks"], outputs["num_masks"])
    difference = max_abs(served["score"][:, :width], outputs["score"])
    print(f"SavedModel vs fill_mask: score max-abs-diff {difference:.3g}")
    assert difference <= TOLERANCE


@pytest.mark.slow
def test_the_documented_antiberty_snippet_answers_as_the_pipeline(
    antiberty_dir,
):
    """docs/embeddings.md's AntiBERTy block, run as written: its tokenizer
    keeps case with no argument, and its top 5 are the pipeline's."""
    import transformers

    from tests.test_docs import python_blocks

    (block,) = [
        b
        for b in python_blocks("docs/embeddings.md")
        if "antiberty" in b.source
    ]
    namespace = {}
    exec(block.source, namespace)
    assert namespace["tokenizer"].lowercase is False
    guesses = namespace["guesses"]
    reference = transformers.pipeline(
        "fill-mask",
        model=transformers.BertForMaskedLM.from_pretrained(antiberty_dir),
        tokenizer=transformers.BertTokenizer(
            os.path.join(antiberty_dir, "..", "vocab.txt"), do_lower_case=False
        ),
        device="cpu",
    )(namespace["text"], top_k=5)
    assert guesses["token"][0, 0].tolist() == [
        g["token_str"] for g in reference
    ]
    np.testing.assert_allclose(
        guesses["score"][0, 0], [g["score"] for g in reference], atol=TOLERANCE
    )
