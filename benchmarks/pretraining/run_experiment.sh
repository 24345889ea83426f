#!/usr/bin/env bash
# The pre-training experiment of benchmarks/pretraining/RESULTS.md, step by
# step, exactly as run. Needs Debian's python3.11-doc and linux-doc-6.1;
# outputs go to $T (/tmp/pt3). Each step ran pinned to one core
# (`taskset -c 1`) while other jobs used the other core.
set -euo pipefail
cd "$(dirname "$0")/../.."
T=${T:-/tmp/pt3}
mkdir -p "$T/train_files" "$T/heldout_files"

# 0. Split the corpus by file: every 50th file (sorted paths) is held out,
#    never seen by the vocabulary learner or by training. Symlinks, so that
#    one glob names each side.
python - "$T" <<'PY'
import glob, os, sys
T = sys.argv[1]
D = "/usr/share/doc/linux-doc-6.1/Documentation"
P = "/usr/share/doc/python3.11/html/_sources"
files = sorted(set(glob.glob(D + "/**/*.rst.gz", recursive=True))
               | set(glob.glob(P + "/**/*.rst.txt", recursive=True)))
held = set(files[::50])
for f in files:
    side = "heldout_files" if f in held else "train_files"
    name = f.replace("/usr/share/doc/", "").replace("/", "__")
    os.symlink(f, os.path.join(T, side, name))
print(len(files), "files,", len(held), "held out")
PY

# 1. Vocabulary from the training files (8,192 asked, 7,825 learnt).
python recipes/build_vocab.py --input="$T/train_files/*" \
  --output=$T/vocab.txt --vocab_size=8192 --held_out_fraction=0.01

# 2. Instances (304,423 train from 3,606 files; 1,807 held-out from 74).
python recipes/create_pretraining_data.py --input_file="$T/train_files/*" \
  --input_format=text --output_file=$T/data/train.tfrecord \
  --num_output_shards=4 --vocab_file=$T/vocab.txt --do_lower_case \
  --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 \
  --short_seq_prob=0.1 --dupe_factor=3 --random_seed=12345 --noprogress
python recipes/create_pretraining_data.py --input_file="$T/heldout_files/*" \
  --input_format=text --output_file=$T/data/heldout.tfrecord \
  --vocab_file=$T/vocab.txt --do_lower_case --max_seq_length=128 \
  --max_predictions_per_seq=20 --dupe_factor=1 --random_seed=777 --noprogress

# 3. Pre-train bert_tiny. As run: started with --num_train_steps=6000,
#    killed with SIGKILL shortly after the checkpoint at step 750, then re-run with
#    --num_train_steps=8000 (everything else the same): it resumed at step
#    750 (weights, AdamW moments, step) and ran to 8000.
python recipes/pretrain.py \
  --input_file="$T/data/train.tfrecord-*" \
  --eval_input_file=$T/data/heldout.tfrecord --eval_steps=20 \
  --vocab_file=$T/vocab.txt --do_lower_case \
  --preset=bert_tiny --model_dir=$T/tiny \
  --max_seq_length=128 --max_predictions_per_seq=20 \
  --train_batch_size=32 --eval_batch_size=32 \
  --num_train_steps=8000 --num_warmup_steps=300 --learning_rate=1e-3 \
  --optimizer=adamw --weight_decay=0.01 --clipnorm=1.0 \
  --save_checkpoints_steps=250 --strategy=one_device --seed=12345 --verbose=2

# 4. Baselines, full held-out evaluation. (curves.png was drawn by
#    benchmarks/pretraining/plot_curves.py, retired after commit 193fb03:
#    `git show 193fb03:benchmarks/pretraining/plot_curves.py`.)
python benchmarks/pretraining/baselines.py $T/data/heldout.tfrecord \
  "$T/data/train.tfrecord-*" > benchmarks/pretraining/baselines.json
python benchmarks/pretraining/evaluate_heldout.py $T/tiny/export \
  $T/data/heldout.tfrecord > benchmarks/pretraining/heldout_eval.json

# 5. Fine-tune pre-trained vs random bert_tiny, identical settings.
for task in sst2 stsb mrpc; do
  for seed in 0 1 2; do
    for init in pretrained random; do
      PT=$T bash benchmarks/pretraining/glue_one.sh "$task" "$seed" "$init"
    done
  done
done
python benchmarks/pretraining/glue_table.py $T/glue
