r"""Pre-trains BERT (masked LM + next-sentence prediction).

Reads TFRecords from `create_pretraining_data.py` (or Google's), or text
files masked on the fly, trains `keras_bert.BertMaskedLM` with AdamW (or
LAMB), linear warmup and decay and global-norm clipping, checkpoints every
`--save_checkpoints_steps` and resumes from the latest checkpoint when
re-run with the same `--model_dir`. At the end the model and vocabulary
are saved to `--export_dir` (Hugging Face layout) for
`BertBackbone.from_checkpoint` and `recipes/glue.py --init_checkpoint`.

Flags:
    --input_file: comma-separated files/globs: TFRecords, or text files
        with --input_format=sentences|text (dynamic masking).
    --input_format: "tfrecord" (default), "sentences" or "text".
    --eval_input_file: held-out TFRecords; evaluated at every checkpoint
        and at the end (--eval_steps batches).
    --eval_steps: batches of held-out data per evaluation; 0 evaluates the
        whole held-out set once, exactly (no example dropped or repeated,
        whatever the number of replicas).
    --model_dir: checkpoints, TensorBoard logs and results.json.
    --export_dir: where the final model + vocab go (model_dir/export).
    --vocab_file: WordPiece vocab.txt (also exported).
    --do_lower_case: lower-case text (text inputs and export).
    --preset: architecture with random weights, e.g. bert_tiny (a trained
        name such as bert_base_en_uncased is a usage error: pass it as
        --init_checkpoint).
    --bert_config_file: JSON of BertBackbone arguments, instead of --preset.
    --init_checkpoint: start from a checkpoint instead: a directory, a
        Hugging Face Hub id (google-bert/bert-base-uncased) or a trained
        preset name (bert_base_en_uncased).
    --max_seq_length, --max_predictions_per_seq: as the data was made.
    --masked_lm_prob, --do_whole_word_mask, --short_seq_prob,
        --dupe_factor: instance creation for text inputs.
    --train_batch_size, --eval_batch_size: global batch sizes (training:
        per micro-batch with --gradient_accumulation_steps).
    --gradient_accumulation_steps: run each update's batch as this many
        micro-batches of --train_batch_size, one after the other: the
        batches, updates and schedule of --train_batch_size times this, in
        the activation memory of --train_batch_size (the same weights, the
        masked-LM mean over the whole batch's masked tokens;
        docs/fine_tuning.md). Steps count updates.
    --num_train_steps: total update steps (a multiple of
        --save_checkpoints_steps).
    --num_warmup_steps: linear warmup steps.
    --learning_rate: peak learning rate (defaults, like --weight_decay and
        --clipnorm, from keras_bert.training.TRAINING_DEFAULTS["masked_lm"]).
    --optimizer: "adamw" or "lamb".
    --weight_decay: decoupled decay (not on LayerNorm or biases).
    --clipnorm: global-norm gradient clipping.
    --save_checkpoints_steps: steps between checkpoints.
    --strategy: "one_device", "mirrored", "multi_worker_mirrored" (cluster
        from TF_CONFIG), "tpu" (with --tpu) or "parameter_server" (refused:
        Keras 3's fit cannot train under it). See docs/distributed.md.
    --tpu: TPU name or grpc:// address, or "local" on a TPU VM.
    --auto_shard_policy: how workers split the training data: "auto"
        (files for TFRecords when there are at least as many files as
        workers, else data), "file", "data" or "off".
    --mixed_precision: mixed_float16 on GPU, mixed_bfloat16 otherwise.
    --jit_compile: compile the train step with XLA.
    --seed: seed of initialisation and input shuffling.
    --deterministic_ops: make TensorFlow ops deterministic (slower), so that
        runs repeat bit for bit.
    --verbose: Keras verbosity (1 = progress bar, 2 = a line per interval).

Example:
    python recipes/pretrain.py --input_file='/tmp/pretrain/train*' \
        --vocab_file=vocab.txt --preset=bert_tiny --model_dir=/tmp/tiny \
        --train_batch_size=32 --num_train_steps=1000 \
        --num_warmup_steps=100 --save_checkpoints_steps=100
"""

import os

