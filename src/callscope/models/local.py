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
longest prefix instead of recomputing it (:class:`_Engine`,
:mod:`callscope.models.prefix_cache`). The bound is ``prefix_cache_mb`` (else
``$CALLSCOPE_PREFIX_CACHE_MB``, else 1024 MiB; 0: off); ``kv_reuse`` ``"last"`` keeps only
llama-cpp-python's own re-use, ``"none"`` computes every prompt from its first token. Greedy
answers of ``prefix`` and ``last`` can differ in the last bits from those of ``none`` on long
conversations: re-use carries the KV cells of generated tokens (computed one at a time) and of
a new message computed as one small batch into the next prompt, where computing it whole puts
them inside 512-token chunks, and llama.cpp's numbers depend on the batch size (measured on
``calibrate``: some emissions differed, no verdict did). ``"exact"`` re-uses only whole chunks
and gives ``none``'s answers token for token (:meth:`_Engine._before_prompt`;
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

import ctypes
import importlib.util
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from callscope.core.text import utf8_safe
from callscope.errors import ConfigError, ModelError
from callscope.models.base import (
    BackendOptions,
    ChatModel,
    ChatRequest,
    Decoding,
    is_context_overflow,
)
from callscope.models.prefix_cache import (
    MIN_KEPT_TOKENS,
    Kind,
    PrefixStates,
    PrefixStats,
    common_prefix,
    prefix_cache_bytes,
)
from callscope.types import ModelReply

_INSTALL_HINT = 'pip install -e ".[local]"'

_registry_lock = threading.Lock()
_engines: dict[tuple[str, int, int, int], _Engine] = {}


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
#: the token that opens a chat message in the embedded models' template (ChatML, Qwen) and in
#: other common GGUF templates (Llama 3, Gemma): the first that is one token marks where a
#: prompt's first message (the system prompt with its registry or documentation) ends
_MESSAGE_OPENERS = (b"<|im_start|>", b"<|start_header_id|>", b"<start_of_turn>")


