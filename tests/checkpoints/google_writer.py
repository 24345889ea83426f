"""Writes original-Google-BERT TF1 checkpoints for the tests.

The name table below is written out independently of
`keras_bert.checkpoints` (from Google's `modeling.py` and
`run_pretraining.py` variable scopes), so a wrong mapping in the library
cannot cancel out against the same mistake here.
"""

import json
import os

import numpy as np
import tensorflow as tf


def google_variables(state, num_layers, heads=True):
    """Google-named arrays from a Hugging Face `BertForPreTraining` state.

    Args:
        state: dict of numpy arrays with Hugging Face names; encoder names
            with or without the `bert.` prefix.
        num_layers: int.
        heads: bool. Whether to include `cls/...` (needs `cls.*` in state).
    """
    hf = {
        k[len("bert.") :] if k.startswith("bert.") else k: v
        for k, v in (state.items())
    }
    g = {
        "bert/embeddings/word_embeddings": hf[
            "embeddings.word_embeddings.weight"
        ],
        "bert/embeddings/token_type_embeddings": hf[
            "embeddings.token_type_embeddings.weight"
        ],
        "bert/embeddings/position_embeddings": hf[
            "embeddings.position_embeddings.weight"
        ],
        "bert/embeddings/LayerNorm/gamma": hf["embeddings.LayerNorm.weight"],
        "bert/embeddings/LayerNorm/beta": hf["embeddings.LayerNorm.bias"],
        "bert/pooler/dense/kernel": hf["pooler.dense.weight"].T,
        "bert/pooler/dense/bias": hf["pooler.dense.bias"],
    }
    for i in range(num_layers):
        src, dst = f"encoder.layer.{i}.", f"bert/encoder/layer_{i}/"
        for part in ("query", "key", "value"):
            g[dst + f"attention/self/{part}/kernel"] = hf[
                src + f"attention.self.{part}.weight"
            ].T
            g[dst + f"attention/self/{part}/bias"] = hf[
                src + f"attention.self.{part}.bias"
            ]
        for g_scope, h_scope in (
            ("attention/output/dense", "attention.output.dense"),
            ("intermediate/dense", "intermediate.dense"),
            ("output/dense", "output.dense"),
        ):
            g[dst + g_scope + "/kernel"] = hf[src + h_scope + ".weight"].T
            g[dst + g_scope + "/bias"] = hf[src + h_scope + ".bias"]
        for g_scope, h_scope in (
            ("attention/output/LayerNorm", "attention.output.LayerNorm"),
            ("output/LayerNorm", "output.LayerNorm"),
        ):
            g[dst + g_scope + "/gamma"] = hf[src + h_scope + ".weight"]
            g[dst + g_scope + "/beta"] = hf[src + h_scope + ".bias"]
    if heads:
        g.update(
            {
                "cls/predictions/transform/dense/kernel": hf[
                    "cls.predictions.transform.dense.weight"
                ].T,
                "cls/predictions/transform/dense/bias": hf[
                    "cls.predictions.transform.dense.bias"
                ],
                "cls/predictions/transform/LayerNorm/gamma": hf[
                    "cls.predictions.transform.LayerNorm.weight"
                ],
                "cls/predictions/transform/LayerNorm/beta": hf[
                    "cls.predictions.transform.LayerNorm.bias"
                ],
                "cls/predictions/output_bias": hf["cls.predictions.bias"],
                # Google stores the NSP matrix (2, hidden), not transposed.
                "cls/seq_relationship/output_weights": hf[
                    "cls.seq_relationship.weight"
                ],
                "cls/seq_relationship/output_bias": hf[
                    "cls.seq_relationship.bias"
                ],
            }
        )
    return {name: np.ascontiguousarray(v, "float32") for name, v in g.items()}


def write_google_checkpoint(directory, variables, config, optimizer_slots=()):
    """Writes `bert_config.json` and `bert_model.ckpt.*` with a TF1 Saver.

    Args:
        directory: str.
        variables: dict of Google name -> numpy array.
        config: dict written as `bert_config.json`.
        optimizer_slots: names to give `adam_m`/`adam_v` slots, as
            `run_pretraining.py` saves them; `global_step` is always added.
    """
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "bert_config.json"), "w") as file:
        json.dump(config, file)
    graph = tf.Graph()
    with graph.as_default():
        tf_variables = []
        for name, value in variables.items():
            tf_variables.append(
                tf.compat.v1.get_variable(name, initializer=value)
            )
        for name in optimizer_slots:
            for slot in ("adam_m", "adam_v"):
                tf_variables.append(
                    tf.compat.v1.get_variable(
                        f"{name}/{slot}",
                        initializer=np.full_like(variables[name], 7.0),
                    )
                )
        tf_variables.append(
            tf.compat.v1.get_variable("global_step", initializer=np.int64(1000))
        )
        saver = tf.compat.v1.train.Saver(tf_variables)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(
                session,
                os.path.join(directory, "bert_model.ckpt"),
                write_meta_graph=False,
            )


def google_config(huggingface_config, hidden_act="gelu"):
    """The `bert_config.json` Google would ship for a Hugging Face config."""
    keys = (
        "attention_probs_dropout_prob",
        "hidden_dropout_prob",
        "hidden_size",
        "initializer_range",
        "intermediate_size",
        "max_position_embeddings",
        "num_attention_heads",
        "num_hidden_layers",
        "type_vocab_size",
        "vocab_size",
    )
    config = {key: huggingface_config[key] for key in keys}
    config["hidden_act"] = hidden_act
    return config