import cpu_backend  # before TensorFlow: chooses its CPU backend
import keras
import tensorflow as tf
from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert import BertTokenizer
from keras_bert import data
from keras_bert import training
from keras_bert.cli import recipe_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Training data files/globs.")
flags.DEFINE_enum(
    "input_format",
    "tfrecord",
    ["tfrecord", "sentences", "text"],
    "Training data layout.",
)
flags.DEFINE_string("eval_input_file", None, "Held-out TFRecords.")
flags.DEFINE_integer("eval_steps", 100, "Batches per evaluation.")
flags.DEFINE_string("model_dir", None, "Checkpoints, logs, results.")
flags.DEFINE_string("export_dir", None, "Final export (model_dir/export).")
flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary file.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the text.")
flags.DEFINE_string(
    "preset", "bert_tiny", "Backbone architecture (random weights)."
)
flags.DEFINE_string("bert_config_file", None, "JSON of BertBackbone args.")
flags.DEFINE_string(
    "init_checkpoint", None, "Checkpoint (directory or Hub id) to start from."
)
flags.DEFINE_integer("max_seq_length", 128, "Sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Predictions per seq.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Text inputs: mask fraction.")
flags.DEFINE_bool("do_whole_word_mask", False, "Text inputs: whole words.")
flags.DEFINE_float("short_seq_prob", 0.1, "Text inputs: short targets.")
flags.DEFINE_integer("dupe_factor", 1, "Text inputs: samplings per pass.")
PRETRAINING = training.TRAINING_DEFAULTS["masked_lm"]
flags.DEFINE_integer(
    "train_batch_size",
    PRETRAINING.batch_size,
    "Global training batch size (per micro-batch).",
)
flags.DEFINE_integer("eval_batch_size", 32, "Global evaluation batch size.")
flags.DEFINE_integer("num_train_steps", 1000, "Total training steps.")
flags.DEFINE_integer("num_warmup_steps", 100, "Warmup steps.")
flags.DEFINE_float(
    "learning_rate", PRETRAINING.learning_rate, "Peak learning rate."
)
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
flags.DEFINE_float("weight_decay", PRETRAINING.weight_decay, "Weight decay.")
flags.DEFINE_float(
    "clipnorm", PRETRAINING.global_clipnorm, "Global gradient-norm clipping."
)
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint interval.")
flags.DEFINE_enum(
    "strategy", "one_device", list(training.strategies.STRATEGIES),
    "Distribution strategy.",
)  # fmt: skip
flags.DEFINE_string("tpu", None, "--strategy=tpu: TPU address or 'local'.")
flags.DEFINE_enum(
    "auto_shard_policy",
    "auto",
    ["auto", "file", "data", "off"],
    "How multi-worker runs split the training data.",
)
flags.DEFINE_bool("mixed_precision", False, "Mixed-precision training.")
flags.DEFINE_bool("jit_compile", False, "XLA-compile the train step.")
flags.DEFINE_integer("seed", 12345, "Random seed.")
flags.DEFINE_bool("deterministic_ops", False, "Deterministic TF ops.")
flags.DEFINE_integer("verbose", 1, "Keras fit verbosity.")
# --- Gradient accumulation ---
flags.DEFINE_integer(
    "gradient_accumulation_steps",
    1,
    "Micro-batches of --train_batch_size per update, run one after the "
    "other (the batches and updates of a batch this many times larger).",
)
flags.mark_flags_as_required(["input_file", "model_dir", "vocab_file"])


def _build_model(vocabulary_size):
    if FLAGS.init_checkpoint:
        logging.info("Starting from checkpoint %s.", FLAGS.init_checkpoint)
        # The recipe reads its own data: no preprocessor is attached.
        model = keras_bert.BertMaskedLM.from_checkpoint(
            FLAGS.init_checkpoint, preprocessor=None
        )
        backbone = model.backbone
    elif FLAGS.bert_config_file:
        config = keras_bert.files.read_json(FLAGS.bert_config_file)
        backbone = keras_bert.BertBackbone(**config)
    else:
        backbone = keras_bert.BertBackbone.from_preset(
            FLAGS.preset, vocabulary_size=vocabulary_size
        )
    if not FLAGS.init_checkpoint:
        model = keras_bert.BertMaskedLM(backbone)
    if backbone.vocabulary_size != vocabulary_size:
        raise ValueError(
            f"The model's vocabulary_size={backbone.vocabulary_size} does "
            f"not match --vocab_file={FLAGS.vocab_file!r} with "
            f"{vocabulary_size} tokens. Use the vocabulary the model (or "
            "the data) was made with."
        )
    return model


def _shard_policy(strategy):
    if FLAGS.auto_shard_policy != "auto":
        return FLAGS.auto_shard_policy
    if FLAGS.input_format != "tfrecord":
        return "data"  # generated on the fly: every worker makes it all
    return training.file_shard_policy(
        len(data.expand_input_files(FLAGS.input_file)),
        training.num_workers(strategy),
    )


def _datasets(tokenizer, strategy):
    # The same seed on a resumed run: `pretrain` skips the batches already
    # trained on, so the run sees the data an uninterrupted one would.
    seed = FLAGS.seed
    if FLAGS.input_format == "tfrecord":
        train = data.pretraining_dataset_from_tfrecords(
            FLAGS.input_file,
            _update_batch_size(),
            FLAGS.max_seq_length,
            FLAGS.max_predictions_per_seq,
            seed=seed,
        )
    else:
        creator = data.PretrainingInstanceCreator(
            tokenizer,
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            masked_lm_prob=FLAGS.masked_lm_prob,
            short_seq_prob=FLAGS.short_seq_prob,
            dupe_factor=FLAGS.dupe_factor,
            do_whole_word_mask=FLAGS.do_whole_word_mask,
            random_seed=seed,
        )
        train = data.pretraining_dataset_from_text(
            FLAGS.input_file,
            creator,
            _update_batch_size(),
            input_format=FLAGS.input_format,
        )
    policy = _shard_policy(strategy)
    logging.info("Training data shard policy: %s.", policy)
    train = training.with_auto_shard_policy(train, policy)
    evaluation = None
    if FLAGS.eval_input_file:
        whole_set = FLAGS.eval_steps == 0
        evaluation = data.pretraining_dataset_from_tfrecords(
            FLAGS.eval_input_file,
            FLAGS.eval_batch_size,
            FLAGS.max_seq_length,
            FLAGS.max_predictions_per_seq,
            shuffle=False,
            repeat=not whole_set,
            drop_remainder=not whole_set,
        )
        # Data sharding keeps every example exactly once across workers.
        evaluation = training.with_auto_shard_policy(evaluation, "data")
    return train, evaluation


