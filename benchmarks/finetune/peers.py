"""benchmarks/finetune_job.py --race=tools: the peer workers (keras-hub,
the Trainer, the length-grouped PyTorch loop), each in its own process."""

import math
import tempfile
import time

from benchmarks import common
from benchmarks.finetune.jobs import FLAGS
from benchmarks.finetune.jobs import TORCH_SETTINGS
from benchmarks.finetune.jobs import peer_record


def run_keras_hub(jit_compile="auto"):
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(FLAGS.seed)
    (texts, labels), (dev_texts, dev_labels) = (
        common.read_sst2(split, FLAGS.glue_dir) for split in ("train", "dev")
    )
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        common.minilm_dir(), sequence_length=128
    )
    classifier = keras_hub.models.BertTextClassifier.from_preset(
        common.minilm_dir(), num_classes=2, preprocessor=preprocessor
    )
    steps = math.ceil(len(labels) / 32)
    decay = keras.optimizers.schedules.PolynomialDecay(2e-5, steps, 0.0)
    classifier.compile(
        optimizer=keras.optimizers.AdamW(decay),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["sparse_categorical_accuracy"],
        jit_compile=jit_compile,
    )
    train = tf.data.Dataset.from_tensor_slices((texts, labels))
    start = time.time()
    classifier.fit(
        train.shuffle(len(labels), seed=FLAGS.seed).batch(32), verbose=2
    )
    train_seconds, start = time.time() - start, time.time()
    dev = tf.data.Dataset.from_tensor_slices(dev_texts).batch(64)
    predicted = np.argmax(classifier.predict(dev, verbose=0), -1)
    return peer_record(
        len(labels), train_seconds, start, predicted == dev_labels
    )


def run_hf_trainer(group_by_length=False):
    import numpy as np
    import torch
    import transformers

    transformers.set_seed(FLAGS.seed)
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        common.minilm_dir(), num_labels=2
    )

    class Examples(torch.utils.data.Dataset):
        def __init__(self, split):
            texts, self.labels = common.read_sst2(split, FLAGS.glue_dir)
            self.encoded = tokenizer(texts, truncation=True, max_length=128)

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            item = {key: value[i] for key, value in self.encoded.items()}
            return dict(item, labels=self.labels[i])

    train, dev = Examples("train"), Examples("dev")
    with tempfile.TemporaryDirectory() as output:
        sampling = "group_by_length" if group_by_length else "random"
        arguments = transformers.TrainingArguments(
            output_dir=output, per_device_train_batch_size=32,
            per_device_eval_batch_size=64, learning_rate=2e-5,
            num_train_epochs=1, save_strategy="no", report_to=[],
            seed=FLAGS.seed, use_cpu=True, train_sampling_strategy=sampling,
            logging_steps=50,
        )  # fmt: skip
        trainer = transformers.Trainer(
            model=model, args=arguments, train_dataset=train,
            processing_class=tokenizer,
        )  # fmt: skip
        start = time.time()
        trainer.train()
        train_seconds, start = time.time() - start, time.time()
        predictions = trainer.predict(dev)
    # Length-grouped, the Trainer also predicts in shuffled length groups:
    # score the predictions against the labels it returns beside them.
    gold = np.asarray(predictions.label_ids)
    if sorted(gold.tolist()) != sorted(dev.labels):
        raise RuntimeError("The Trainer's label_ids are not the dev labels.")
    predicted = np.argmax(predictions.predictions, -1)
    return peer_record(len(train), train_seconds, start, predicted == gold)


def grouped_order(lengths, batch_size, generator):
    """One epoch's row order as the Trainer's `LengthGroupedSampler` draws
    it (`transformers.trainer_pt_utils.get_length_grouped_indices`)."""
    import numpy as np
    from transformers.trainer_pt_utils import get_length_grouped_indices

    indices = get_length_grouped_indices(
        list(lengths), batch_size, generator=generator
    )
    return np.asarray(indices, dtype=np.int64)


