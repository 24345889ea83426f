"""Entity tag schemes (IOB1, IOB2, IOBES): valid tags, their entity types
and the IOB2 label set a tagger predicts.

Pure Python, below the models: `BertTokenClassifier.fit` on words infers
its labels with `label_list`, as `recipes/ner.py`'s CoNLL reader does.
"""

SCHEMES = ("iob1", "iob2", "iobes")
PREFIXES = {"iob1": "BI", "iob2": "BI", "iobes": "BIES"}


def check_scheme(value, name, extra=""):
    if value not in SCHEMES:
        raise ValueError(
            f'`{name}` must be "iob1", "iob2" or "iobes"{extra}. Received: '
            f"{name}={value!r}"
        )


def is_valid_tag(tag, scheme):
    return tag == "O" or (
        isinstance(tag, str)
        and len(tag) > 2
        and tag[1] == "-"
        and tag[0] in PREFIXES[scheme]
    )


def bad_tag_message(tag, scheme, how=""):
    prefixes = ", ".join(f"{p}-" for p in PREFIXES[scheme])
    return (
        f"Invalid {scheme.upper()} tag {tag!r} (scheme {scheme!r}{how}): "
        f"expected 'O' or a prefix "
        f"{prefixes} followed by an entity type, e.g. 'B-PER'."
    )


def entity_types(tag_sequences):
    """The entity types of some tag sequences, sorted.

    Args:
        tag_sequences: list of sentences, each a list of tags in any scheme.

    Returns:
        A sorted list of str.

    Example:
    >>> entity_types([["B-PER", "I-PER", "O"], ["S-LOC", "B-MISC"]])
    ['LOC', 'MISC', 'PER']
    """
    types = set()
    for sentence in tag_sequences:
        for tag in sentence:
            if tag == "O":
                continue
            if not is_valid_tag(tag, "iobes"):
                raise ValueError(bad_tag_message(tag, "iobes"))
            types.add(tag[2:])
    return sorted(types)


def label_list(tag_sequences):
    """The IOB2 label set of a classifier: `"O"`, then `B-`, `I-` per type.

    Build it from the training file, so that the class indices do not
    depend on which types a smaller file happens to hold.

    Args:
        tag_sequences: list of sentences, each a list of tags in any scheme.

    Returns:
        A list of str: `"O"`, then `B-<type>` and `I-<type>` for each type
        in sorted order.

    Example:
    >>> label_list([["I-PER", "O", "I-LOC"]])
    ['O', 'B-LOC', 'I-LOC', 'B-PER', 'I-PER']
    """
    labels = ["O"]
    for entity_type in entity_types(tag_sequences):
        labels += [f"B-{entity_type}", f"I-{entity_type}"]
    return labels
