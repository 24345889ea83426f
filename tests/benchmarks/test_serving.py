"""benchmarks/serving.py's table; benchmarks/contestants/serving.py:
requests, latency figures, and the contestants (ONNX Runtime's, ours)."""

import os

import numpy as np
import pytest

from benchmarks import serving_summary
from benchmarks.contestants import serving as contestants
from benchmarks.contestants import serving_loaders
from keras_bert.serving import plan
from keras_bert.serving.cpu import Cpu
from tests.helpers import on_cpu

_BFLOAT16_CPU = Cpu("test CPU", frozenset({"avx512_bf16"}), True, True)


def test_requests_are_consecutive_and_the_last_is_shorter():
    sentences = [f"s{i}" for i in range(70)]
    requests = contestants.request_batches(sentences, 32)
    assert [len(r) for r in requests] == [32, 32, 6]
    assert sum(requests, []) == sentences
    assert contestants.request_batches(sentences[:2], 1) == [["s0"], ["s1"]]
    with pytest.raises(ValueError, match="batch_size=0"):
        contestants.request_batches(sentences, 0)


def test_warm_up_requests_are_sent_first_and_not_timed():
    sent = []

    def predict(texts):
        sent.append(list(texts))
        return [len(text) % 2 for text in texts]

    requests = [["a", "bb"], ["ccc"], ["dddd"], ["e"]]
    latencies, labels = contestants.serve_requests(predict, requests, warmup=2)
    # Warm-up: the first two and the last (its own shape); then all, timed.
    assert sent == requests[:2] + requests[-1:] + requests
    assert len(latencies) == 4 and all(t >= 0 for t in latencies)
    assert labels == [1, 0, 1, 0, 1]


def test_concurrent_clients_share_one_predict_and_keep_the_order():
    import threading
    import time

    callers = set()

    def predict(texts):
        callers.add(threading.get_ident())
        time.sleep(0.05)  # the clients overlap
        return [len(text) % 2 for text in texts]

    sentences = ["a", "bb", "ccc", "dddd", "e", "ff", "ggg"]
    per_second, labels = contestants.serve_concurrently(predict, sentences, 3)
    assert labels == [1, 0, 1, 0, 1, 0, 1]
    assert len(callers) == 3  # a thread a client
    # Client 0 sends 3 of the 7: 0.15 s, not 0.35 s one after the other.
    assert 7 / 0.3 < per_second <= 7 / 0.15

    def broken(texts):
        raise RuntimeError("Already borrowed")

    with pytest.raises(RuntimeError, match="borrowed"):
        contestants.serve_concurrently(broken, sentences, 2)


def test_latency_stats_by_hand():
    latencies = [0.010] * 98 + [0.020, 0.500]  # seconds, 100 requests
    stats = contestants.latency_stats(latencies, examples=100)
    assert stats["p50_ms"] == pytest.approx(10.0)
    assert stats["p99_ms"] == pytest.approx(20.0)  # index round(0.99 * 99)
    total = 0.98 + 0.02 + 0.5
    assert stats["mean_ms"] == pytest.approx(1000 * total / 100)
    assert stats["examples_per_second"] == pytest.approx(100 / total)
    assert stats["requests"] == 100


def test_agreement():
    assert contestants.agreement("0110", "0111") == 0.75
    assert contestants.agreement([1, 0], [1, 0]) == 1.0
    with pytest.raises(ValueError, match="lengths"):
        contestants.agreement("01", "011")


def _record(name, round_index, per_second, labels="0110", load=1.0):
    batches = {
        str(batch): {
            "examples_per_second": per_second * batch,
            "p50_ms": 1000 / per_second,
            "p99_ms": 2000 / per_second,
            "accuracy": 0.5,
            "labels": labels,
        }
        for batch in (1, 32)
    }
    return {
        "contestant": name,
        "round": round_index,
        "sentences": 4,
        "batches": batches,
        "load_average_1min": [load, load + 1],
        "machine": "AMD EPYC, 2 cores",
    }


