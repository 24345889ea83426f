r"""Creates BERT pre-training TFRecords from text: MLM + NSP instances.

A drop-in for Google's `create_pretraining_data.py`: the same flags and
the same TFRecord features (`input_ids`, `input_mask`, `segment_ids`,
`masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`,
`next_sentence_labels`), streamed to disk so that the corpus need not fit
in memory. See `keras_bert.data.PretrainingInstanceCreator` for where the
sampling deliberately differs (exact 50% NSP, no same-document negatives).

Flags:
    --input_file: comma-separated input files or globs (gzip allowed).
    --input_format: "sentences" (one sentence per line, blank line between
        documents, the original format) or "text" (each file a plain-text
        document, split into sentences).
    --output_file: output TFRecord path, or comma-separated paths written
        round-robin.
    --num_output_shards: with one --output_file, write this many shards
        named OUTPUT-0000i-of-0000N.
    --vocab_file: WordPiece vocab.txt.
    --do_lower_case: lower-case the text (uncased vocabulary).
    --do_whole_word_mask: mask all pieces of a word together.
    --max_seq_length: length of [CLS] A [SEP] B [SEP].
    --max_predictions_per_seq: cap on masked tokens per sequence.
    --random_seed: seed; the same seed and inputs give identical files.
    --dupe_factor: passes over the input with different masks and pairs.
    --masked_lm_prob: fraction of tokens masked.
    --short_seq_prob: probability of a shorter target length.
    --documents_per_chunk: documents held in memory at once.
    --progress: show a progress bar.

Writes stats-NAME.json beside the first output file NAME (outside the
outputs' glob) with the counts of instances, documents and all skipped.

Example:
    python recipes/create_pretraining_data.py \
        --input_file='/usr/share/doc/python3.11/html/_sources/*/*.rst.txt' \
        --input_format=text --output_file=/tmp/pretrain/train.tfrecord \
        --num_output_shards=4 --vocab_file=vocab.txt --do_lower_case \
        --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5
"""

from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert import BertTokenizer
from keras_bert import data

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Comma-separated input files/globs.")
flags.DEFINE_enum(
    "input_format", "sentences", ["sentences", "text"], "Input layout."
)
flags.DEFINE_string("output_file", None, "Output TFRecord file(s).")
flags.DEFINE_integer("num_output_shards", 1, "Shards of one output file.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary file.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input text.")
flags.DEFINE_bool("do_whole_word_mask", False, "Whole-word masking.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum predictions.")
flags.DEFINE_integer("random_seed", 12345, "Random seed.")
flags.DEFINE_integer("dupe_factor", 10, "Passes over the input.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a short target.")
flags.DEFINE_integer("documents_per_chunk", 2000, "Documents in memory.")
flags.DEFINE_bool("progress", True, "Show a progress bar.")
flags.mark_flags_as_required(["input_file", "output_file", "vocab_file"])


def main(argv):
    del argv
    module = FLAGS.find_module_defining_flag("input_file")
    configuration = {
        f.name: f.value for f in FLAGS.get_flags_for_module(module)
    }
    logging.info("Configuration: %s", configuration)
    tokenizer = BertTokenizer(FLAGS.vocab_file, lowercase=FLAGS.do_lower_case)
    creator = data.PretrainingInstanceCreator(
        tokenizer,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob,
        dupe_factor=FLAGS.dupe_factor,
        do_whole_word_mask=FLAGS.do_whole_word_mask,
        random_seed=FLAGS.random_seed,
        documents_per_chunk=FLAGS.documents_per_chunk,
    )
    input_files = data.expand_input_files(FLAGS.input_file)
    output_files = data.output_shard_paths(
        FLAGS.output_file, FLAGS.num_output_shards
    )
    logging.info("Reading %d input files.", len(input_files))
    stats = data.write_pretraining_tfrecords(
        creator,
        input_files,
        output_files,
        input_format=FLAGS.input_format,
        progress=FLAGS.progress,
    )
    directory, _, name = output_files[0].rpartition("/")
    stats_path = keras_bert.files.join(directory, f"stats-{name}.json")
    keras_bert.files.write_json(
        stats_path, {"output_files": output_files, **stats}
    )
    logging.info("Statistics written to %s: %s", stats_path, stats)


if __name__ == "__main__":
    app.run(main)