def _update_batch_size():
    """Examples per update: the micro-batches of one update together."""
    return FLAGS.train_batch_size * FLAGS.gradient_accumulation_steps


def main(argv):
    del argv
    training.check_gradient_accumulation_steps(
        FLAGS.gradient_accumulation_steps,
        name="--gradient_accumulation_steps",
        error=app.UsageError,
    )
    # A usage error comes before any work: --preset=bert_base_en_uncased
    # names trained weights, which --init_checkpoint loads.
    recipe_flags.check_architecture_preset(FLAGS.preset)
    # Before any other TensorFlow call: a multi-worker strategy configures
    # the runtime, which must not have started yet.
    strategy = training.create_strategy(FLAGS.strategy, tpu=FLAGS.tpu)
    training.check_fit_support(strategy)
    module = FLAGS.find_module_defining_flag("input_file")
    configuration = {
        f.name: f.value for f in FLAGS.get_flags_for_module(module)
    }
    if FLAGS.mixed_precision:
        policy = (
            "mixed_float16"
            if tf.config.list_physical_devices("GPU")
            else "mixed_bfloat16"
        )
        keras.mixed_precision.set_global_policy(policy)
    configuration["dtype_policy"] = keras.mixed_precision.global_policy().name
    logging.info("Configuration: %s", configuration)
    keras.utils.set_random_seed(FLAGS.seed)
    if FLAGS.deterministic_ops:
        tf.config.experimental.enable_op_determinism()

    tokenizer = BertTokenizer(FLAGS.vocab_file, lowercase=FLAGS.do_lower_case)
    logging.info(
        "Strategy %s with %d replica(s).",
        type(strategy).__name__,
        strategy.num_replicas_in_sync,
    )
    with strategy.scope():
        model = _build_model(tokenizer.vocabulary_size())
        schedule = training.WarmupLinearDecay(
            FLAGS.learning_rate,
            total_steps=FLAGS.num_train_steps,
            warmup_steps=FLAGS.num_warmup_steps,
        )
        optimizer = training.create_optimizer(
            FLAGS.optimizer,
            schedule,
            weight_decay=FLAGS.weight_decay,
            global_clipnorm=FLAGS.clipnorm,
        )
        # Global-batch means: any number of replicas trains like one.
        model.compile(
            optimizer=optimizer,
            loss=training.pretraining_losses(),
            jit_compile=FLAGS.jit_compile,
            gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        )

    train, evaluation = _datasets(tokenizer, strategy)
    eval_steps = FLAGS.eval_steps or None
    result = training.pretrain(
        model,
        train,
        FLAGS.model_dir,
        num_train_steps=FLAGS.num_train_steps,
        steps_per_checkpoint=FLAGS.save_checkpoints_steps,
        validation_data=evaluation,
        validation_steps=eval_steps if evaluation else None,
        verbose=FLAGS.verbose,
        # A line with the speed every 100 steps (or interval): an interval
        # can take hours, and verbose=2 prints only at its end.
        callbacks=[
            training.ProgressLogger(
                FLAGS.save_checkpoints_steps,
                every_steps=min(100, FLAGS.save_checkpoints_steps),
            )
        ],
    )
    result["examples_per_second"] = (
        result["steps_per_second"] * _update_batch_size()
    )
    if evaluation is not None:
        result["eval"] = model.evaluate(
            evaluation, steps=eval_steps, return_dict=True, verbose=0
        )
    export_dir = FLAGS.export_dir or os.path.join(FLAGS.model_dir, "export")
    result["export_dir"] = export_dir
    # Every worker exports (as TensorFlow recommends); only the chief's
    # copy is kept.
    write_dir = training.write_directory(export_dir, strategy)
    result["exported_files"] = keras_bert.checkpoints.save_huggingface(
        model, tokenizer, write_dir
    )
    training.remove_write_directory(write_dir, export_dir)
    if not training.is_chief(strategy):
        return
    result["configuration"] = configuration
    path = os.path.join(FLAGS.model_dir, "results.json")
    keras_bert.files.write_json(path, result, default=float)
    logging.info("Results written to %s.", path)


if __name__ == "__main__":
    cpu_backend.run(main)
