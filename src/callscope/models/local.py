"""The embedded model: a GGUF file run in-process by llama-cpp-python.

Greedy decoding (temperature from :class:`Decoding`, 0 by default) with a fixed seed,
``n_threads = os.cpu_count()`` (``$CALLSCOPE_THREADS`` sets another default), ``n_ctx``
16384 by default (BFCL multi-turn prompts reach ~8k tokens), ``n_batch`` 512 (llama.cpp's
prompt chunk: ``exact`` re-use below works on its grid), the chat template stored in the
GGUF. One ``Llama`` object is kept per model file per process.

No prompt prefix is computed twice while its state fits the bound (issue 31): llama-cpp-python
re-uses the KV cache of the prefix a prompt shares with the live context (what it computed
last); on top of that the engine keeps, per model, the KV state of the prefixes worth keeping
(the first message, i.e. the system prompt with its registry or function documentation, and a
live context a diverging prompt is about to overwrite) and restores the one sharing the
longest prefix instead of recomputing it (:class:`~callscope.models.llama_engine.Engine`,
:mod:`callscope.models.prefix_cache`). The bound is ``prefix_cache_mb`` (else
``$CALLSCOPE_PREFIX_CACHE_MB``, else 1024 MiB; 0: off); ``kv_reuse`` ``"last"`` keeps only
llama-cpp-python's own re-use, ``"none"`` computes every prompt from its first token. Greedy
answers of ``prefix`` and ``last`` can differ in the last bits from those of ``none`` on long
conversations: re-use carries the KV cells of generated tokens (computed one at a time) and of
a new message computed as one small batch into the next prompt, where computing it whole puts
them inside 512-token chunks, and llama.cpp's numbers depend on the batch size (measured on
``calibrate``: some emissions differed, no verdict did). ``"exact"`` re-uses only whole chunks
and gives ``none``'s answers token for token (:meth:`~callscope.models.llama_engine.Engine._before_prompt`;
``tests/test_local_prefix_cache.py``), at about twice ``prefix``'s time on ``calibrate``
(``$CALLSCOPE_KV_REUSE`` sets the default mode).
``ModelReply.prompt_tokens_evaluated`` reports how many prompt tokens were actually computed,
and every reply is counted in :attr:`~callscope.models.base.ChatModel.usage`.

Why llama.cpp's per-sequence state rather than llama-cpp-python's ``LlamaRAMCache`` /
``save_state``: those copy the logits buffer with every state (``n_batch`` x vocabulary floats,
311 MB for Qwen's 151,936-token vocabulary) and do not count it against their bound, and the
cache saves the whole context after every completion (keyed by prompt + answer), not the
shared prefix; a sequence state is the KV cells alone (12 KiB per token for the 0.5B, 28 KiB
for the 1.5B), saved only where a prefix is worth keeping.

``supports_native_tools`` is ``False``: llama-cpp-python 0.3.36 renders ``tools`` into
Qwen's template but returns the model's answer as plain text (it fills ``tool_calls``
only when ``tool_choice`` forces one function through a grammar), and the Qwen2.5-Coder
models answer with bare JSON or a fenced block, so the loop's prompt mode is the honest
path. Passing ``tools`` anyway renders them with the model's own template.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from callscope.core.text import utf8_safe
from callscope.errors import ConfigError, ModelError
from callscope.models.base import (
    BackendOptions,
    ChatModel,
    ChatRequest,
    Decoding,
    is_context_overflow,
)
from callscope.models.llama_engine import Engine, get_engine, loaded_engine, require_llama_cpp
from callscope.models.prefix_cache import PrefixStats, prefix_cache_bytes
from callscope.types import ModelReply

#: how a prompt re-uses earlier work: ``prefix`` (kept prefix states restored, and the live
#: context's shared prefix), ``last`` (only the live context's shared prefix: llama-cpp-python's
#: own behaviour), ``exact`` (as ``prefix``, but only whole ``n_batch`` chunks of earlier
#: prompts: greedy answers bit for bit those of ``none``), ``none`` (every prompt computed from
#: its first token; for comparisons)
KV_REUSE_MODES = ("prefix", "last", "exact", "none")
#: the environment variable that sets the default ``kv_reuse``
KV_REUSE_ENV = "CALLSCOPE_KV_REUSE"
#: the environment variable that sets the default ``n_threads`` (else ``os.cpu_count()``): a
#: process sharing the machine with other work (a test worker beside another) gives llama.cpp
#: fewer threads than cores, since its threads wait for each other at every step and one that
#: loses its core stalls the rest
THREADS_ENV = "CALLSCOPE_THREADS"
_OPTIONS = ("n_ctx", "n_threads", "n_batch", "seed", "prefix_cache_mb", "kv_reuse")


def local_options(extra: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`LocalModel` keyword options among ``load_model``'s options (``n_ctx``,
    ``n_threads``, ``n_batch``, ``seed``, ``prefix_cache_mb``, ``kv_reuse``; unset ones are
    left to the defaults)."""
    return {k: extra[k] for k in _OPTIONS if extra.get(k) is not None}