class _Engine:
    """One loaded ``Llama`` with a lock, the prompt-prefix states it keeps
    (:class:`~callscope.models.prefix_cache.PrefixStates`) and what the last request computed.

    Per prompt (:meth:`_before_prompt`, called by llama-cpp-python's ``generate``): a live
    context the prompt diverges from is kept (a ``tail``: its conversation may go on later);
    the kept state sharing the longest prefix with the prompt is restored when it shares more
    than the live context; and when the prompt's first message (the system prompt) is not kept
    yet, its state is kept as it is computed (an ``anchor``: :meth:`_eval` splits the
    evaluation there). States are llama.cpp's per-sequence KV cells
    (``llama_state_seq_get_data``), without logits: a restored prefix is always followed by at
    least one evaluated token (llama-cpp-python re-evaluates the last prompt token when the
    whole prompt is restored), so sampling reads fresh logits."""

    def __init__(
        self, path: Path, n_ctx: int, n_threads: int, seed: int, cache_bytes: int, n_batch: int
    ) -> None:
        require_llama_cpp()
        import llama_cpp  # heavy import, only when a local model is used
        from llama_cpp import Llama

        self._lib = llama_cpp
        engine = self

        def generate(llm: Any, tokens: Any, *args: Any, **kwargs: Any) -> Any:
            engine._before_prompt(list(tokens))
            return engine._recording(Llama.generate(llm, tokens, *args, **kwargs))

        def counting_forward(llm: Any, tokens: Any) -> None:
            """llama-cpp's token-evaluation step (``Llama.eval``), with the count of what it
            actually computes and the anchor's state kept on the way."""
            engine._eval(tokens)

        # a subclass whose evaluation step counts; it is not Python's eval of any text
        _KeepingLlama = type(
            "_KeepingLlama", (Llama,), {"eval": counting_forward, "generate": generate}
        )
        self._llama_eval = Llama.eval
        self.lock = threading.Lock()
        self.states = PrefixStates(cache_bytes)
        self.mode = "prefix"
        #: the last request: its prompt tokens, their count, where its computing started,
        #: the token ids it generated
        self.prompt: list[int] = []
        self.prompt_len = 0
        self.first_n_past: int | None = None
        self.generated: list[int] = []
        self._anchor: int | None = None
        #: ``exact``: where the live context's whole ``n_batch`` chunks end (the last prompt's
        #: length, rounded down to a multiple of ``n_batch``)
        self._whole_end = 0
        try:
            self.llm = _KeepingLlama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                n_batch=n_batch,
                seed=seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"cannot load GGUF model {path}: {exc}", kind="setup") from exc
        self._opener = self._find_opener()

    def _find_opener(self) -> int | None:
        for text in _MESSAGE_OPENERS:
            ids = self.llm.tokenize(text, add_bos=False, special=True)
            if len(ids) == 1:
                return int(ids[0])
        return None

    @property
    def computed(self) -> int:
        """Prompt tokens the last request computed (0: the whole prompt was live)."""
        if self.first_n_past is None:
            return 0
        return max(0, self.prompt_len - self.first_n_past)

    def anchor_at(self, tokens: list[int]) -> int | None:
        """Where the prompt's first message ends (the second message opener), if it does."""
        if self._opener is None:
            return None
        seen = 0
        for i, tok in enumerate(tokens):
            if tok == self._opener:
                seen += 1
                if seen == 2:
                    return i
        return None

    def _recording(self, gen: Iterator[int]) -> Iterator[int]:
        for token in gen:
            self.generated.append(int(token))
            yield token

    def set_mode(self, mode: str) -> None:
        """Use ``mode`` (one of :data:`KV_REUSE_MODES`) from the next prompt on. States kept
        in ``exact`` mode and in the others are not interchangeable: switching between them
        drops the kept states."""
        if (mode == "exact") != (self.mode == "exact"):
            self.states.clear()
            self._whole_end = 0
        self.mode = mode

    def _before_prompt(self, tokens: list[int]) -> None:
        """Before llama-cpp-python computes ``tokens``: keep the live context when the prompt
        diverges from it (a ``tail``), restore the kept state sharing more than the live
        context, and mark the first message for keeping (an ``anchor``, :meth:`_eval`).

        ``exact`` does the same on the ``n_batch`` grid, re-using only what computing the prompt
        whole would compute the same way.

        llama.cpp's numbers for a token depend on the size of the batch it is computed in
        (measured on the 0.5B: a token computed alone, as in generation, or in a batch of 2,
        4, 31 or 33 tokens gets other logits bits than inside a 512-token chunk; 8, 16, 32,
        64 and any split of a prompt into ``n_batch`` chunks on the grid get the same). A prompt
        computed whole (``none``) is cut into ``n_batch`` chunks from its first token. So this
        mode starts computing at a multiple of ``n_batch`` and re-uses only whole chunks of
        earlier prompts (live or kept): never the last prompt's partial chunk nor the tokens
        it generated. Every chunk computed is then a chunk ``none`` computes, with the same
        cells before it: the same bits, at the cost of up to ``n_batch - 1`` tokens computed
        again per prompt, plus the generated ones."""
        self.prompt = tokens
        self.prompt_len = len(tokens)
        self.first_n_past = None
        self.generated = []
        self._anchor = None
        llm = self.llm
        if self.mode == "none":
            llm.reset()
            return
        exact = self.mode == "exact"
        keep = self.mode != "last" and self.states.capacity_bytes > 0
        if not (exact or keep):
            return
        # ``exact`` works on the ``n_batch`` grid, the other modes on tokens
        grid = int(llm.n_batch) if exact else 1
        prompt = np.asarray(tokens, dtype=np.int64)
        # the live tokens this prompt may re-use: all of them, or in ``exact`` the last prompt's
        # whole chunks
        live = min(int(llm.n_tokens), self._whole_end) if exact else int(llm.n_tokens)
        usable = live // grid * grid
        shared = common_prefix(np.asarray(llm.input_ids[:usable]), prompt)
        # at least the last prompt token is computed (llama-cpp-python re-evaluates it when
        # the whole prompt is live), in ``exact`` in a chunk that starts on the grid
        limit = (len(tokens) - 1) // grid * grid
        start = min(shared, limit) // grid * grid
        if (
            keep
            and usable - start >= MIN_KEPT_TOKENS
            and llm.input_ids[:usable].tolist() not in self.states
        ):
            self._cut(usable)
            self._save("tail")  # this prompt overwrites it: keep it for its conversation
        hit = self.states.best(prompt) if keep else None
        if hit is not None and min(hit[2], limit) // grid * grid > start:
            kept, state, shared_kept = hit
            if self._restore(kept, state):
                start = min(shared_kept, limit) // grid * grid
                self.states.stats.restored += 1
                self.states.stats.restored_tokens += start
        if exact:
            self._cut(start)
            self._whole_end = len(tokens) // grid * grid
        anchor = self.anchor_at(tokens)
        if not keep or anchor is None:
            return
        cut = anchor // grid * grid
        if cut < max(MIN_KEPT_TOKENS, grid) or tokens[:cut] in self.states:
            return
        if start < cut:
            self._anchor = cut  # kept as it is computed (:meth:`_eval`)
        elif start - cut <= MIN_KEPT_TOKENS:
            # the first message is live but not kept (a new conversation after another on
            # the same system prompt): cut the live context back to it and keep it; the
            # few tokens cut are computed again
            self._cut(cut)
            self._save("anchor")

    def _cut(self, n: int) -> None:
        """Cut the live context back to its first ``n`` tokens."""
        llm = self.llm
        if int(llm.n_tokens) > n:
            llm._ctx.kv_cache_seq_rm(-1, n, -1)
            llm.n_tokens = n
            llm._requires_eval = True  # the last logits are not the live context's

    def _eval(self, tokens: Any) -> None:
        llm = self.llm
        start = int(llm.n_tokens)
        if self.first_n_past is None:
            self.first_n_past = start
        cut = self._anchor
        if cut is not None and start < cut <= start + len(tokens):
            k = cut - start
            self._llama_eval(llm, tokens[:k])
            self._anchor = None
            self._save("anchor")
            if k < len(tokens):
                self._llama_eval(llm, tokens[k:])
            return
        self._llama_eval(llm, tokens)

    def _save(self, kind: Kind) -> None:
        """Keep the live context (its ``n_tokens`` tokens) as a ``kind`` entry."""
        lib, llm = self._lib, self.llm
        t0 = time.perf_counter()
        ctx = llm._ctx.ctx
        size = int(lib.llama_state_seq_get_size(ctx, 0))
        if size > self.states.capacity_bytes:
            self.states.stats.refused += 1
            return
        buf = bytearray(size)
        view = (ctypes.c_uint8 * size).from_buffer(buf)
        got = int(lib.llama_state_seq_get_data(ctx, view, size, 0))
        del view
        if got <= 0 or got > size:
            return
        del buf[got:]
        self.states.put(np.array(llm.input_ids[: llm.n_tokens]), buf, kind)
        self.states.stats.save_s += time.perf_counter() - t0

    def _restore(self, tokens: np.ndarray, state: Any) -> bool:
        """Load a kept state as the live context; ``False`` (context cleared) if llama.cpp
        refuses it."""
        lib, llm = self._lib, self.llm
        t0 = time.perf_counter()
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        array = ctypes.c_uint8 * len(state)
        # kept states are bytearrays: read in place, no copy
        view = (
            array.from_buffer(state)
            if isinstance(state, bytearray)
            else array.from_buffer_copy(state)
        )
        ok = int(lib.llama_state_seq_set_data(llm._ctx.ctx, view, len(state), 0)) == len(state)
        del view
        n = len(tokens)
        if ok:
            llm.input_ids[:n] = tokens
            llm.n_tokens = n
        else:
            llm.reset()
        llm._requires_eval = True
        self.states.stats.restore_s += time.perf_counter() - t0
        return ok


