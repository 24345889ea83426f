# usage: glue_one.sh TASK SEED random|pretrained
cd "$(dirname "$0")/../.."
TASK=$1; SEED=$2; INIT=$3
if [ "$INIT" = random ]; then
  WEIGHTS="--preset=bert_tiny --vocabulary=/tmp/pt/vocab.txt"
else
  WEIGHTS="--init_checkpoint=/tmp/pt/tiny/export"
fi
nice -n 5 python recipes/glue.py --task=$TASK --data_dir=/work/shared/glue \
  $WEIGHTS --model_dir=/tmp/pt/glue/$TASK-$INIT-$SEED \
  --sequence_length=64 --batch_size=32 --learning_rate=1e-4 --epochs=3 \
  --warmup_fraction=0.1 --seed=$SEED > /tmp/pt/glue/$TASK-$INIT-$SEED.log 2>&1
