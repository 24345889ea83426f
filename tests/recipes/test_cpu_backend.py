"""recipes/cpu_backend.py: a recipe turns oneDNN on where TensorFlow would
leave it off, says so, and never overrides the user's setting; the library
only hints (`keras_bert.training.cpu_backend`)."""

import cpu_backend

from keras_bert.training import cpu_backend as library

AVX2 = {"fpu", "sse4_2", "avx", "avx2", "fma"}  # e.g. AMD EPYC Zen 2/3


def test_on_an_avx2_only_cpu_the_recipe_turns_onednn_on():
    environ = {}
    message = cpu_backend.prefer_onednn(environ, AVX2, "x86_64")
    assert environ == {"TF_ENABLE_ONEDNN_OPTS": "1"}
    assert "sets TF_ENABLE_ONEDNN_OPTS=1" in message
    assert "TF_ENABLE_ONEDNN_OPTS=0 to keep" in message


def test_where_tensorflow_turns_it_on_itself_nothing_changes():
    for flag in cpu_backend.ONEDNN_DEFAULT_FLAGS:
        environ = {}
        assert (
            cpu_backend.prefer_onednn(environ, AVX2 | {flag}, "x86_64") is None
        )
        assert environ == {}


def test_the_users_setting_and_other_machines_are_left_alone():
    for value in ("0", "1", "false"):
        environ = {"TF_ENABLE_ONEDNN_OPTS": value}
        assert cpu_backend.prefer_onednn(environ, AVX2, "x86_64") is None
        assert environ == {"TF_ENABLE_ONEDNN_OPTS": value}
    for flags, machine in ((AVX2, "aarch64"), (set(), "x86_64")):
        environ = {}
        assert cpu_backend.prefer_onednn(environ, flags, machine) is None
        assert environ == {}


def test_this_cpus_flags_are_read():
    flags = cpu_backend.cpu_flags()
    assert "sse2" in flags or not flags  # x86-64 Linux, or no /proc
    assert cpu_backend.cpu_flags("/nonexistent/cpuinfo") == set()


def test_the_recipes_and_the_library_read_tensorflows_rule_alike():
    assert cpu_backend.ONEDNN_DEFAULT_FLAGS == library.ONEDNN_DEFAULT_FLAGS


def test_the_library_hints_where_a_recipe_would_turn_onednn_on():
    hint = library.onednn_hint(enabled=False, flags=AVX2, machine="x86_64")
    assert "TF_ENABLE_ONEDNN_OPTS=1" in hint
    # Not where oneDNN is on, where the user turned it off on a CPU that
    # TensorFlow would run it on, nor off x86.
    for enabled, flags, machine in (
        (True, AVX2, "x86_64"),
        (False, AVX2 | {"avx512_vnni"}, "x86_64"),
        (False, AVX2, "aarch64"),
    ):
        assert library.onednn_hint(enabled, flags, machine) is None