def _engine_key(path: Path, n_ctx: int, n_threads: int, n_batch: int) -> tuple[str, int, int, int]:
    return (str(Path(path).resolve()), int(n_ctx), int(n_threads), int(n_batch))


def get_engine(
    path: Path,
    *,
    n_ctx: int,
    n_threads: int,
    seed: int,
    cache_bytes: int | None = None,
    n_batch: int = 512,
) -> _Engine:
    """The process-wide engine for this model file, context size, thread count and prompt chunk
    (loaded on first use); ``cache_bytes`` (when given) sets the bound of its kept prefix
    states."""
    key = _engine_key(path, n_ctx, n_threads, n_batch)
    with _registry_lock:
        engine = _engines.get(key)
        if engine is None:
            bound = prefix_cache_bytes() if cache_bytes is None else cache_bytes
            engine = _Engine(Path(path), n_ctx, n_threads, seed, bound, n_batch)
            _engines[key] = engine
        elif cache_bytes is not None and cache_bytes != engine.states.capacity_bytes:
            with engine.lock:
                engine.states.resize(cache_bytes)
        return engine


_OPTIONS = ("n_ctx", "n_threads", "n_batch", "seed", "prefix_cache_mb", "kv_reuse")


def local_options(extra: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`LocalModel` keyword options among ``load_model``'s options (``n_ctx``,
    ``n_threads``, ``n_batch``, ``seed``, ``prefix_cache_mb``, ``kv_reuse``; unset ones are left to the
    defaults)."""
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

    def engine(self) -> _Engine:
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
        key = _engine_key(self.path, self.n_ctx, self.n_threads, self.n_batch)
        with _registry_lock:
            engine = _engines.get(key)
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