def test_summary_table_ratios_goals_and_unavailable():
    records = [
        _record("ours_fp32", 0, 100.0),
        _record("ours_fp32", 1, 120.0),
        _record("onnxruntime_fp32", 0, 50.0, labels="0111", load=3.0),
        _record("onnxruntime_fp32", 1, 80.0, labels="0111"),
        _record("transformers", 0, 200.0),
        _record("transformers", 1, 200.0),
        {
            "contestant": "ours_int8",
            "round": 0,
            "failed": ["ImportError: no int8 kernel"],
            "load_average_1min": [1.0, 1.0],
            "machine": "AMD EPYC, 2 cores",
        },
    ]
    markdown = serving_summary.summary_markdown(
        records,
        ["ours_fp32", "ours_int8", "onnxruntime_fp32", "transformers"],
        {"onnx_fused_operators": {"Attention": 6}, "classifier": "/c.h5"},
    )
    # onnxruntime: rounds 100/50 = 2.0 and 120/80 = 1.5 -> median 1.75.
    assert "| 1 | onnxruntime_fp32 | — | 65.0 |" in markdown
    assert "| 1.75 | — | 0.5000 | 0.7500 |" in markdown
    assert "batch 32: 1.75× (rounds: 2.00, 1.50); goal ≥1×, met." in markdown
    # transformers: 0.5 and 0.6 against a goal of 2 -> missed by 3.64×.
    assert "ours_fp32 / transformers, batch 1: 0.55×" in markdown
    assert "missed by 3.64×" in markdown
    assert "| 1 | ours_int8 | | not run: ['ImportError: no int8 kernel'] |" in (
        markdown
    )
    assert "ours_int8 / onnxruntime_int8, batch 1: goal ≥1×, not measured" in (
        markdown
    )
    # The load averages' range, and what it says on the records' 2 cores.
    assert "jobs: 1.00 to 4.00; up to 4.0 on 2 cores: other" in markdown
    # The command names the contestants that ran, being fewer than all.
    assert (
        "`python benchmarks/serving.py --classifier=/c.h5 --contestants="
        "ours_fp32,ours_int8,onnxruntime_fp32,transformers --rounds=2 "
    ) in markdown
    assert "--sentences=4`" in markdown
    assert "keras-hub (AMD EPYC)\n" in markdown  # the CPU in the title
    assert "optimizer fused: 6 Attention." in markdown


def test_the_clients_table_pairs_each_n_with_onnxruntime_fp32():
    """Per client count, each contestant at its best thread count, its
    requests/s and its paired ratio to ONNX Runtime fp32 at that count."""
    records = []
    for k, (ours, peer_1, peer_2) in enumerate(((60, 100, 90), (80, 100, 80))):
        for job, rate in (
            ("ours_fp32_default_1_threads", ours),
            ("onnxruntime_fp32_1_threads", peer_1),
            ("onnxruntime_fp32_2_threads", peer_2),
        ):
            record = _record(job, k, 100.0)
            record["clients"] = {
                n: {"requests_per_second": rate * int(n), "accuracy": 0.75}
                for n in ("1", "8")
            }
            records.append(record)
    markdown = serving_summary.summary_markdown(
        records, ["ours_fp32_default", "onnxruntime_fp32"], {}
    )
    assert "| clients | contestant | threads | requests/s | it / " in markdown
    # ONNX Runtime at 1 thread: 100, 100 (2 threads: 90, 80).
    assert "| 8 | onnxruntime_fp32 | 1 (of 1, 2) | 800.0 | — | 0.7500 |" in (
        markdown
    )
    # Ours: 60 / 100 and 80 / 100 -> 0.70.
    assert "| 1 | ours_fp32_default | 1 (of 1) | 70.0 | 0.70 | 0.7500 |" in (
        markdown
    )
    assert "--clients=1,8 " in markdown
    del records[0]["clients"]  # a record without: its round is left out
    markdown = serving_summary.summary_markdown(
        records, ["ours_fp32_default", "onnxruntime_fp32"], {}
    )
    assert "| 1 | ours_fp32_default | 1 (of 1) | 80.0 | 0.80 | 0.7500 |" in (
        markdown
    )


