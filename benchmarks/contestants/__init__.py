"""The two sides of every fine-tuning comparison in `benchmarks/`.

- `torch_loop`: the PyTorch reference loop (transformers' model, BERT's
  AdamW and schedule, clipping, seeds, timing, resume) that
  `squad_finetune.py`, `ner_finetune.py` and `fine_tuning_parity.py` run,
  each passing in only its task: the model, the batch order, the loss and
  the scoring.
- `recipe`: keras-bert's side, a recipe of `recipes/` run as a user runs
  it, with the settings the PyTorch loop trains with.
- `keras_loop`: keras-bert step by step (`train_on_batch` on given
  batches), for the comparisons that look at every step's loss.
"""
