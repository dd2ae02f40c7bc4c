"""Ollama's native chat API (``POST {base}/api/chat``), non-streaming.

The base address comes from the ``base_url`` argument, else ``OLLAMA_HOST`` (a bare
``host:port`` is accepted), else ``http://localhost:11434``. Tool-call arguments travel as
JSON objects both ways (OpenAI-style string arguments are decoded before sending); tool
results are sent as ``{"role": "tool", "content": ..., "tool_name": ...}``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from callscope.models.base import BackendOptions, Decoding, Messages, Tools
from callscope.models.http import (
    HTTPChatModel,
    RetryPolicy,
    ensure_scheme,
    int_or_none,
    normalise_arguments,
    policy_from_opts,
)

DEFAULT_OLLAMA = "http://localhost:11434"


def ollama_base(base_url: str | None) -> str:
    """The server address to use (argument, then ``OLLAMA_HOST``, then the default)."""
    return ensure_scheme(base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA)


def _object_arguments(arguments: Any) -> dict[str, Any]:
    """Arguments as Ollama wants them: an object (anything that is not one becomes ``{}``)."""
    decoded = normalise_arguments(arguments)
    return decoded if isinstance(decoded, dict) else {}


def to_ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Map OpenAI-style messages to Ollama's.

    Assistant ``tool_calls`` keep only ``function.{name, arguments}`` with object arguments
    (an argument string that is not a JSON object becomes ``{}``: Ollama rejects strings).
    A tool result's ``tool_name`` is its ``name``, else the name of the assistant call whose
    ``id`` matches its ``tool_call_id``.
    """
    names_by_id: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        content = msg.get("content")
        item: dict[str, Any] = {"role": role, "content": "" if content is None else content}
        if role == "assistant" and msg.get("tool_calls"):
            calls = []
            for tc in msg["tool_calls"]:
                fn = tc.get("function", tc)
                name = fn.get("name", "")
                if tc.get("id"):
                    names_by_id[str(tc["id"])] = name
                calls.append(
                    {
                        "function": {
                            "name": name,
                            "arguments": _object_arguments(fn.get("arguments")),
                        }
                    }
                )
            item["tool_calls"] = calls
        elif role == "tool":
            name = (
                msg.get("name")
                or msg.get("tool_name")
                or names_by_id.get(str(msg.get("tool_call_id", "")), "")
            )
            if not isinstance(item["content"], str):
                item["content"] = json.dumps(item["content"])
            if name:
                item["tool_name"] = name
        out.append(item)
    return out


class OllamaModel(HTTPChatModel):
    """An Ollama model by name (``ollama:<model>``). Thread-safe; no cap on requests at
    once unless ``max_concurrency`` is given (Ollama queues parallel requests per model
    beyond its ``OLLAMA_NUM_PARALLEL``). Token counts are Ollama's
    ``prompt_eval_count``, ``eval_count`` and ``prompt_eval_cached_count``."""

    BACKEND = "ollama"
    EXAMPLE_MODEL = "qwen2.5-coder:1.5b"
    MESSAGE_PATH = "message"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        policy: RetryPolicy | None = None,
        max_concurrency: int | None = None,
        num_ctx: int | None = None,
    ) -> None:
        super().__init__(
            model, base=ollama_base(base_url), policy=policy, max_concurrency=max_concurrency
        )
        self.num_ctx = num_ctx

    @classmethod
    def from_spec(cls, name: str, options: BackendOptions) -> OllamaModel:
        """``ollama:<name>``; options ``max_concurrency`` (default: no cap) and ``num_ctx``."""
        return cls(
            name,
            base_url=options.base_url,
            policy=policy_from_opts(options.timeout, options.retries, options.extra),
            max_concurrency=options.extra.get("max_concurrency"),
            num_ctx=options.extra.get("num_ctx"),
        )

    def _endpoint(self, base: str) -> str:
        return f"{base}/api/chat"

    def _payload(self, messages: Messages, tools: Tools, decoding: Decoding) -> dict[str, Any]:
        """The JSON body sent to ``/api/chat``."""
        options: dict[str, Any] = {
            "temperature": decoding.temperature,
            "seed": decoding.seed,
            "num_predict": decoding.max_tokens,
        }
        if self.num_ctx:
            options["num_ctx"] = int(self.num_ctx)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_ollama_messages(messages),
            "stream": False,
            "options": options,
        }
        if tools:
            body["tools"] = tools
        return body

    def _usage(self, data: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
        return (
            int_or_none(data.get("prompt_eval_count")),
            int_or_none(data.get("eval_count")),
            int_or_none(data.get("prompt_eval_cached_count")),
        )