def test_swept_peers_run_once_per_thread_count():
    names = [
        "ours_fp32", "ours_bf16", "onnxruntime_int8", "transformers",
        "keras_hub",
    ]  # fmt: skip
    jobs = contestants.thread_variants(names, ["1", "2"])
    assert jobs == [
        "ours_fp32",  # streams: its one documented setting
        "ours_bf16_1_threads",  # both pools at 1, then at 2
        "ours_bf16_2_threads",
        "onnxruntime_int8_1_threads",
        "onnxruntime_int8_2_threads",
        "transformers_1_threads",
        "transformers_2_threads",
        "keras_hub",
    ]
    assert contestants.thread_variants(names, []) == names
    # ONNX Runtime's static int8 is swept and served as its dynamic one.
    jobs = contestants.thread_variants(contestants.CONTESTANTS, ["1"])
    assert "onnxruntime_int8_static_1_threads" in jobs
    assert ("ours_int8_calibrated", "onnxruntime_int8_static", 1.0) in (
        serving_summary.GOALS
    )
    # Both of TF Serving's pools at the swept count; streams: 1 and one
    # inter-op thread per stream.
    manifest = {"streams": {"ours_fp32": 2}}
    assert serving_loaders._thread_counts("ours_bf16", manifest, 1) == (1, 1)
    assert serving_loaders._thread_counts("ours_fp32", manifest, 1) == (1, 2)
    assert contestants.thread_setting("transformers_2_threads", 4) == (
        "transformers",
        2,
    )
    assert contestants.thread_setting("ours_fp32", 4) == ("ours_fp32", 4)
    for job in ("keras_hub_1_threads", "transformers_0_threads"):
        with pytest.raises(ValueError, match=job):
            contestants.thread_setting(job, 2)


def test_the_table_shows_each_swept_peer_at_its_best_count():
    """Per batch size the count with the most examples/s is shown and the
    ratios pair ours with that count's rounds; the sweep table has every
    count, the best in bold."""
    fast_at_1, fast_at_32 = (
        "onnxruntime_fp32_1_threads",
        "onnxruntime_fp32_2_threads",
    )
    records = [
        _record("ours_fp32", 0, 100.0),
        _record("ours_fp32", 1, 100.0),
        _record(fast_at_1, 0, 50.0),
        _record(fast_at_1, 1, 50.0),
        _record(fast_at_32, 0, 40.0),
        _record(fast_at_32, 1, 40.0),
    ]
    for record in records[4:]:  # 2 threads: slower at 1, faster at 32
        record["batches"]["32"]["examples_per_second"] = 2000.0
    markdown = serving_summary.summary_markdown(
        records, ["ours_fp32", "onnxruntime_fp32"], {"classifier": "/c.h5"}
    )
    assert "| 1 | onnxruntime_fp32 | 1 (of 1, 2) | 50.0 |" in markdown
    assert "| 32 | onnxruntime_fp32 | 2 (of 1, 2) | 2000.0 |" in markdown
    assert "onnxruntime_fp32, batch 1: 2.00× (rounds: 2.00, 2.00)" in markdown
    assert "onnxruntime_fp32, batch 32: 1.60× (rounds: 1.60, 1.60)" in markdown
    assert "| 1 | onnxruntime_fp32 | **50.0** | 40.0 |" in markdown
    assert "| 32 | onnxruntime_fp32 | 1600.0 | **2000.0** |" in markdown
    assert "onnxruntime_fp32 ran at 1, 2 threads (a peer's intra-op" in markdown
    assert "--peer_threads" not in markdown  # the default counts


