"""Multiple choice (SWAG): reading examples, fine-tuning.

- `examples`: `read_multiple_choice` (SWAG's CSV layout or JSONL) and
  `write_swag_csv`.
- `job`: `MultipleChoiceFineTuning`, the job `recipes/multiple_choice.py`
  runs.
- `predictions`: a file of examples → one JSON line of choice and
  probabilities each (`recipes/multiple_choice.py --predict_file`).

The model is `keras_bert.BertMultipleChoice`; how it packs raw text is in
`keras_bert.models.choice_inputs`.
"""

from keras_bert.fine_tuning.multiple_choice.examples import read_multiple_choice
from keras_bert.fine_tuning.multiple_choice.examples import write_swag_csv
from keras_bert.fine_tuning.multiple_choice.job import MultipleChoiceFineTuning

__all__ = [
    "MultipleChoiceFineTuning",
    "read_multiple_choice",
    "write_swag_csv",
]
