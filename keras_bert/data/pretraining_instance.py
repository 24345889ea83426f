"""One pre-training example: a masked sentence pair and its labels."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class PretrainingInstance:
    """A `[CLS] A [SEP] B [SEP]` pair with masked-LM and NSP labels.

    Besides the training fields, an instance records where its segments
    came from (document number in the input stream and token span within
    that document's WordPiece stream), which makes the NSP construction
    checkable: for a positive pair `b_document == a_document` and
    `b_span[0] == a_span[1]`.

    Args:
        token_ids: tuple of int. The sequence after masking, unpadded.
        segment_ids: tuple of int. 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`.
        masked_lm_positions: tuple of int. Sorted masked positions.
        masked_lm_ids: tuple of int. Original ids at those positions.
        is_random_next: bool. `True` if B was drawn from another document
            (NSP label 1), `False` if B continues A (label 0).
        a_document, b_document: int. Index of the source document of A and
            B among the usable documents (two or more non-empty sentences)
            of the input stream.
        a_span, b_span: tuple `(start, end)` of token offsets of A and B in
            their document's WordPiece stream.

    Example:
    ```python
    instance = PretrainingInstance(
        token_ids=(2, 7, 3, 8, 3), segment_ids=(0, 0, 0, 1, 1),
        masked_lm_positions=(), masked_lm_ids=(), is_random_next=False,
        a_document=0, a_span=(0, 1), b_document=0, b_span=(1, 2),
    )
    ```
    """

    token_ids: tuple
    segment_ids: tuple
    masked_lm_positions: tuple
    masked_lm_ids: tuple
    is_random_next: bool
    a_document: int
    a_span: tuple
    b_document: int
    b_span: tuple

    @property
    def next_sentence_label(self):
        """NSP label in BERT's convention: 0 = is next, 1 = random."""
        return int(self.is_random_next)
