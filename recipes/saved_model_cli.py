"""TensorFlow's `saved_model_cli`, with the tensorflow-text ops loaded.

`saved_model_cli run` fails on a keras-bert export with "Op type not
registered 'FastWordpieceTokenizeWithOffsets'": the CLI does not load
tensorflow-text's op library (TF Serving does). This runs the same CLI after
importing tensorflow_text; all arguments are TensorFlow's:

    python recipes/saved_model_cli.py show --dir saved_models/sst2/1 --all
    python recipes/saved_model_cli.py run --dir saved_models/sst2/1 \
        --tag_set serve --signature_def serving_default \
        --input_exprs 'text=["a great film"]'
"""

import sys

import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
from tensorflow.python.tools import saved_model_cli

if __name__ == "__main__":
    sys.argv[0] = "saved_model_cli"
    sys.exit(saved_model_cli.main())
