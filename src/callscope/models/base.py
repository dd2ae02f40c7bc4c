"""The one small interface every model backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from callscope.types import ModelReply


@dataclass(frozen=True)
class Decoding:
    """Decoding parameters; part of the response-cache key."""

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 512

    def to_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}


class ChatModel(ABC):
    """A chat model. ``messages`` are OpenAI-style dicts (role/content, plus ``tool_calls``
    on assistant turns and ``tool_call_id``/``name`` on tool turns). ``tools`` are OpenAI-style
    ``[{"type": "function", "function": {name, description, parameters}}]`` or ``None``
    (prompt mode: the registry is already in the system prompt).
    """

    #: the model string the user gave (``local:qwen2.5-coder-0.5b``, ``ollama:llama3.2``...)
    spec: str = ""
    #: whether the backend has a native ``tools`` field (native mode is then the default)
    supports_native_tools: bool = True
    #: how many requests may run at once (the embedded model: 1)
    max_concurrency: int = 1

    @abstractmethod
    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        decoding: Decoding | None = None,
    ) -> ModelReply:
        """Answer once. Raise ``callscope.types.ModelError`` when no answer can be had."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP clients, model weights)."""
