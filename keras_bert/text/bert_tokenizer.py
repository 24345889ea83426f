"""BERT's WordPiece tokenizer as a Keras layer of TensorFlow ops."""

import os

import keras
import tensorflow as tf
from absl import logging

from keras_bert import files
from keras_bert.keras_workarounds import keep_string_inputs
from keras_bert.text import eager_chunks
from keras_bert.text import tokenizer_json
from keras_bert.text import vocabulary as vocabulary_lib
from keras_bert.text.basic_tokenizer import BasicTokenizer
from keras_bert.text.eager_chunks import is_long_string_list
from keras_bert.text.wordpiece import WordPiece
from keras_bert.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenizer(keras.layers.Layer):
    """BERT's tokenizer: basic tokenization, then greedy WordPiece.

    Turns raw strings into token ids exactly as Hugging Face's
    `BertTokenizerFast` (the Rust `tokenizers` library) does with the same
    `vocab.txt`: clean the text (drop control, format and private-use
    characters, map every kind of whitespace to a space), put spaces around
    CJK ideographs, optionally strip accents and lower-case, split on
    whitespace and punctuation, then split each word into the longest
    vocabulary pieces from the left (`##` marks a piece that continues a
    word). A word that cannot be split, or that is longer than
    `max_input_chars_per_word` characters, becomes `[UNK]`. Special tokens
    written in the text (e.g. `"[MASK]"`) map to their ids, as in Hugging
    Face. `tokenize_with_offsets` also gives each token's span in the
    original text.

    Everything runs as batched TensorFlow and tensorflow-text ops, so the
    layer works eagerly, in `tf.data.Dataset.map` and in a SavedModel.
    Strings that are not valid UTF-8 are decoded with each invalid sequence
    replaced by U+FFFD, which text cleaning then drops, exactly as Hugging
    Face treats `bytes.decode("utf-8", "replace")`.

    Args:
        vocabulary: list of str, or str. The WordPiece vocabulary, one token
            per id, or the path of a `vocab.txt` with one token per line.
        lowercase: bool. Lower-case the text (an "uncased" model). Defaults
            to `True`.
        strip_accents: bool or None. Decompose characters and drop their
            accents (non-spacing marks). `None` follows `lowercase`, as in
            BERT. Defaults to `None`.
        max_input_chars_per_word: int. Longer words become `[UNK]`.
            Defaults to `100`, as Hugging Face (original BERT used 200).
        special_tokens_in_strings: bool. Map special tokens written in the
            text to their ids rather than splitting them as words. Defaults
            to `True`, as Hugging Face.
        unk_token, cls_token, sep_token, pad_token, mask_token: str. The
            special tokens; each must be in the vocabulary. Default to
            `"[UNK]"`, `"[CLS]"`, `"[SEP]"`, `"[PAD]"` and `"[MASK]"`.

    Call arguments:
        inputs: a string, or a string tensor, list or array of any rank.

    Returns:
        For one string, an int32 tensor `(num_tokens,)`; for a batch of
        shape `(batch_size, ...)`, an int32 `tf.RaggedTensor`
        `(batch_size, ..., (num_tokens))`.

    Example:

    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "the", "quick", "brown", "fox", "##es", "."]
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    tokenizer(["The quick brown foxes.", "Tȟe fox!"])
    # <tf.RaggedTensor [[5, 6, 7, 8, 9, 10], [5, 8, 1]]>
    tokenizer.detokenize([5, 8, 9])  # b"the foxes"
    ```

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805)
        - [Song et al., 2021](https://arxiv.org/abs/2012.15524) (the linear
          WordPiece algorithm of tensorflow-text)
    """

    def __init__(
        self,
        vocabulary,
        lowercase=True,
        strip_accents=None,
        max_input_chars_per_word=100,
        special_tokens_in_strings=True,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        **kwargs,
    ):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        keep_string_inputs(self)
        self.built = True

        if isinstance(vocabulary, str):
            vocabulary = vocabulary_lib.load_vocabulary(vocabulary)
        # Out of Keras' tracking, which would wrap a list or dict attribute
        # and visit each of its strings: 0.67 of the 0.89 s that building
        # a 30,522-token tokenizer took (a fresh model's load).
        self._lookup = _Lookup(vocabulary_lib.check_vocabulary(vocabulary))
        check_positive_int("max_input_chars_per_word", max_input_chars_per_word)
        self.lowercase = bool(lowercase)
        self.strip_accents = strip_accents
        self.max_input_chars_per_word = max_input_chars_per_word
        self.special_tokens_in_strings = bool(special_tokens_in_strings)
        self.unk_token = unk_token
        self.cls_token = cls_token
        self.sep_token = sep_token
        self.pad_token = pad_token
        self.mask_token = mask_token

        self.unk_token_id = self.token_to_id(unk_token)
        self.cls_token_id = self.token_to_id(cls_token)
        self.sep_token_id = self.token_to_id(sep_token)
        self.pad_token_id = self.token_to_id(pad_token)
        self.mask_token_id = self.token_to_id(mask_token)
        self.special_tokens = [
            pad_token, unk_token, cls_token, sep_token, mask_token
        ]  # fmt: skip

        do_strip = self.lowercase if strip_accents is None else strip_accents
        special_in_strings = (
            self.special_tokens if self.special_tokens_in_strings else ()
        )
        self._basic_tokenizer = BasicTokenizer(
            lowercase=self.lowercase,
            strip_accents=bool(do_strip),
            special_tokens=special_in_strings,
        )
        self._wordpiece = WordPiece(
            self.vocabulary,
            unk_token=unk_token,
            max_input_chars_per_word=max_input_chars_per_word,
            special_tokens=special_in_strings,
        )
        # A plain object: neither Keras nor SavedModel should track these.
        self._compiled = EagerFunctions()

    # --- Vocabulary ---------------------------------------------------------

    @property
    def vocabulary(self):
        """The vocabulary: a list of str, indexed by id."""
        return self._lookup.vocabulary

    def vocabulary_size(self):
        """Number of tokens in the vocabulary."""
        return len(self.vocabulary)

    def get_vocabulary(self):
        """The vocabulary as a list of str, indexed by id."""
        return list(self.vocabulary)

    def token_to_id(self, token):
        """Id of `token`; raises `ValueError` if it is not in the vocabulary."""
        if token not in self._lookup.token_ids:
            raise ValueError(
                f"Token {token!r} is not in the vocabulary (size "
                f"{len(self.vocabulary)}). Check the spelling and casing, or "
                "use a vocabulary that contains it."
            )
        return self._lookup.token_ids[token]

    def id_to_token(self, id):
        """Token of `id`; raises `ValueError` if it is out of range."""
        if not 0 <= int(id) < len(self.vocabulary):
            raise ValueError(
                f"Id {id} is out of range for a vocabulary of size "
                f"{len(self.vocabulary)}: expected 0 <= id < "
                f"{len(self.vocabulary)}."
            )
        return self.vocabulary[int(id)]

    def save_vocabulary(self, directory):
        """Writes `directory/vocab.txt`; returns its path."""
        path = files.join(directory, "vocab.txt")
        vocabulary_lib.save_vocabulary(self.vocabulary, path)
        return path

    # --- Tokenizing ---------------------------------------------------------

    def tokenize_with_offsets(self, inputs):
        """Tokenizes, and says where in the text each token comes from.

        The ids are those of `tokenizer(inputs)`. Each token also gets the
        span `[start, end)` of the original string it was made from, in
        Unicode code points (Python `str` indexing, `text[start:end]`),
        exactly as Hugging Face's `offset_mapping`: lower-casing, accent
        stripping, text cleaning and special tokens written in the text do
        not shift it. A WordPiece continuation (`##...`) spans its own
        characters; a word that becomes `[UNK]` and a special token span the
        whole word or token; characters dropped by cleaning or accent
        stripping are inside a span only when kept characters surround them.
        For bytes that are not valid UTF-8, offsets count the code points
        of the string decoded with U+FFFD for each invalid sequence (Python's
        `bytes.decode("utf-8", "replace")`).

        Runs as TensorFlow ops, like the layer: eagerly, in
        `tf.data.Dataset.map` and in a SavedModel.

        Args:
            inputs: a string, or a string tensor, list or array of any rank.

        Returns:
            A tuple `(token_ids, starts, ends)`: int32 ids and int64
            offsets. For one string each is a tensor `(num_tokens,)`; for a
            batch `(batch_size, ...)` each is a `tf.RaggedTensor`
            `(batch_size, ..., (num_tokens))`.

        Example:

        ```python
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                      "the", "fox", "##es", "."]
        tokenizer = keras_bert.BertTokenizer(vocabulary)
        text = "The Foxes [MASK]."
        ids, starts, ends = tokenizer.tokenize_with_offsets(text)
        # ids: [5, 6, 7, 4, 8]; starts: [0, 4, 7, 10, 16];
        # ends: [3, 7, 9, 16, 17]
        [text[s:e] for s, e in zip(starts.numpy(), ends.numpy())]
        # ["The", "Fox", "es", "[MASK]", "."]
        ```
        """
        return self._apply(inputs, with_offsets=True)

    def tokenize_batch(self, strings):
        """Tokenizes a 1-D string tensor into `(batch_size, (num_tokens))`."""
        return self._wordpiece.tokenize(*self._basic_tokenizer.split(strings))

    def tokenize_batch_with_offsets(self, strings):
        """`tokenize_with_offsets` of a 1-D string tensor."""
        return self._wordpiece.tokenize_with_offsets(
            *self._basic_tokenizer.split_with_offsets(strings)
        )

    def __call__(self, inputs, *args, **kwargs):
        if is_long_string_list(inputs) and not args and not kwargs:
            # Keras' __call__ would first turn the list into one NumPy
            # array of fixed-width strings: every line as wide as the
            # longest.
            return self.call(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        return self._apply(inputs, with_offsets=False)

    def _apply(self, inputs, with_offsets):
        if is_long_string_list(inputs):
            # A Python list of many strings, converted a chunk at a time.
            return eager_chunks.concat_chunks(
                lambda chunk: self._apply(chunk, with_offsets), inputs
            )
        inputs = to_string_tensor(inputs)
        rank = inputs.shape.rank
        if rank is None:
            raise ValueError(
                "BertTokenizer needs inputs of known rank; received a string "
                "tensor of unknown rank. Give the tf.function or dataset an "
                "input signature such as tf.TensorSpec([None], tf.string)."
            )
        if rank <= 1:
            return self._tokenize(inputs, with_offsets)
        outer_shape = tf.shape(inputs, out_type=tf.int64)
        outputs = self._tokenize(tf.reshape(inputs, [-1]), with_offsets)

        def restore_shape(tokens):
            for axis in range(rank - 1, 0, -1):
                tokens = tf.RaggedTensor.from_uniform_row_length(
                    tokens, outer_shape[axis]
                )
            return tokens

        return tf.nest.map_structure(restore_shape, outputs)

    def _tokenize(self, strings, with_offsets):
        rank = strings.shape.rank
        if with_offsets:
            batch_function = self.tokenize_batch_with_offsets
        else:
            batch_function = self.tokenize_batch

        def tokenize_one(string):
            outputs = batch_function(string[tf.newaxis])
            return tf.nest.map_structure(lambda x: x[0], outputs)

        function = batch_function if rank else tokenize_one
        if not tf.executing_eagerly():
            return function(strings)
        # Eagerly, one compiled function call beats ~60 op dispatches.
        functions = self._compiled.functions
        key = (rank, with_offsets)
        if key not in functions:
            functions[key] = tf.function(
                function,
                input_signature=[tf.TensorSpec([None] * rank, tf.string)],
            )
        return eager_chunks.eager_in_chunks(functions[key], strings)

    def detokenize(self, ids):
        """Turns ids back into text: pieces joined by spaces, `##` glued.

        This is the Hugging Face WordPiece decoder without its clean-up of
        spaces before punctuation. Lower-casing, accents and split
        punctuation are not undone.

        Args:
            ids: int tensor, list or `tf.RaggedTensor`, `(num_tokens,)` or
                `(batch_size, (num_tokens))`.

        Returns:
            A string scalar for one sequence, or strings `(batch_size,)`.
        """
        if not isinstance(ids, (tf.Tensor, tf.RaggedTensor)):
            ids = tf.ragged.constant(ids, dtype=tf.int32)
            if isinstance(ids, tf.RaggedTensor) and ids.ragged_rank == 0:
                ids = ids.flat_values
        functions = self._compiled.functions
        if not tf.executing_eagerly():
            vocabulary = tf.constant(self.vocabulary)
        else:  # build the 30k-string constant once, not per call
            if "vocabulary" not in functions:
                functions["vocabulary"] = tf.constant(self.vocabulary)
            vocabulary = functions["vocabulary"]
        tokens = tf.gather(vocabulary, ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    # --- Serialisation -------------------------------------------------------

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary=list(self.vocabulary),
            lowercase=self.lowercase,
            strip_accents=self.strip_accents,
            max_input_chars_per_word=self.max_input_chars_per_word,
            special_tokens_in_strings=self.special_tokens_in_strings,
            unk_token=self.unk_token,
            cls_token=self.cls_token,
            sep_token=self.sep_token,
            pad_token=self.pad_token,
            mask_token=self.mask_token,
        )
        return config

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (None,)

    @classmethod
    def from_checkpoint(cls, path, lowercase=None, **kwargs):
        """Builds the tokenizer of a Hugging Face or Google BERT checkpoint.

        Reads the WordPiece vocabulary from `path/vocab.txt`, or, where
        there is none (`transformers` 5's `save_pretrained` writes none),
        from Hugging Face's `path/tokenizer.json`: its `model` (of type
        `WordPiece`) gives the tokens by id, `unk_token` and
        `max_input_chars_per_word`; another model type (BPE, Unigram) or a
        subword prefix other than `##` is refused with a `ValueError`.
        The casing comes from, in order: the `lowercase` argument; Hugging
        Face's `tokenizer.json` normaliser or `tokenizer_config.json`
        `do_lower_case`; for an original Google directory
        (`bert_config.json`), "uncased"/"cased" in the directory name (the
        repo name for a Hub id); else the vocabulary (cased when many
        tokens hold capitals). Without a tokenizer config, a vocabulary
        whose letters are upper case only (AntiBERTy's amino acids) is
        cased before any name is read: lowercased text would match none of
        its letters. One log line says what was read, what was decided and
        why. A keras-hub preset directory (or `kaggle://` handle) gives its
        `assets/tokenizer/vocabulary.txt` and the settings of its
        `tokenizer.json` (`lowercase`, `strip_accents`,
        `special_tokens_in_strings`), so the ids are keras-hub's.

        Args:
            path: str. The checkpoint directory (or a file in it, such
                as its `vocab.txt` or `tokenizer.json`), or a Hugging Face
                Hub id (`google-bert/bert-base-uncased`,
                `hf://org/name@revision`) or trained preset name
                (`bert_base_en_uncased`), whose vocabulary and tokenizer
                config are fetched into `huggingface_hub`'s cache; see
                `keras_bert.checkpoints.hub`.
            lowercase: bool or None. Overrides the casing found in `path`.
            **kwargs: other `BertTokenizer` arguments; they override what
                `path` sets.

        Example:
        ```python
        keras_bert.BertTokenizer(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"]
        ).save_vocabulary("tiny_bert")
        tokenizer = keras_bert.BertTokenizer.from_checkpoint("tiny_bert")
        tokenizer(["Hello"]).to_list()  # [[5]]
        ```
        """
        from keras_bert.checkpoints.hub import parse_hub_id
        from keras_bert.checkpoints.hub import preset_hint
        from keras_bert.checkpoints.hub import resolve_checkpoint
        from keras_bert.checkpoints.keras_hub_tokenizer import (
            keras_hub_tokenizer_arguments,
        )

        # A Hub id first: the checks below need a local directory.
        name = None
        hub_id = parse_hub_id(path)
        if hub_id is not None:
            name = hub_id[0].rsplit("/", 1)[-1]  # "bert-base-uncased"
            path = resolve_checkpoint(path, weights=False)
        keras_hub_tokenizer = keras_hub_tokenizer_arguments(path)
        if keras_hub_tokenizer is not None:
            vocabulary, arguments = keras_hub_tokenizer
            if lowercase is not None:
                arguments["lowercase"] = bool(lowercase)
            return cls(vocabulary, **{**arguments, **kwargs})

        path = os.fspath(path)
        if not files.exists(path):  # not its parent's "no vocab.txt"
            raise FileNotFoundError(
                f"Checkpoint path {path!r} does not exist. Pass a Hugging "
                "Face or Google BERT checkpoint directory (or its "
                f"vocab.txt).{preset_hint(path)}"
            )
        directory = path if files.isdir(path) else os.path.dirname(path)
        vocab_path = files.join(directory, "vocab.txt")
        json_path = files.join(directory, "tokenizer.json")
        if files.exists(vocab_path):
            vocabulary = vocabulary_lib.load_vocabulary(vocab_path)
            arguments, read = {}, "vocab.txt"
        elif files.exists(json_path):
            # What transformers 5 saves: no vocab.txt.
            vocabulary, arguments = tokenizer_json.read_wordpiece(json_path)
            read = "tokenizer.json"
        else:
            raise FileNotFoundError(
                f"No vocab.txt or tokenizer.json in {directory!r}. Pass the "
                "directory of a Hugging Face or Google BERT checkpoint, "
                "which holds the WordPiece vocabulary as vocab.txt or "
                "tokenizer.json."
            )
        casing, source = vocabulary_lib.read_casing(
            directory, vocabulary, name=name
        )
        if lowercase is not None:
            casing["lowercase"] = bool(lowercase)
            source = "the lowercase argument"
        arguments = {**arguments, **casing, **kwargs}
        logging.info(
            "Tokenizer of %s (%s): lowercase=%s (%s).",
            directory,
            read,
            arguments["lowercase"],
            source,
        )
        return cls(vocabulary, **arguments)


class _Lookup:
    """The vocabulary and each token's id, out of Keras' tracking."""

    def __init__(self, vocabulary):
        self.vocabulary = vocabulary
        self.token_ids = {token: i for i, token in enumerate(vocabulary)}


class EagerFunctions:
    """Holds compiled functions for eager calls, out of Keras' tracking."""

    def __init__(self):
        self.functions = {}


def to_string_tensor(inputs):
    """`inputs` (strings: a list, an array or a dense `tf.Tensor`) as a
    string `tf.Tensor`; a clear error for ragged or non-string inputs."""
    if isinstance(inputs, tf.RaggedTensor):
        raise ValueError(
            "BertTokenizer takes dense strings; received a tf.RaggedTensor. "
            "Pass its flat_values and rebuild the ragged shape afterwards."
        )
    if not isinstance(inputs, tf.Tensor):
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
    if inputs.dtype != tf.string:
        raise ValueError(
            f"BertTokenizer takes strings; received a tensor of dtype "
            f"{inputs.dtype.name}. Tokenize text, not ids."
        )
    return inputs
