"""The one small interface every model backend implements."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from callscope.models.usage import TokenUsage
from callscope.records.wire import ChatMessage, ChatTool
from callscope.types import ModelReply

_usage_lock = threading.Lock()

#: a server's error text when the prompt does not fit the model's context: OpenAI and vLLM
#: ("This model's maximum context length is N tokens"), llama.cpp's server ("request (N
#: tokens) exceeds the available context size"), llama-cpp-python ("Requested tokens (N)
#: exceed context window of M"); both a context phrase and an overflow word must occur
_CONTEXT_PHRASE = re.compile(r"context[ _-]?(?:length|window|size)", re.IGNORECASE)
_OVERFLOW_WORD = re.compile(r"exceed|maximum|too long", re.IGNORECASE)
#: the error codes / types servers send for it (OpenAI, llama.cpp's server)
CONTEXT_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})


def is_context_overflow(message: str, code: object = None) -> bool:
    """Whether a backend's error (its ``message`` and, where the server sends one, its error
    ``code`` or ``type``) says the prompt is longer than the model's context window: the
    error kind ``context_length``, the model's own limit rather than a backend failure."""
    if isinstance(code, str) and code in CONTEXT_OVERFLOW_CODES:
        return True
    return bool(_CONTEXT_PHRASE.search(message) and _OVERFLOW_WORD.search(message))


@dataclass(frozen=True)
class Decoding:
    """Decoding parameters; part of the response-cache key."""

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 512

    def to_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class RequestContext:
    """Who a request is made for: never part of the request itself.

    ``case_id`` is the benchmark case; ``mode`` the feedback mode of the SAAG loop (``first``
    for the shared attempt 1, then ``binary``/``structured``) or the prompt style of the
    multi-turn driver (``native``/``prompt``); ``attempt`` the 1-based attempt of the loop or
    query number of the conversation; ``turn`` and ``step`` (0-based) where in a conversation
    the query is made (``None`` in the single-call loop).

    Backends that answer from the request alone ignore it; the replay backend looks recorded
    answers up by it. It is not in the response-cache key
    (:func:`callscope.models.cache.request_key`): two requests that differ only in their
    context are the same request.
    """

    case_id: str | None = None
    mode: str | None = None
    attempt: int = 1
    turn: int | None = None
    step: int | None = None


@dataclass(frozen=True)
class BackendOptions:
    """What :func:`callscope.models.registry.load_model` hands every backend factory besides
    the part of the model string after the prefix.

    ``spec`` is the whole model string; ``timeout`` (seconds per request) and ``retries``
    (extra attempts after the first) apply to the HTTP backends; ``extra`` holds the
    backend-specific options (``n_ctx``, ``max_concurrency``, ``source_spec``..., see
    ``load_model``).
    """

    spec: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 120
    retries: int = 3
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelOptions:
    """How a model named by its spec is opened (:func:`callscope.runs.experiment.open_model`,
    the one opener): the connection a backend takes (``base_url``, ``api_key``, ``timeout``
    in seconds per request) and the response cache around it (``cache``: its file, default
    the cache root's; ``use_cache=False``: none, as ``--no-cache``). The record the CLI's
    connection options become once, then passed whole."""

    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    cache: Path | None = None
    use_cache: bool = True


#: a request's messages (OpenAI-style dicts) and tools (``None``: prompt mode)
Messages = list[ChatMessage]
Tools = list[ChatTool] | None


class ChatRequest(NamedTuple):
    """One request to a chat model, as :meth:`ChatModel.chat` takes it: ``messages``, ``tools``
    (``None``: prompt mode), ``decoding`` (``None``: the defaults) and ``context``."""

    messages: Messages
    tools: Tools = None
    decoding: Decoding | None = None
    context: RequestContext | None = None


class ChatModel:
    """A chat model. ``messages`` are OpenAI-style dicts (role/content, plus ``tool_calls``
    on assistant turns and ``tool_call_id``/``name`` on tool turns). ``tools`` are OpenAI-style
    ``[{"type": "function", "function": {name, description, parameters}}]`` or ``None``
    (prompt mode: the registry is already in the system prompt). ``context`` says which case,
    mode and attempt the request answers for (:class:`RequestContext`; ``None``: unknown).
    """

    #: the model string the user gave (``local:qwen2.5-coder-0.5b``, ``ollama:llama3.2``...)
    spec: str = ""
    #: whether the backend has a native ``tools`` field (native mode is then the default)
    supports_native_tools: bool = True
    #: how many requests may run at once (the embedded model: 1)
    max_concurrency: int = 1

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        decoding: Decoding | None = None,
        context: RequestContext | None = None,
    ) -> ModelReply:
        """Answer once. Raise ``callscope.errors.ModelError`` when no answer can be had. The
        one signature of every backend: a backend implements :meth:`answer` (a test double
        may override this)."""
        return self.answer(ChatRequest(messages, tools, decoding, context))

    def answer(self, request: ChatRequest) -> ModelReply:
        """The backend's answer to one :class:`ChatRequest` (what :meth:`chat` was given)."""
        raise NotImplementedError(f"{type(self).__name__} answers no request")

    @property
    def usage(self) -> TokenUsage:
        """Prompt tokens sent and computed and tokens generated by every reply this model
        returned so far (:class:`~callscope.models.usage.TokenUsage`; a run's share is the
        difference of two :meth:`~callscope.models.usage.TokenUsage.copy` taken around it)."""
        with _usage_lock:
            usage = self.__dict__.get("_token_usage")
            if usage is None:
                usage = self.__dict__["_token_usage"] = TokenUsage()
            return usage

    def counted(self, reply: ModelReply) -> ModelReply:
        """Add ``reply`` to :attr:`usage` and return it (every backend's ``chat`` returns
        through it)."""
        usage = self.usage
        with _usage_lock:
            usage.add(reply)
        return reply

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP clients, model weights)."""
