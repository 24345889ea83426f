"""Learns an uncased WordPiece vocabulary from the training corpus.

Usage: python build_vocab.py OUTPUT_VOCAB SIZE GLOB[,GLOB...]
"""

import sys

from keras_bert.data import expand_input_files
from keras_bert.data import read_documents
from keras_bert.text.vocabulary import build_vocabulary
from keras_bert.text.vocabulary import save_vocabulary


def main(output, size, input_file):
    files = expand_input_files(input_file)
    sentences = [
        sentence
        for document in read_documents(files, input_format="text")
        for sentence in document
    ]
    vocabulary = build_vocabulary(sentences, int(size), reserved_tokens=10)
    save_vocabulary(vocabulary, output)
    print(
        f"{len(files)} files, {len(sentences)} sentences -> {output}: "
        f"{len(vocabulary)} tokens"
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