def padded_batch(encoded, rows, labels=None):
    """`rows` of the tokenizer's `encoded` lists as int64 tensors padded
    to the batch's longest row (what `DataCollatorWithPadding` does)."""
    import numpy as np
    import torch

    width = max(len(encoded["input_ids"][i]) for i in rows)
    batch = {}
    for name in ("input_ids", "token_type_ids", "attention_mask"):
        array = np.zeros((len(rows), width), np.int64)
        for j, i in enumerate(rows):
            array[j, : len(encoded[name][i])] = encoded[name][i]
        batch[name] = torch.from_numpy(array)
    if labels is not None:
        batch["labels"] = torch.tensor([labels[i] for i in rows])
    return batch


def torch_start(phases):
    """The PyTorch contestants' start: the model (the recipe's dropout,
    seeded) and SST-2 read and tokenized, each phase's seconds into
    `phases` ("model", "tokenize"). Returns `(model, train, labels, dev,
    dev_labels)`: the tokenizer's encodings and the labels."""
    import transformers

    from benchmarks.contestants import torch_loop

    settings = TORCH_SETTINGS
    clock = time.time()
    model = torch_loop.from_pretrained(
        transformers.AutoModelForSequenceClassification, common.minilm_dir(),
        dropout=settings["dropout"], seed=FLAGS.seed, num_labels=2,
    )  # fmt: skip
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    phases["model"] = time.time() - clock
    clock = time.time()
    (texts, labels), (dev_texts, dev_labels) = (
        common.read_sst2(split, FLAGS.glue_dir) for split in ("train", "dev")
    )
    encode = dict(truncation=True, max_length=settings["sequence_length"])
    train, dev = tokenizer(texts, **encode), tokenizer(dev_texts, **encode)
    phases["tokenize"] = time.time() - clock
    return model, train, labels, dev, dev_labels


def torch_predict(model, dev, precision):
    """The dev rows' predicted classes, in batches sorted by length."""
    import numpy as np

    from benchmarks.contestants import torch_loop

    dev_lengths = np.array([len(ids) for ids in dev["input_ids"]])

    def logits(rows):
        with torch_loop.autocast(precision):
            return model(**padded_batch(dev, rows)).logits.float().numpy()

    outputs = torch_loop.predict(
        model, logits, len(dev_lengths), TORCH_SETTINGS["eval_batch_size"],
        order=np.argsort(-dev_lengths, kind="stable"),
    )  # fmt: skip
    predicted = np.zeros(len(dev_lengths), np.int64)
    for rows, row_logits in outputs:
        predicted[rows] = row_logits.argmax(-1)
    return predicted


def run_torch_grouped(precision="float32"):
    """The plain PyTorch loop on length-grouped batches: the job's record
    (`precision` "mixed_bfloat16": the forward passes under autocast)."""
    import numpy as np
    import torch

    from benchmarks.contestants import torch_loop

    settings = TORCH_SETTINGS
    model, train, labels, dev, dev_labels = torch_start({})
    lengths = [len(ids) for ids in train["input_ids"]]
    generator = torch.Generator().manual_seed(FLAGS.seed)
    eval_start = []

    def evaluate(epoch):
        eval_start.append(time.time())
        predicted = torch_predict(model, dev, precision)
        return {"correct": predicted == np.asarray(dev_labels)}

    def step_loss(rows):
        with torch_loop.autocast(precision):
            return model(**padded_batch(train, rows, labels)).loss

    run = torch_loop.fine_tune(
        model, settings, len(lengths),
        lambda epoch: grouped_order(lengths, settings["batch_size"], generator),
        step_loss,
        evaluate=evaluate, log_every=50,
    )  # fmt: skip
    (epoch,) = run["epochs"]
    record = peer_record(
        len(labels), run["train_seconds"], eval_start[0], epoch["correct"]
    )
    return dict(record, train_cpu_seconds=round(run["train_cpu_seconds"], 1))
