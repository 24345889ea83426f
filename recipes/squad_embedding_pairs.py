r"""Writes SQuAD's questions and their paragraphs as embedding pairs.

    python recipes/squad_embedding_pairs.py \
        --squad_file=squad/train.json --output=/tmp/pairs/train.jsonl
    python recipes/squad_embedding_pairs.py \
        --squad_file=squad/dev.json --output=/tmp/pairs/dev.jsonl

Each line of `--output` is `{"anchor": question, "positive": paragraph}`,
what `recipes/embeddings.py --train_file` and `--retrieval_file` read (as
a retrieval set, every distinct paragraph is the corpus). Write it
outside the repository.
"""

from absl import app
from absl import flags

from keras_bert.fine_tuning.embeddings import squad_question_paragraph_pairs
from keras_bert.fine_tuning.embeddings import write_pairs_jsonl

flags.DEFINE_string("squad_file", None, "A SQuAD v1.1 / v2.0 JSON file.")
flags.DEFINE_string("output", None, "The JSONL file to write.")
flags.mark_flags_as_required(["squad_file", "output"])
FLAGS = flags.FLAGS


def main(argv):
    del argv
    pairs = squad_question_paragraph_pairs(FLAGS.squad_file)
    count = write_pairs_jsonl(pairs, FLAGS.output)
    paragraphs = len({paragraph for _, paragraph in pairs})
    print(f"Wrote {count} pairs ({paragraphs} paragraphs) to {FLAGS.output}")


if __name__ == "__main__":
    app.run(main)
