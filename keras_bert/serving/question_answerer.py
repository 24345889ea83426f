"""The SavedModel endpoints of a `BertQuestionAnswerer`.

`serving_default` is `keras_bert.decoding.answers.answer_text_function`,
the function `BertQuestionAnswerer.predict` runs on raw text too, so TF
Serving answers raw `question` and `context` strings of any length as
`predict` does.
"""

import tensorflow as tf

from keras_bert.decoding.answers import answer_text_function
from keras_bert.serving.signatures import ids_signature


def question_answering_endpoints(model, preprocessor, **options):
    """SavedModel endpoints of a question-answering model.

    - `serving_default`: `question`, `context`, string `(batch,)` →
      `answer`, `start`, `end`, `score` `(batch,)`; see
      `keras_bert.decoding.answers.answer_text_function`, which takes
      `options` (`doc_stride`, `max_query_length`, `max_answer_length`,
      `n_best_size`, `version_2_with_negative`,
      `null_score_diff_threshold`, `trim`).
    - `predict_ids`: `token_ids`, `segment_ids`, `padding_mask` int32
      `(batch, sequence)` → `start_logits`, `end_logits` float32.

    Args:
        model: `keras_bert.BertQuestionAnswerer`.
        preprocessor: `keras_bert.BertPreprocessor`: its tokenizer and its
            `sequence_length` (the window length, `max_seq_length`).
        **options: `answer_text_function`'s options.

    Returns a dict `name -> (function, input_signature)`.
    """

    def serve_ids(token_ids, segment_ids, padding_mask):
        outputs = model(
            {
                "token_ids": token_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            },
            training=False,
        )
        return {
            name: tf.cast(outputs[name], tf.float32)
            for name in ("start_logits", "end_logits")
        }

    return {
        "serving_default": answer_text_function(model, preprocessor, **options),
        "predict_ids": (serve_ids, ids_signature()),
    }