def test_the_table_shows_ours_bf16_against_the_peers_and_ours_fp32():
    """ours_bf16 has its column of ratios (against ONNX Runtime fp32 and
    the pipeline, as ours_fp32), its goal, its agreement with ours_fp32's
    labels and its accuracy against ours_fp32's; the notes say which
    implementation each of our exports runs."""
    records = [
        _record("ours_fp32", 0, 100.0),
        _record("ours_fp32", 1, 100.0),
        _record("ours_bf16", 0, 160.0, labels="0111"),
        _record("ours_bf16", 1, 140.0, labels="0111"),
        _record("onnxruntime_fp32", 0, 100.0),
        _record("onnxruntime_fp32", 1, 100.0),
        _record("transformers", 0, 50.0),
        _record("transformers", 1, 50.0),
    ]
    for record in records[2:4]:
        for stats in record["batches"].values():
            stats["accuracy"] = 0.497  # 0.3 points below ours_fp32's
    names = ["ours_fp32", "ours_int8", "ours_bf16"]
    names += ["onnxruntime_fp32", "transformers"]
    implementations = {  # as `export_ours` writes them
        "ours_fp32": "serving_graph_streams",
        "ours_bf16": "serving_graph_bfloat16",
        "ours_fp32_tf_function": "serving_graph_streams",
    }
    markdown = serving_summary.summary_markdown(
        records,
        names,
        {"classifier": "/c.h5", "implementations": implementations},
    )
    # Ratio columns for ours_fp32 and ours_bf16 (ours_int8 did not run).
    assert "| ours_fp32 / it | ours_bf16 / it | dev accuracy |" in markdown
    assert "ours_int8 / it" not in markdown
    # ONNX Runtime: bf16 rounds 1.6 and 1.4 -> 1.5; the pipeline's 3.0.
    assert "| 1 | onnxruntime_fp32 | — | 100.0 |" in markdown
    assert "| 1.00 | 1.50 | 0.5000 | 1.0000 |" in markdown
    assert "| 2.00 | 3.00 | 0.5000 | 1.0000 |" in markdown
    # bf16's own row: against ours_fp32 0.67, labels agree on 3 of 4.
    assert "| 0.67 | — | 0.4970 | 0.7500 |" in markdown
    assert (
        "ours_bf16 / onnxruntime_fp32, batch 32: 1.50× (rounds: 1.60, 1.40); "
        "goal ≥1.5×, met." in markdown
    )
    assert (
        "ours_bf16 dev accuracy − ours_fp32's, batch 1: -0.30 points; "
        "goal within ±0.5, met." in markdown
    )
    assert "ours_int8 dev accuracy" not in markdown  # not run
    assert (
        "run as (`served_implementation`): ours_fp32 `serving_graph_streams`, "
        "ours_bf16 `serving_graph_bfloat16`." in markdown
    )
    # Only the exports that served: ours_fp32_tf_function did not run.
    assert "ours_fp32_tf_function `streams`" not in markdown


