"""Entity-level NER scores, with the chunk rules of `conlleval`.

An entity counts as correct only when its type and both of its boundaries
match a gold entity, as in the CoNLL-2000/2003 evaluation script
`conlleval.pl` (Tjong Kim Sang) and in `seqeval`'s default mode, so that the
numbers are comparable with published ones.

Chunks are read from the tags with `conlleval`'s `startOfChunk` and
`endOfChunk` rules, which accept IOB1, IOB2 and IOBES alike and never reject
an ill-formed sequence: an `I-X` after `O` or after another type starts an
entity, an `E-X` or `S-X` closes one, and a change of type ends one.
"""

import collections

_PREFIXES = ("B", "I", "E", "S")


def get_entities(tags):
    """The entities of one sentence, read as `conlleval` reads them.

    In Python; the graph twin is the chunking in
    `keras_bert.decoding.entities.entities_from_windows`.

    Args:
        tags: list of str. One tag per token: `"O"` or `<prefix>-<type>`
            with prefix `B`, `I`, `E` or `S` (IOB1, IOB2 or IOBES).

    Returns:
        A list of `(type, start, end)` tuples in order, `end` inclusive
        (token indices).

    Example:
    >>> get_entities(["I-PER", "I-PER", "O", "I-LOC", "B-LOC"])
    [('PER', 0, 1), ('LOC', 3, 3), ('LOC', 4, 4)]
    """
    entities = []
    previous_prefix, previous_type = "O", ""
    start = 0
    # A final "O" closes an entity that runs to the end of the sentence.
    for index, tag in enumerate([*tags, "O"]):
        prefix, entity_type = _split_tag(tag, index)
        # conlleval's endOfChunk: an entity ends before this token.
        if previous_prefix != "O" and (
            previous_prefix in "ES"
            or prefix in "BSO"
            or previous_type != entity_type
        ):
            entities.append((previous_type, start, index - 1))
        # conlleval's startOfChunk: an entity starts at this token.
        if prefix != "O" and (
            prefix in "BS"
            or previous_prefix in "ESO"
            or previous_type != entity_type
        ):
            start = index
        previous_prefix, previous_type = prefix, entity_type
    return entities


def entity_scores(gold_sequences, predicted_sequences):
    """Entity-level precision, recall and F1 over a corpus, as `conlleval`.

    Scores are micro-averaged over all entities of all sentences; an
    undefined ratio (no predicted or no gold entity) is `0.0`, as `seqeval`
    with `zero_division=0`.

    Args:
        gold_sequences: list of sentences, each a list of gold tags.
        predicted_sequences: list of sentences, each a list of predicted
            tags, as long as the gold sentence. Both may use any of IOB1,
            IOB2 and IOBES (see `get_entities`).

    Returns:
        A dict of plain Python numbers (JSON-ready): `precision`, `recall`,
        `f1` (fractions in `[0, 1]`), `accuracy` (the fraction of tokens
        whose tag is right, `O` included), `num_gold`, `num_predicted`,
        `num_correct` (entity counts) and `per_type`: for each entity type
        in the gold or predicted tags, sorted, a dict with `precision`,
        `recall`, `f1`, `support` (its number of gold entities),
        `num_predicted` and `num_correct`.

    Example:
    >>> gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    >>> predicted = [["B-PER", "I-PER", "O", "B-ORG"]]
    >>> scores = entity_scores(gold, predicted)
    >>> scores["precision"], scores["recall"], scores["accuracy"]
    (0.5, 0.5, 0.75)
    """
    gold_sequences = list(gold_sequences)
    predicted_sequences = list(predicted_sequences)
    if len(gold_sequences) != len(predicted_sequences):
        raise ValueError(
            "Expected one predicted tag sequence per gold sentence. Received: "
            f"{len(gold_sequences)} gold and {len(predicted_sequences)} "
            "predicted sentences."
        )
    num_gold = collections.Counter()
    num_predicted = collections.Counter()
    num_correct = collections.Counter()
    num_tokens = num_right_tokens = 0
    for index, (gold, predicted) in enumerate(
        zip(gold_sequences, predicted_sequences)
    ):
        gold, predicted = list(gold), list(predicted)
        if len(gold) != len(predicted):
            raise ValueError(
                f"Sentence {index} has {len(gold)} gold tags but "
                f"{len(predicted)} predicted tags; predict exactly one tag "
                "per token (map sub-word predictions back to words first)."
            )
        num_tokens += len(gold)
        num_right_tokens += sum(g == p for g, p in zip(gold, predicted))
        gold_entities = set(_entities_of(gold, index, "gold"))
        predicted_entities = set(_entities_of(predicted, index, "predicted"))
        num_gold.update(entity[0] for entity in gold_entities)
        num_predicted.update(entity[0] for entity in predicted_entities)
        num_correct.update(
            entity[0] for entity in gold_entities & predicted_entities
        )

    scores = _scores(
        sum(num_gold.values()),
        sum(num_predicted.values()),
        sum(num_correct.values()),
    )
    scores["accuracy"] = num_right_tokens / num_tokens if num_tokens else 0.0
    scores["per_type"] = {}
    for entity_type in sorted(set(num_gold) | set(num_predicted)):
        type_scores = _scores(
            num_gold[entity_type],
            num_predicted[entity_type],
            num_correct[entity_type],
        )
        scores["per_type"][entity_type] = {
            "precision": type_scores["precision"],
            "recall": type_scores["recall"],
            "f1": type_scores["f1"],
            "support": type_scores["num_gold"],
            "num_predicted": type_scores["num_predicted"],
            "num_correct": type_scores["num_correct"],
        }
    return scores


def _scores(num_gold, num_predicted, num_correct):
    precision = num_correct / num_predicted if num_predicted else 0.0
    recall = num_correct / num_gold if num_gold else 0.0
    # Same float operations as seqeval, so the two agree to the last bit.
    denominator = precision + recall
    f1 = 2 * precision * recall / denominator if denominator else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "num_gold": num_gold,
        "num_predicted": num_predicted,
        "num_correct": num_correct,
    }


def _entities_of(tags, sentence_index, side):
    try:
        return get_entities(tags)
    except ValueError as error:
        raise ValueError(
            f"In {side} sentence {sentence_index}: {error}"
        ) from None


def _split_tag(tag, index):
    """`("O", "")` for `"O"`, `(prefix, type)` for `"B-PER"` and the like."""
    if tag == "O":
        return "O", ""
    if (
        isinstance(tag, str)
        and len(tag) > 2
        and tag[1] == "-"
        and tag[0] in _PREFIXES
    ):
        return tag[0], tag[2:]
    raise ValueError(
        f"Invalid tag {tag!r} at token {index}: expected 'O' or a prefix "
        "B-, I-, E- or S- followed by an entity type, e.g. 'B-PER'. Map "
        "other labels (padding, ignored positions) to 'O' or drop them "
        "before scoring."
    )
