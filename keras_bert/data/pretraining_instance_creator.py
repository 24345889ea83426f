"""Documents → masked sentence-pair instances for BERT pre-training."""

import collections
import random

import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert.data import masking
from keras_bert.data.pretraining_instance import PretrainingInstance


def _check_positive_int(name, value, minimum=1):
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected an "
            f"integer >= {minimum}. Received: {name}={value!r}"
        )


def _check_probability(name, value):
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected a "
            f"probability in [0, 1]. Received: {name}={value!r}"
        )


def _truncation(length_a, length_b, max_num_tokens):
    """How many tokens to cut from A and B, as BERT's `truncate_seq_pair`.

    The longer segment loses one token at a time (B on ties). A is cut at
    its start and B at its end, so a true continuation stays one.
    """
    excess = length_a + length_b - max_num_tokens
    if excess <= 0:
        return 0, 0
    first = min(excess, abs(length_a - length_b))
    cut_a = first if length_a > length_b else 0
    cut_b = first if length_b > length_a else 0
    rest = excess - first
    return cut_a + rest // 2, cut_b + (rest + 1) // 2


class PretrainingInstanceCreator:
    """Turns a stream of documents into BERT's MLM + NSP instances.

    Follows Google's `create_pretraining_data.py`: each document is cut
    into chunks of sentences that fill a target length (`max_seq_length`
    minus 3, or with probability `short_seq_prob` a random shorter one);
    a chunk is split into A and B, where B is the true continuation with
    probability 0.5 and otherwise a span of a *different* document (the
    chunk's unused sentences are put back for the next instance). Every
    document is used `dupe_factor` times with fresh randomness, and the
    pair is masked (see `keras_bert.data.masking`).

    Differences from the original, each to make a stated property hold
    exactly: the NSP label is drawn first, so positives are 50% (the
    original forces a random B whenever a chunk has one sentence; here such
    a sentence is split at a random token instead); the random document is
    always another document; truncation cuts A at its start and B at its
    end, so a positive B is exactly the tokens that follow A. To stream a
    corpus larger than memory, documents are processed in chunks of
    `documents_per_chunk` (at least that many documents each): random
    B segments are drawn, and instances shuffled, within a chunk.

    Documents with fewer than two non-empty sentences cannot give a
    sentence pair and are skipped; the counts are in `stats` and in the log.

    Args:
        tokenizer: a `keras_bert.BertTokenizer` (anything with its
            interface: called on a string tensor it returns ragged ids, and
            it has `vocabulary`, `cls_token_id`, `sep_token_id`,
            `mask_token_id`).
        max_seq_length: int. Length of `[CLS] A [SEP] B [SEP]`, at least 5.
            Defaults to `128`.
        max_predictions_per_seq: int. Defaults to `20`.
        masked_lm_prob: float. Defaults to `0.15`.
        short_seq_prob: float. Probability of a shorter target length.
            Defaults to `0.1`.
        dupe_factor: int. Passes over the data. Defaults to `10`.
        do_whole_word_mask: bool. Mask whole words. Defaults to `False`.
        random_seed: int. Defaults to `12345`.
        documents_per_chunk: int. Documents held in memory at once.
            Defaults to `2000`.

    Example:
    ```python
    tokenizer = keras_bert.BertTokenizer("vocab.txt")
    creator = PretrainingInstanceCreator(tokenizer, max_seq_length=64,
                                         dupe_factor=1)
    documents = [["The cat sat.", "It purred."], ["Rain fell.", "Cold."]]
    instances = list(creator.create_instances(documents))
    ```
    """

    def __init__(
        self,
        tokenizer,
        max_seq_length=128,
        max_predictions_per_seq=20,
        masked_lm_prob=0.15,
        short_seq_prob=0.1,
        dupe_factor=10,
        do_whole_word_mask=False,
        random_seed=12345,
        documents_per_chunk=2000,
    ):
        _check_positive_int("max_seq_length", max_seq_length, minimum=5)
        _check_positive_int("max_predictions_per_seq", max_predictions_per_seq)
        _check_positive_int("dupe_factor", dupe_factor)
        _check_positive_int("documents_per_chunk", documents_per_chunk, 2)
        _check_probability("masked_lm_prob", masked_lm_prob)
        _check_probability("short_seq_prob", short_seq_prob)
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.masked_lm_prob = masked_lm_prob
        self.short_seq_prob = short_seq_prob
        self.dupe_factor = dupe_factor
        self.do_whole_word_mask = do_whole_word_mask
        self.random_seed = random_seed
        self.documents_per_chunk = documents_per_chunk

        vocabulary = list(tokenizer.vocabulary)
        self._cls_id = int(tokenizer.cls_token_id)
        self._sep_id = int(tokenizer.sep_token_id)
        self._mask_id = int(tokenizer.mask_token_id)
        self._never_masked = set(masking.never_masked_ids(vocabulary))
        self._never_masked.update((self._cls_id, self._sep_id))
        self._replacements = masking.replacement_ids(vocabulary)
        self._is_continuation = (
            masking.continuation_flags(vocabulary)
            if do_whole_word_mask
            else None
        )
        self.stats = collections.Counter()

    # --- tokenization ---------------------------------------------------

    def _tokenize(self, documents):
        """Lists of sentences → lists of non-empty WordPiece id lists."""
        lines = [sentence for document in documents for sentence in document]
        ids = []
        for start in range(0, len(lines), 1024):
            batch = tf.constant(lines[start : start + 1024], dtype=tf.string)
            ids.extend(self.tokenizer(batch).to_list())
        tokenized, cursor = [], 0
        max_num_tokens = self.max_seq_length - 3
        for document in documents:
            sentences = [s for s in ids[cursor : cursor + len(document)] if s]
            cursor += len(document)
            self.stats["long_sentences"] += sum(
                len(s) > max_num_tokens for s in sentences
            )
            if len(sentences) < 2:
                self.stats["one_sentence_documents"] += 1
                continue
            tokenized.append(sentences)
        return tokenized

    # --- instances --------------------------------------------------------

    def create_instances(self, documents, rng=None, apply_masking=True):
        """Yields `PretrainingInstance`s from a stream of documents.

        Args:
            documents: an iterable of documents, each a list of sentences
                (str), e.g. from `keras_bert.data.read_documents`. It is
                consumed lazily, `documents_per_chunk` at a time.
            rng: `random.Random` or `None` (a fresh one seeded with
                `random_seed`).
            apply_masking: bool. `False` gives unmasked pairs (no
                predictions), for masking later in `tf.data`. Defaults to
                `True`.

        Yields:
            `PretrainingInstance`s, shuffled within each chunk.
        """
        rng = random.Random(self.random_seed) if rng is None else rng
        buffer, num_usable = [], 0
        for document in documents:
            buffer.append(document)
            if len(buffer) == 2 * self.documents_per_chunk:
                chunk = self._tokenize(buffer[: self.documents_per_chunk])
                buffer = buffer[self.documents_per_chunk :]
                yield from self._chunk_instances(
                    chunk, num_usable, rng, apply_masking
                )
                num_usable += len(chunk)
        if buffer:
            chunk = self._tokenize(buffer)
            yield from self._chunk_instances(
                chunk, num_usable, rng, apply_masking
            )
            num_usable += len(chunk)
        if num_usable < 2:
            raise ValueError(
                "Next-sentence prediction needs at least two documents with "
                "two or more sentences each, but the input had "
                f"{num_usable}. Add documents, or for the 'sentences' format "
                "separate documents by a blank line."
            )

    def _chunk_instances(self, documents, first_index, rng, apply_masking):
        self.stats["usable_documents"] += len(documents)
        if len(documents) < 2:
            return
        offsets = [np.cumsum([0] + [len(s) for s in d]) for d in documents]
        streams = [[t for s in d for t in s] for d in documents]
        corpus = (documents, offsets, streams, apply_masking)
        instances = []
        for _ in range(self.dupe_factor):
            for index in range(len(documents)):
                instances.extend(
                    self._document_instances(corpus, index, first_index, rng)
                )
        rng.shuffle(instances)
        self.stats["instances"] += len(instances)
        yield from instances

    def _document_instances(self, corpus, index, first_index, rng):
        document = corpus[0][index]
        max_num_tokens = self.max_seq_length - 3
        target_length = max_num_tokens
        if rng.random() < self.short_seq_prob:
            target_length = rng.randint(2, max_num_tokens)

        chunk, chunk_length, i = [], 0, 0
        while i < len(document):
            chunk.append(i)
            chunk_length += len(document[i])
            if i == len(document) - 1 or chunk_length >= target_length:
                instance, unused = self._pair(
                    corpus, index, first_index, chunk, target_length, rng
                )
                if instance is not None:
                    yield instance
                i -= unused
                chunk, chunk_length = [], 0
            i += 1

    def _pair(self, corpus, index, first_index, chunk, target, rng):
        """Makes one instance from a chunk; returns it and the number of
        sentences to put back."""
        documents, offsets, streams, apply_masking = corpus
        document_offsets = offsets[index]
        is_random_next = rng.random() < 0.5
        a_start = int(document_offsets[chunk[0]])
        chunk_end = int(document_offsets[chunk[-1] + 1])
        if len(chunk) >= 2:
            a_sentences = rng.randint(1, len(chunk) - 1)
            a_end = int(document_offsets[chunk[a_sentences]])
        elif is_random_next:
            a_sentences, a_end = 1, chunk_end
        elif chunk_end - a_start >= 2:
            # A single sentence: its continuation is the rest of it.
            a_sentences = 1
            a_end = rng.randint(a_start + 1, chunk_end - 1)
        else:
            self.stats["skipped_one_token_chunks"] += 1
            return None, 0

        unused = 0
        if is_random_next:
            b_index = rng.randrange(len(documents) - 1)
            b_index += b_index >= index  # any document but this one
            b_document = documents[b_index]
            b_offsets = offsets[b_index]
            first = rng.randrange(len(b_document))
            last = first
            target_b = target - (a_end - a_start)
            while (
                last + 1 < len(b_document)
                and b_offsets[last + 1] - b_offsets[first] < target_b
            ):
                last += 1
            b_span = [int(b_offsets[first]), int(b_offsets[last + 1])]
            unused = len(chunk) - a_sentences
        else:
            b_index = index
            b_span = [a_end, chunk_end]

        cut_a, cut_b = _truncation(
            a_end - a_start, b_span[1] - b_span[0], self.max_seq_length - 3
        )
        a_start += cut_a
        b_span[1] -= cut_b
        tokens_a = streams[index][a_start:a_end]
        tokens_b = streams[b_index][b_span[0] : b_span[1]]
        token_ids = [self._cls_id, *tokens_a, self._sep_id, *tokens_b]
        token_ids.append(self._sep_id)
        segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
        masked, positions, labels = token_ids, [], []
        if apply_masking:
            masked, positions, labels = masking.create_masked_lm_predictions(
                token_ids,
                rng,
                masked_lm_prob=self.masked_lm_prob,
                max_predictions_per_seq=self.max_predictions_per_seq,
                never_masked=self._never_masked,
                mask_token_id=self._mask_id,
                replacements=self._replacements,
                is_continuation=self._is_continuation,
            )
        instance = PretrainingInstance(
            token_ids=tuple(masked),
            segment_ids=tuple(segment_ids),
            masked_lm_positions=tuple(positions),
            masked_lm_ids=tuple(labels),
            is_random_next=is_random_next,
            a_document=first_index + index,
            a_span=(a_start, a_end),
            b_document=first_index + b_index,
            b_span=tuple(b_span),
        )
        return instance, unused

    def log_stats(self):
        """Logs what was created and what was skipped, and why."""
        stats = self.stats
        logging.info(
            "Created %d instances from %d usable documents. Skipped: %d "
            "documents with fewer than two sentences, %d one-token chunks. "
            "%d sentences longer than max_seq_length - 3 were truncated.",
            stats["instances"],
            stats["usable_documents"],
            stats["one_sentence_documents"],
            stats["skipped_one_token_chunks"],
            stats["long_sentences"],
        )