def test_the_table_shows_ours_fp32_default_with_ours_fp32s_goals():
    """ours_fp32_default (the default export) has its own column of ratios
    and ours_fp32's goals (against ONNX Runtime fp32 and the pipeline), its
    agreement with ours_fp32's labels; the notes name its `serving_graph`
    implementation."""
    records = [
        _record("ours_fp32", 0, 100.0),
        _record("ours_fp32", 1, 100.0),
        _record("ours_fp32_default", 0, 90.0, labels="0111"),
        _record("ours_fp32_default", 1, 110.0, labels="0111"),
        _record("onnxruntime_fp32", 0, 100.0),
        _record("onnxruntime_fp32", 1, 100.0),
        _record("transformers", 0, 50.0),
        _record("transformers", 1, 50.0),
    ]
    names = [n for n in contestants.CONTESTANTS if n != "ours_bf16"]
    implementations = {  # as `export_ours` writes them
        "ours_fp32": "serving_graph_streams",
        "ours_fp32_default": "serving_graph",
        "ours_fp32_tf_function": "serving_graph_streams",
    }
    markdown = serving_summary.summary_markdown(
        records,
        names,
        {"classifier": "/c.h5", "implementations": implementations},
    )
    assert "| ours_fp32 / it | ours_fp32_default / it | dev accuracy |" in (
        markdown
    )
    # Its row: against ours_fp32 1/0.9 and 1/1.1 -> 1.01; 3 of 4 agree.
    assert "| 1 | ours_fp32_default | — | 100.0 |" in markdown
    assert "| 1.01 | — | 0.5000 | 0.7500 |" in markdown
    # ONNX Runtime: 0.9 and 1.1 -> 1.00; the pipeline: 1.8 and 2.2 -> 2.00.
    assert "| 1.00 | 1.00 | 0.5000 | 1.0000 |" in markdown
    assert "| 2.00 | 2.00 | 0.5000 | 1.0000 |" in markdown
    assert (
        "ours_fp32_default / onnxruntime_fp32, batch 1: 1.00× (rounds: "
        "0.90, 1.10); goal ≥1×, met." in markdown
    )
    assert (
        "ours_fp32_default / transformers, batch 32: 2.00× (rounds: 1.80, "
        "2.20); goal ≥2×, met." in markdown
    )
    assert (
        "run as (`served_implementation`): ours_fp32 `serving_graph_streams`, "
        "ours_fp32_default `serving_graph`." in markdown
    )
    # Only the exports that served: ours_fp32_tf_function did not run.
    assert "ours_fp32_tf_function `streams`" not in markdown
    assert serving_summary.OURS_DEFAULT == "ours_fp32_default"


def test_ours_bf16_runs_only_on_a_cpu_with_bfloat16_matmuls():
    """Elsewhere it is skipped, and the table and its goal say why; so are
    the int8 exports where oneDNN's int8 kernel does not run."""
    with on_cpu({"avx2", "avx512_vnni"}):
        assert contestants.skipped_here(["ours_fp32"]) == {}
        skipped = contestants.skipped_here(contestants.CONTESTANTS)
    assert list(skipped) == ["ours_bf16", "ours_bf16_streams"]
    assert skipped["ours_bf16_streams"] == skipped["ours_bf16"]
    assert "avx512_bf16 or amx_bf16" in skipped["ours_bf16"]
    assert "(avx2, avx512_vnni; oneDNN on)" in skipped["ours_bf16"]
    with on_cpu({"avx2"}, onednn=False):
        skipped_off = contestants.skipped_here(contestants.CONTESTANTS)
    assert list(skipped_off) == [
        "ours_int8",
        "ours_int8_calibrated",
        "ours_bf16",
        "ours_bf16_streams",
    ]
    assert "oneDNN int8 kernels" in skipped_off["ours_int8"]
    markdown = serving_summary.summary_markdown(
        [_record("ours_fp32", 0, 100.0)],
        ["ours_fp32", "ours_bf16"],
        {"classifier": "/c.h5", "skipped": skipped},
    )
    assert (
        f"| 1 | ours_bf16 | | skipped: {skipped['ours_bf16']} | | | | | |"
        in markdown
    )
    assert "ours_bf16 / it" not in markdown
    assert (
        "ours_bf16 / onnxruntime_fp32, batch 1: goal ≥1.5×, not measured: "
        "ours_bf16 was skipped on this CPU." in markdown
    )
    for flags in ({"avx512_bf16", "avx512_vnni"}, {"amx_bf16", "amx_int8"}):
        with on_cpu(flags):
            assert contestants.skipped_here(contestants.CONTESTANTS) == {}