def _threads_from_env() -> int | None:
    """:data:`THREADS_ENV` as a positive thread count (unset or empty: ``None``)."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"${THREADS_ENV} must be a positive number of threads, not {text!r}")
    return int(text)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


class LocalModel(ChatModel):
    """A GGUF model run in-process (``local:<name>`` or ``gguf:<path>``)."""

    supports_native_tools = False
    max_concurrency = 1

    def __init__(
        self,
        path: str | Path,
        *,
        spec: str | None = None,
        n_ctx: int = 16384,
        n_threads: int | None = None,
        n_batch: int = 512,
        seed: int = 0,
        prefix_cache_mb: float | None = None,
        kv_reuse: str | None = None,
    ) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelError(f"GGUF model file not found: {self.path}", kind="setup")
        require_llama_cpp()
        self.spec = spec or f"gguf:{self.path}"
        self.n_ctx = int(n_ctx)
        self.n_threads = int(n_threads or _threads_from_env() or os.cpu_count() or 1)
        self.n_batch = int(n_batch)
        if self.n_batch < 1:
            raise ConfigError(f"n_batch must be a positive number of tokens, not {n_batch!r}")
        self.seed = int(seed)
        if kv_reuse is None:
            kv_reuse = os.environ.get(KV_REUSE_ENV) or "prefix"
        if kv_reuse not in KV_REUSE_MODES:
            raise ConfigError(
                f"kv_reuse {kv_reuse!r} is not one of {', '.join(KV_REUSE_MODES)}"
                f" (the option, or ${KV_REUSE_ENV})"
            )
        self.kv_reuse = kv_reuse
        #: the bound of the kept prefix states in bytes (``prefix_cache_mb`` MiB, else
        #: ``$CALLSCOPE_PREFIX_CACHE_MB``, else the default; 0: none kept)
        self.prefix_cache_bytes = prefix_cache_bytes(prefix_cache_mb)

    @classmethod
    def from_spec(cls, path: str, options: BackendOptions) -> LocalModel:
        """``gguf:<path>`` (``~`` expanded); options ``n_ctx``, ``n_threads``, ``n_batch``, ``seed``,
        ``prefix_cache_mb``, ``kv_reuse``."""
        return cls(Path(path).expanduser(), spec=options.spec, **local_options(options.extra))

    def engine(self) -> Engine:
        """Load the weights now (otherwise they load on the first ``chat``)."""
        return get_engine(
            self.path,
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            seed=self.seed,
            cache_bytes=self.prefix_cache_bytes,
            n_batch=self.n_batch,
        )

    def prefix_stats(self) -> PrefixStats | None:
        """What the engine's kept prefix states did so far (shared by every ``LocalModel`` of
        the same model file in this process); ``None`` before the weights are loaded."""
        engine = loaded_engine(
            self.path, n_ctx=self.n_ctx, n_threads=self.n_threads, n_batch=self.n_batch
        )
        return engine.states.stats if engine is not None else None

    def answer(self, request: ChatRequest) -> ModelReply:
        messages, tools, decoding, context = request
        decoding = decoding or Decoding()
        engine = self.engine()
        kwargs: dict[str, Any] = {
            "messages": utf8_safe(messages),
            "temperature": decoding.temperature,
            "seed": decoding.seed,
            "max_tokens": decoding.max_tokens,
        }
        if tools:
            kwargs["tools"] = utf8_safe(tools)
        with engine.lock:
            engine.set_mode(self.kv_reuse)
            start = time.perf_counter()
            try:
                result = engine.llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than n_ctx
                kind = "context_length" if is_context_overflow(str(exc)) else "local"
                raise ModelError(f"{self.spec}: {exc}", kind=kind) from exc
            latency = time.perf_counter() - start
            evaluated = engine.computed
        message = result["choices"][0]["message"]
        usage = result.get("usage") or {}
        return self.counted(
            ModelReply(
                text=message.get("content") or "",
                tool_calls=None,
                prompt_tokens=_int(usage.get("prompt_tokens")),
                completion_tokens=_int(usage.get("completion_tokens")),
                prompt_tokens_evaluated=evaluated,
                latency_s=latency,
            )
        )
