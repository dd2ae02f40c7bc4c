"""OpenAI-compatible chat completions (``POST {base}/chat/completions``).

Works with OpenAI, vLLM, llama.cpp's ``llama-server --jinja``, LM Studio and Ollama's
``/v1``. The base comes from the ``base_url`` argument, else ``OPENAI_BASE_URL``, else
``https://api.openai.com/v1``; the key from the ``api_key`` argument, else
``OPENAI_API_KEY`` (no ``Authorization`` header when neither is set). Tool-call arguments
are sent and received as JSON strings; a received string that is not a JSON object is kept
as the raw string.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx

from callscope.models.base import ChatModel, Decoding
from callscope.models.http import (
    RetryPolicy,
    ensure_scheme,
    evaluated_tokens,
    int_or_none,
    parse_tool_calls,
    post_json,
    require,
)
from callscope.types import ModelReply

DEFAULT_OPENAI = "https://api.openai.com/v1"


def openai_base(base_url: str | None) -> str:
    """The API root to use (argument, then ``OPENAI_BASE_URL``, then OpenAI's)."""
    return ensure_scheme(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI)


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Make messages valid for the OpenAI wire format: assistant ``tool_calls`` get
    ``type``/``id`` and string ``arguments``; tool turns get a string ``content``."""
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        item = dict(msg)
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            calls = []
            for j, tc in enumerate(msg["tool_calls"]):
                fn = tc.get("function", tc)
                args = fn.get("arguments", {})
                calls.append({
                    "id": str(tc.get("id") or f"call_{i}_{j}"),
                    "type": "function",
                    "function": {
                        "name": fn.get("name", ""),
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                })
            item["tool_calls"] = calls
            if item.get("content") is None:
                item["content"] = ""
        elif msg.get("role") == "tool" and not isinstance(msg.get("content"), str):
            item["content"] = json.dumps(msg.get("content"))
        out.append(item)
    return out


class OpenAICompatModel(ChatModel):
    """A model behind an OpenAI-compatible endpoint (``openai:<model>``). Thread-safe."""

    supports_native_tools = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        policy: RetryPolicy | None = None,
        max_concurrency: int = 4,
        max_tokens_field: str = "max_tokens",
    ) -> None:
        if not model:
            raise ValueError("openai: needs a model name, e.g. openai:gpt-4o-mini")
        self.model = model
        self.spec = f"openai:{model}"
        self.base = openai_base(base_url)
        self.url = f"{self.base}/chat/completions"
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.policy = policy or RetryPolicy()
        self.max_concurrency = max(1, int(max_concurrency))
        self.max_tokens_field = max_tokens_field
        self._client = httpx.Client()

    def build_request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        decoding: Decoding,
    ) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "temperature": decoding.temperature,
            "seed": decoding.seed,
            self.max_tokens_field: decoding.max_tokens,
        }
        if tools:
            body["tools"] = tools
        return body

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        decoding: Decoding | None = None,
    ) -> ModelReply:
        body = self.build_request(messages, tools, decoding or Decoding())
        start = time.perf_counter()
        data = post_json(self._client, self.url, body, backend="openai", policy=self.policy,
                         headers=self.headers())
        latency = time.perf_counter() - start
        message = require(data, "choices.0.message", dict, backend="openai", url=self.url)
        content = message.get("content")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt_tokens = int_or_none(usage.get("prompt_tokens"))
        details = usage.get("prompt_tokens_details")
        cached = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
        return ModelReply(
            text=content if isinstance(content, str) else "",
            tool_calls=parse_tool_calls(message.get("tool_calls"), backend="openai",
                                        url=self.url),
            prompt_tokens=prompt_tokens,
            completion_tokens=int_or_none(usage.get("completion_tokens")),
            prompt_tokens_evaluated=evaluated_tokens(prompt_tokens, cached),
            latency_s=latency,
        )

    def close(self) -> None:
        self._client.close()
