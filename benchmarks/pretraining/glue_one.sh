# usage: glue_one.sh TASK SEED random|pretrained   (PT: the experiment dir)
# Fine-tunes bert_tiny on a GLUE task from $PT/tiny/export (pre-trained) or
# from random weights with the same vocabulary; identical settings.
cd "$(dirname "$0")/../.."
TASK=$1; SEED=$2; INIT=$3; PT=${PT:-/tmp/pt3}
if [ "$INIT" = random ]; then
  WEIGHTS="--preset=bert_tiny --vocabulary=$PT/vocab.txt"
else
  WEIGHTS="--init_checkpoint=$PT/tiny/export"
fi
EXTRA=""
[ "$TASK" = mrpc ] && EXTRA="--holdout_fraction=0.1"  # no MRPC dev file here
mkdir -p $PT/glue
python recipes/glue.py --task=$TASK --data_dir=/work/shared/glue $EXTRA \
  $WEIGHTS --model_dir=$PT/glue/$TASK-$INIT-$SEED \
  --sequence_length=128 --batch_size=32 --learning_rate=1e-4 --epochs=3 \
  --warmup_fraction=0.1 --seed=$SEED > $PT/glue/$TASK-$INIT-$SEED.log 2>&1
