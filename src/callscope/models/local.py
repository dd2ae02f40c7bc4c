"""The embedded model: a GGUF file run in-process by llama-cpp-python.

Greedy decoding (temperature from :class:`Decoding`, 0 by default) with a fixed seed,
``n_threads = os.cpu_count()``, ``n_ctx`` 16384 by default (BFCL multi-turn prompts reach ~8k tokens), the chat template stored in the
GGUF. One ``Llama`` object is kept per model file per process, so a correction loop that
only appends turns re-uses the KV cache of the shared prompt prefix;
``ModelReply.prompt_tokens_evaluated`` reports how many prompt tokens were actually
computed.

``supports_native_tools`` is ``False``: llama-cpp-python 0.3.36 renders ``tools`` into
Qwen's template but returns the model's answer as plain text (it fills ``tool_calls``
only when ``tool_choice`` forces one function through a grammar), and the Qwen2.5-Coder
models answer with bare JSON or a fenced block, so the loop's prompt mode is the honest
path. Passing ``tools`` anyway renders them with the model's own template.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from callscope.errors import ModelError
from callscope.models.base import (
    BackendOptions,
    ChatModel,
    Decoding,
    RequestContext,
    is_context_overflow,
)
from callscope.types import ModelReply

_INSTALL_HINT = 'pip install -e ".[local]"'

_registry_lock = threading.Lock()
_engines: dict[tuple[str, int, int], _Engine] = {}


def llama_cpp_available() -> bool:
    """Whether ``llama_cpp`` can be imported (checked without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def require_llama_cpp() -> None:
    if not llama_cpp_available():
        raise ModelError(
            "the embedded model needs llama-cpp-python, which is not installed. "
            f"Install it with: {_INSTALL_HINT} (it builds from source, a few minutes), "
            "or use another backend (ollama:<model>, openai:<model>).",
            kind="setup",
        )


class _Engine:
    """One loaded ``Llama`` with a lock and a count of prompt tokens it evaluates."""

    def __init__(self, path: Path, n_ctx: int, n_threads: int, seed: int) -> None:
        require_llama_cpp()
        from llama_cpp import Llama  # heavy import, only when a local model is used

        evals: list[int] = []

        def counting_forward(llm: Any, tokens: Any) -> None:
            """llama-cpp's token-evaluation step (``Llama.eval``), counting the tokens it
            actually computes (the part of the prompt not reused from the KV cache)."""
            evals.append(len(tokens))
            Llama.eval(llm, tokens)

        # a subclass whose evaluation step counts; it is not Python's eval of any text
        _CountingLlama = type("_CountingLlama", (Llama,), {"eval": counting_forward})

        self.evals = evals
        self.lock = threading.Lock()
        try:
            self.llm = _CountingLlama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                seed=seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"cannot load GGUF model {path}: {exc}", kind="setup") from exc


def get_engine(path: Path, *, n_ctx: int, n_threads: int, seed: int) -> _Engine:
    """The process-wide engine for this model file and context size (loaded on first use)."""
    key = (str(Path(path).resolve()), int(n_ctx), int(n_threads))
    with _registry_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _Engine(Path(path), n_ctx, n_threads, seed)
            _engines[key] = engine
        return engine


def local_options(extra: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`LocalModel` keyword options among ``load_model``'s options (``n_ctx``,
    ``n_threads``, ``seed``; unset ones are left to the defaults)."""
    return {k: extra[k] for k in ("n_ctx", "n_threads", "seed") if extra.get(k) is not None}


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
        seed: int = 0,
    ) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelError(f"GGUF model file not found: {self.path}", kind="setup")
        require_llama_cpp()
        self.spec = spec or f"gguf:{self.path}"
        self.n_ctx = int(n_ctx)
        self.n_threads = int(n_threads or os.cpu_count() or 1)
        self.seed = int(seed)

    @classmethod
    def from_spec(cls, path: str, options: BackendOptions) -> LocalModel:
        """``gguf:<path>`` (``~`` expanded); options ``n_ctx``, ``n_threads``, ``seed``."""
        return cls(Path(path).expanduser(), spec=options.spec, **local_options(options.extra))

    def engine(self) -> _Engine:
        """Load the weights now (otherwise they load on the first ``chat``)."""
        return get_engine(self.path, n_ctx=self.n_ctx, n_threads=self.n_threads, seed=self.seed)

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        decoding: Decoding | None = None,
        context: RequestContext | None = None,
    ) -> ModelReply:
        decoding = decoding or Decoding()
        engine = self.engine()
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": decoding.temperature,
            "seed": decoding.seed,
            "max_tokens": decoding.max_tokens,
        }
        if tools:
            kwargs["tools"] = tools
        with engine.lock:
            engine.evals.clear()
            start = time.perf_counter()
            try:
                result = engine.llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than n_ctx
                kind = "context_length" if is_context_overflow(str(exc)) else "local"
                raise ModelError(f"{self.spec}: {exc}", kind=kind) from exc
            latency = time.perf_counter() - start
            # The first eval of a completion is the uncached prompt suffix; the rest are
            # one sampled token each.
            evaluated = engine.evals[0] if engine.evals else 0
        message = result["choices"][0]["message"]
        usage = result.get("usage") or {}
        return ModelReply(
            text=message.get("content") or "",
            tool_calls=None,
            prompt_tokens=_int(usage.get("prompt_tokens")),
            completion_tokens=_int(usage.get("completion_tokens")),
            prompt_tokens_evaluated=evaluated,
            latency_s=latency,
        )
