"""`EmbeddingDistillationJob`: a sentence embedder distilled on
unlabelled sentences by the shared fine-tuning runner."""

import os

import numpy as np
from absl import logging

from keras_bert.data.packed_batches import pack_texts
from keras_bert.data.packed_batches import packed_batches
from keras_bert.distillation.distiller import BertDistiller
from keras_bert.fine_tuning.classify.examples import (
    read_classification_examples,
)
from keras_bert.fine_tuning.distill.job import STUDENT_FILE
from keras_bert.fine_tuning.distill.job import build_student
from keras_bert.fine_tuning.distill.teachers import EMBEDDER
from keras_bert.fine_tuning.distill.teachers import load_embedder_teacher
from keras_bert.fine_tuning.distill.teachers import teacher_task
from keras_bert.fine_tuning.embeddings.job import encode_texts
from keras_bert.fine_tuning.embeddings.metrics import sts_spearman
from keras_bert.fine_tuning.embeddings.pairs import read_sts
from keras_bert.fine_tuning.job import FineTuningJob

STS_SPLIT = "sts"


class EmbeddingDistillationJob(FineTuningJob):
    """Distils a sentence embedder into a student, run by `run_fine_tuning`.

    The teacher is a `keras_bert.BertTextEmbedder`; the student is
    `keras_bert.distillation.student_of(teacher, **student)` (the same
    pooling and normalisation, the preprocessor shared). It trains on
    unlabelled sentences with the teacher as the only signal: a
    `BertDistiller` at `student_loss_weight=0.0`, whose loss for an
    embedder is the cosine similarity of the student's embedding to the
    teacher's (`keras_bert.distillation.distillation_loss_for`). The
    sentences are every distinct text of `train_file` (the formats of
    `recipes/classify.py`: `text`, or both `text_a` and `text_b` of a
    pair; labels, if any, are not read), in file order. After every epoch
    the student is scored on `sts_file` (an STS-B style TSV: Spearman of
    the pairs' cosine similarity with the gold scores, `sts/spearman`),
    and its best epoch kept: `best.weights.h5` holds the student's
    weights only. The runner gives the rest, as for any fine-tuning: the
    strategy and mixed precision, AdamW with warmup and decay, early
    stopping, TensorBoard, resume, and the student's export (text in,
    embedding out). `results.json` adds the teacher's Spearman
    (`teacher_metrics`), the student's blocks and the sentence count.

    Args:
        teacher: str. A finished `recipes/embeddings.py --model_dir`, a
            `.keras` file of a `BertTextEmbedder` or a sentence-transformers
            (Hugging Face) directory
            (`keras_bert.fine_tuning.distill.teachers.load_embedder_teacher`).
        train_file: str. The sentences to distil on.
        sts_file: str. The STS-B style TSV that scores the student.
        student: dict. `keras_bert.distillation.student_of` arguments:
            `{"layers": (0, 2, 4)}`, `{"num_layers": 3}` or
            `{"preset": "bert_mini"}`.
        sequence_length: int. A Hugging Face teacher's tokens per text.
            Defaults to `128`.
        eval_batch_size: int. Sentences per forward pass when scoring.
            Defaults to `64`.
        group_by_length: bool. Batches of like-length sentences, each cut
            to its longest. Defaults to `True`.
        columns: dict or `None`. `text_column` and `text_b_column` of the
            train file (`read_classification_examples`).
        distiller_options: dict or `None`. More `BertDistiller` keyword
            arguments.

    Example:
    ```python
    job = EmbeddingDistillationJob(
        "sentence-transformers/all-MiniLM-L6-v2", "sentences.jsonl",
        "glue/STS-B/dev.tsv", {"layers": (0, 2, 4)},
    )
    result = keras_bert.fine_tuning.run_fine_tuning(
        job, "runs/minilm_student", learning_rate=1e-4, epochs=2
    )
    result.model.student  # a BertTextEmbedder of 3 blocks
    ```
    """

    name = "distill_embeddings"
    monitor = f"{STS_SPLIT}/spearman"

    def __init__(
        self,
        teacher,
        train_file,
        sts_file,
        student,
        sequence_length=128,
        eval_batch_size=64,
        group_by_length=True,
        columns=None,
        distiller_options=None,
    ):
        if not sts_file:
            raise ValueError(
                "EmbeddingDistillationJob scores the student on an STS file "
                "to keep its best epoch: pass `sts_file` (an STS-B style "
                f"TSV, e.g. glue/STS-B/dev.tsv). Received: {sts_file!r}"
            )
        self.teacher_path = teacher
        self.train_file = train_file
        self.sts_file = sts_file
        self.student_choice = dict(student)
        self.sequence_length = sequence_length
        self.eval_batch_size = eval_batch_size
        self.group_by_length = group_by_length
        self.columns = dict(columns or {})
        self.distiller_options = dict(distiller_options or {})
        self.train = None
        self.sts = None
        self.preprocessor = None
        self.teacher = None
        self.student_layers = None
        self._features = None

    def load_data(self):
        if self.train is not None:
            return  # read already (a recipe reads first, then the runner)
        if teacher_task(self.teacher_path) != EMBEDDER:
            raise ValueError(
                f"The teacher {self.teacher_path} is not a sentence "
                "embedder (a recipes/embeddings.py run, a .keras "
                "BertTextEmbedder or a sentence-transformers directory "
                "with modules.json): distil a classifier with "
                "DistillationJob."
            )
        examples = read_classification_examples(
            self.train_file, labels=False, **self.columns
        )
        sentences = [text for side in examples.texts for text in side]
        self.train = list(dict.fromkeys(sentences))
        self.sts = read_sts(self.sts_file)
        logging.info(
            "%d distinct training sentences (of %d); STS: %d pairs",
            len(self.train),
            len(sentences),
            len(self.sts[2]),
        )

    def build_model(self):
        teacher = load_embedder_teacher(self.teacher_path, self.sequence_length)
        if teacher.preprocessor is None:
            raise ValueError(
                f"The teacher {self.teacher_path} has no preprocessor to "
                "read text with: save it with one (`model.preprocessor = "
                "keras_bert.BertPreprocessor(tokenizer)`)."
            )
        student, self.student_layers = build_student(
            teacher, self.student_choice
        )
        self.teacher = teacher
        self.preprocessor = teacher.preprocessor
        self._features = None
        distiller = BertDistiller(
            teacher, student, student_loss_weight=0.0, **self.distiller_options
        )
        return distiller, self.preprocessor

    @property
    def num_train_examples(self):
        return len(self.train)

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        if self._features is None:
            self._features = pack_texts(
                (np.array(self.train, dtype=object).astype(str),),
                self.preprocessor,
            )
        return packed_batches(
            self._features,
            None,
            batch_size,
            shuffle=True,
            seed=seed,
            first_epoch=first_epoch,
            num_epochs=num_epochs,
            group_by_length=self.group_by_length,
        )

    def evaluate(self, model):
        return self.scores(model.student)

    def scores(self, embedder):
        """`{"sts": {"spearman": ...}}` of `embedder` on the STS file."""
        sentences_a, sentences_b, gold = self.sts
        encoded = [
            encode_texts(
                embedder, self.preprocessor, texts, self.eval_batch_size
            )
            for texts in (sentences_a, sentences_b)
        ]
        return {STS_SPLIT: {"spearman": sts_spearman(*encoded, gold)}}

    @property
    def serving_texts(self):
        """Sentences to time the exports on: the STS file's first ones."""
        return (self.sts[0],)

    def write_outputs(self, model, directory):
        """The student as `student.keras` (nothing of the distiller)."""
        path = os.path.join(directory, STUDENT_FILE)
        model.student.save(path)
        logging.info("Wrote %s", path)
        return {"student_file": path}

    def serving_model(self, model):
        return model.student

    def weights_model(self, model):
        return model.student

    def results_extras(self):
        return {
            "teacher": self.teacher_path,
            "teacher_metrics": self.scores(self.teacher),
            "student_layers": self.student_layers,
            "num_train_sentences": len(self.train),
            "sts_pairs": len(self.sts[2]),
        }
