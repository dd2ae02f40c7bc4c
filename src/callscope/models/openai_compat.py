"""OpenAI-compatible chat completions (``POST {base}/chat/completions``).

Works with OpenAI, vLLM, llama.cpp's ``llama-server --jinja``, LM Studio and Ollama's
``/v1``. The base comes from the ``base_url`` argument, else ``OPENAI_BASE_URL``, else
``https://api.openai.com/v1``; the key from the ``api_key`` argument, else
``OPENAI_API_KEY`` (no ``Authorization`` header when neither is set). Tool-call arguments
are sent and received as JSON strings; a received string that is not a JSON object is kept
as the raw string.
"""

from __future__ import annotations

import os
from typing import Any

from callscope.core.jsonl import dumps_safe
from callscope.models.base import BackendOptions, Decoding, Messages, Tools
from callscope.models.http import (
    HTTPChatModel,
    RetryPolicy,
    ensure_scheme,
    int_or_none,
    policy_from_opts,
)

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
                calls.append(
                    {
                        "id": str(tc.get("id") or f"call_{i}_{j}"),
                        "type": "function",
                        "function": {
                            "name": fn.get("name", ""),
                            "arguments": args
                            if isinstance(args, str)
                            else dumps_safe(args, mark=False),
                        },
                    }
                )
            item["tool_calls"] = calls
            if item.get("content") is None:
                item["content"] = ""
        elif msg.get("role") == "tool" and not isinstance(msg.get("content"), str):
            item["content"] = dumps_safe(msg.get("content"), mark=False)
        out.append(item)
    return out


class OpenAICompatModel(HTTPChatModel):
    """A model behind an OpenAI-compatible endpoint (``openai:<model>``). Thread-safe.
    Token counts are ``usage.prompt_tokens``, ``usage.completion_tokens`` and
    ``usage.prompt_tokens_details.cached_tokens``."""

    BACKEND = "openai"
    EXAMPLE_MODEL = "gpt-4o-mini"
    MESSAGE_PATH = "choices.0.message"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        policy: RetryPolicy | None = None,
        max_concurrency: int | None = None,
        max_tokens_field: str = "max_tokens",
    ) -> None:
        super().__init__(
            model, base=openai_base(base_url), policy=policy, max_concurrency=max_concurrency
        )
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.max_tokens_field = max_tokens_field

    @classmethod
    def from_spec(cls, name: str, options: BackendOptions) -> OpenAICompatModel:
        """``openai:<name>``; options ``max_concurrency`` (default: no cap) and
        ``max_tokens_field`` (default ``max_tokens``)."""
        return cls(
            name,
            base_url=options.base_url,
            api_key=options.api_key,
            policy=policy_from_opts(options.timeout, options.retries, options.extra),
            max_concurrency=options.extra.get("max_concurrency"),
            max_tokens_field=str(options.extra.get("max_tokens_field") or "max_tokens"),
        )

    def _endpoint(self, base: str) -> str:
        return f"{base}/chat/completions"

    def _payload(self, messages: Messages, tools: Tools, decoding: Decoding) -> dict[str, Any]:
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

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _usage(self, data: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        details = usage.get("prompt_tokens_details")
        cached = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
        return (
            int_or_none(usage.get("prompt_tokens")),
            int_or_none(usage.get("completion_tokens")),
            cached,
        )
