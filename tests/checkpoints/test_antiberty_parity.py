"""A real masked-LM checkpoint: AntiBERTy (PyPI `antiberty==0.1.3`).

Its `pytorch_model.bin` holds a BERT encoder (8 layers, H512), the standard
masked-LM head and three custom heads (species, chain, graft) but no NSP
head. We load it into `BertMaskedLM` and compare `mlm_logits` at every
position with `transformers.BertForMaskedLM`.
"""

import logging

import numpy as np
import pytest

from keras_bert import BertBackbone
from keras_bert import BertMaskedLM
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import torch
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers

require_references()

TOLERANCE = 1e-4
# Heavy and light antibody chains (and fragments), one letter per residue.
SEQUENCES = [
    "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKG",
    "DIQMTQSPSSLSASVGDRVTITCRASQSISSYLNWYQQKPGKAPKLLIYAASSLQS",
    "QVQLQESGPGLVKPSETLSLTCTVSGGSISSYYWSWIRQPPGKGLEWIGYIYYSGSTNYNPSLKS",
    "EIVLTQSPGTLSLSPGERATLSCRASQSVSSSYLAWYQQKPGQAPRLLIYGASSRAT",
    "QVQLVQSGAEVKKPGASVKVSCKASGYTFTSYGISWVRQAPGQGLEWMGWISAYNGNTNYAQKLQG",
    "SYELTQPPSVSVSPGQTARITCSGDALPKQYAYWYQQKPGQAPVLVIYKDSERPS",
    "EVQLLESGGGLVQPGGSLRLSCAASGFTFS",
    "CQQYNSYPLTF",
    "WGQGTLVTVSS",
    "MKV",
    "ACDEFGHIKLMNPQRSTVWY",
    "GGGGSGGGGSGGGGS",
]


def _encode(vocabulary):
    ids = {token: i for i, token in enumerate(vocabulary)}
    rows = [
        [ids["[CLS]"]] + [ids[residue] for residue in sequence] + [ids["[SEP]"]]
        for sequence in SEQUENCES
    ]
    # Mask a few residues, as a masked-LM is used.
    rows[0][5] = rows[1][9] = rows[6][3] = ids["[MASK]"]
    length = max(len(row) for row in rows)
    token_ids = np.array([r + [0] * (length - len(r)) for r in rows], "int32")
    padding_mask = (token_ids != 0).astype("int32")
    return {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": padding_mask,
    }


@pytest.fixture(scope="module")
def antiberty_inputs(antiberty_dir):
    with open(f"{antiberty_dir}/../vocab.txt") as file:
        vocabulary = file.read().split()
    assert len(vocabulary) == 25
    return _encode(vocabulary)


@pytest.fixture(scope="module")
def antiberty_model(antiberty_dir):
    from keras_bert import BertMaskedLM

    return BertMaskedLM.from_checkpoint(antiberty_dir)


def test_mlm_logits_match_transformers(
    antiberty_dir, antiberty_model, antiberty_inputs
):
    model = antiberty_model

    batch, length = antiberty_inputs["token_ids"].shape
    positions = np.tile(np.arange(length, dtype="int32"), (batch, 1))
    logits = model(
        {**antiberty_inputs, "masked_positions": positions}, training=False
    )["mlm_logits"].numpy()

    reference = transformers.BertForMaskedLM.from_pretrained(
        antiberty_dir
    ).eval()
    with torch.no_grad():
        expected = reference(**torch_inputs(antiberty_inputs)).logits.numpy()
    real = antiberty_inputs["padding_mask"].astype(bool)
    diff = max_abs_diff(logits, expected)
    print(f"AntiBERTy mlm_logits max-abs-diff (all elements): {diff}")
    print(
        "AntiBERTy mlm_logits max-abs-diff (real tokens): "
        f"{max_abs_diff(logits[real], expected[real])}"
    )
    assert logits.shape == (batch, length, 25)
    assert diff <= TOLERANCE
    # Trained weights, not a random head: visible residues are recovered.
    token_ids = antiberty_inputs["token_ids"]
    residues = real & (token_ids > 4)
    recovered = (logits.argmax(-1) == token_ids)[residues].mean()
    print(f"AntiBERTy visible residues recovered: {recovered:.3f}")
    assert recovered > 0.9
    np.testing.assert_array_equal(
        logits.argmax(-1)[real], expected.argmax(-1)[real]
    )


def test_parameter_count_equals_transformers_pretraining(
    antiberty_dir, antiberty_model
):
    reference = transformers.BertForPreTraining.from_pretrained(antiberty_dir)
    assert antiberty_model.count_params() == sum(
        p.numel() for p in reference.parameters()
    )


def test_custom_heads_are_skipped_and_missing_nsp_announced(
    antiberty_dir, caplog
):
    from keras_bert.checkpoints import read_checkpoint
    from keras_bert.checkpoints.load_checkpoint import assign_checkpoint

    checkpoint = read_checkpoint(antiberty_dir)
    model = BertMaskedLM(BertBackbone(**checkpoint.backbone_config))
    with caplog.at_level(logging.INFO):
        fresh = assign_checkpoint(model, checkpoint)
    assert fresh == ["next_sentence"]
    assert "cls.species.weight" in caplog.text
    assert "cls.graft.bias" in caplog.text
    assert "no next-sentence head (cls.seq_relationship)" in caplog.text