def test_our_exports_are_those_the_contestants_serve():
    assert contestants.exports_of(contestants.CONTESTANTS) == [
        "ours_fp32",
        "ours_fp32_default",
        "ours_int8",
        "ours_int8_calibrated",
        "ours_bf16",
        "ours_bf16_streams",
    ]
    assert contestants.exports_of(["ours_fp32_tf_function", "keras_hub"]) == [
        "ours_fp32"
    ]
    assert contestants.exports_of(["ours_bf16", "ours_int8"]) == [
        "ours_int8",
        "ours_bf16",
    ]


def _tiny_classifier():
    """A 2-layer, 3-class `BertClassifier` and its preprocessor (16
    tokens) on a 13-word vocabulary, for the export tests."""
    import keras_bert

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
        "the", "cat", "sat", "on", "mat", "a", "dog", "ran",
    ]  # fmt: skip
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(vocabulary),
        num_layers=2,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=32,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=3)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=16
    )
    return classifier, preprocessor


def test_ours_default_and_bf16_are_exported_and_served_in_a_session(
    tmp_path, monkeypatch
):
    """`export_ours` writes the default float32 export and the bfloat16
    one, the manifest names their implementations (`serving_graph`, the
    default's; `serving_graph_bfloat16`); `load` serves each as ours_fp32
    is served (a C++ Session), with TF Serving's default pools (no
    streams). The default export labels every sentence as the model does
    (float32: top two probabilities at least 1e-3 apart here); the
    bfloat16 one, those where float32's top two are not within bfloat16's
    rounding (0.02) of each other."""
    # The export checks the CPU; the graph runs on any (slower without).
    monkeypatch.setattr(plan, "this_cpu", lambda: _BFLOAT16_CPU)
    classifier, preprocessor = _tiny_classifier()
    rng = np.random.default_rng(0)  # far from uniform probabilities
    classifier.set_weights(
        [rng.normal(0, 0.3, w.shape) for w in classifier.get_weights()]
    )
    ours = ["ours_fp32_default", "ours_bf16"]
    manifest = contestants.export_ours(
        classifier, preprocessor, str(tmp_path), ours, streams=2
    )
    assert manifest["implementations"] == {
        "ours_fp32_default": "serving_graph",
        "ours_bf16": "serving_graph_bfloat16",
    }
    assert manifest["streams"] == {"ours_fp32_default": None, "ours_bf16": None}
    for name in ours:
        assert manifest["variables_bytes"][name] > 0
        assert serving_loaders._thread_counts(name, manifest, 2) == (2, 2)
    texts = [
        "the cat sat on the mat", "a dog ran", "", "the dog", "cat cat",
        "on a mat", "the cat ran on the dog", "sat",
    ]  # fmt: skip
    logits = classifier.predict(preprocessor(texts), verbose=0)
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    top_two = np.sort(probabilities, axis=-1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 0.02
    assert clear.sum() >= 4, top_two  # enough sentences to compare
    assert (top_two[:, 1] - top_two[:, 0]).min() > 1e-3, top_two
    expected = np.argmax(logits, axis=-1)
    predicted = serving_loaders.load("ours_fp32_default", manifest, 16, 2)(
        texts
    )
    np.testing.assert_array_equal(predicted, expected)
    predicted = serving_loaders.load("ours_bf16", manifest, 16, 2)(texts)
    np.testing.assert_array_equal(predicted[clear], expected[clear])


def test_an_unknown_contestant_is_named():
    with pytest.raises(ValueError, match="ours_fp16"):
        serving_loaders.load("ours_fp16", {}, 128, 1)


@pytest.mark.slow
def test_onnx_contestants_match_pytorch(tmp_path):
    """The exported, fused, int8 and static int8 graphs of a tiny random
    BertForSequenceClassification serve what PyTorch computes, on requests
    of other batch sizes and lengths than the export's example."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
        "the", "cat", "sat", "on", "mat", "a", "dog", "ran",
    ]  # fmt: skip
    hf_dir = str(tmp_path / "huggingface")
    config = transformers.BertConfig(
        vocab_size=len(vocabulary),
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=32,
        num_labels=2,
    )
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(hf_dir)
    with open(os.path.join(hf_dir, "vocab.txt"), "w") as f:
        f.write("\n".join(vocabulary) + "\n")
    calibration = ["the cat sat", "a dog ran on the mat", "the dog"] * 12
    manifest = contestants.export_onnx_models(
        hf_dir, str(tmp_path), 2, 8, calibration, 16
    )
    manifest["huggingface"] = hf_dir
    assert manifest["onnx_fused_operators"]["Attention"] == 2
    assert manifest["onnx_fused_operators"]["EmbedLayerNormalization"] == 1

    model = transformers.BertForSequenceClassification.from_pretrained(hf_dir)
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    # The export traced (2, 8): other batch sizes and lengths.
    requests = [["the cat sat"], ["a dog", "the dog ran on a mat the cat sat"]]
    import onnxruntime

    sessions = {
        name: onnxruntime.InferenceSession(
            manifest[name], providers=["CPUExecutionProvider"]
        )
        for name in (
            "onnxruntime_fp32",
            "onnxruntime_int8",
            "onnxruntime_int8_static",
        )
    }
    # Static int8: its MatMuls in QDQ form, calibrated ranges.
    graph = onnx.load(manifest["onnxruntime_int8_static"]).graph
    assert {"QuantizeLinear", "DequantizeLinear", "Attention"} <= {
        node.op_type for node in graph.node
    }
    static = serving_loaders.load("onnxruntime_int8_static", manifest, 16, 1)
    predict = serving_loaders.load("onnxruntime_fp32", manifest, 16, 1)
    for request in requests:
        encoded = tokenizer(request, padding=True, return_tensors="pt")
        with torch.no_grad():
            expected = model(**encoded).logits.numpy()
        np.testing.assert_array_equal(predict(request), np.argmax(expected, -1))
        feed = {k: encoded[k].numpy() for k in contestants.ONNX_INPUTS}
        logits = {
            name: session.run(None, feed)[0]
            for name, session in sessions.items()
        }
        np.testing.assert_allclose(
            logits["onnxruntime_fp32"], expected, atol=1e-5
        )
        # int8 weights (and static activations): close, not equal.
        for name in ("onnxruntime_int8", "onnxruntime_int8_static"):
            np.testing.assert_allclose(logits[name], expected, atol=0.05)
            assert not np.array_equal(logits[name], expected)
        np.testing.assert_array_equal(
            static(request), np.argmax(logits["onnxruntime_int8_static"], -1)
        )


@pytest.mark.slow  # exports a SavedModel
def test_our_contestants_serve_the_streams_export_in_a_session(tmp_path):
    """ours_fp32 (a C++ Session, as TF Serving) gives the model's labels;
    an export with streams runs on one intra-op thread and an inter-op
    thread per stream. (ours_fp32_tf_function sets TensorFlow's global
    thread pools, possible only in a fresh process: not run here.)"""
    from keras_bert.serving import export_saved_model

    classifier, preprocessor = _tiny_classifier()
    path = export_saved_model(
        classifier, preprocessor, str(tmp_path / "ours"), streams=2
    )
    manifest = {
        "ours_fp32": path,
        "ours_fp32_tf_function": path,
        "ours_int8": path,
        "streams": {"ours_fp32": 2, "ours_fp32_tf_function": 2},
    }
    assert serving_loaders._thread_counts("ours_fp32", manifest, 4) == (1, 2)
    assert serving_loaders._thread_counts("ours_int8", manifest, 4) == (4, 4)
    texts = ["the cat sat on the mat", "a dog ran", ""]
    expected = np.argmax(
        classifier.predict(preprocessor(texts), verbose=0), axis=-1
    )
    predict = serving_loaders.load("ours_fp32", manifest, 16, 2)
    np.testing.assert_array_equal(predict(texts), expected)
    np.testing.assert_array_equal(predict(texts[:1]), expected[:1])
