"""The embedded model's engine: one loaded llama.cpp ``Llama`` per model file and settings in
the process, with the prompt prefixes it keeps and restores (:class:`Engine`; what
:class:`~callscope.models.local.LocalModel` runs its requests on, see its module for the
``kv_reuse`` modes and why sequence states rather than llama-cpp-python's caches)."""

from __future__ import annotations

import ctypes
import importlib.util
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from callscope.errors import ModelError
from callscope.models.prefix_cache import (
    MIN_KEPT_TOKENS,
    Kind,
    PrefixStates,
    common_prefix,
    prefix_cache_bytes,
)

_INSTALL_HINT = 'pip install -e ".[local]"'


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


_registry_lock = threading.Lock()
_engines: dict[tuple[str, int, int, int], Engine] = {}

#: the token that opens a chat message in the embedded models' template (ChatML, Qwen) and in
#: other common GGUF templates (Llama 3, Gemma): the first that is one token marks where a
#: prompt's first message (the system prompt with its registry or documentation) ends
_MESSAGE_OPENERS = (b"<|im_start|>", b"<|start_header_id|>", b"<start_of_turn>")


class Engine:
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
        """Use ``mode`` (one of :data:`~callscope.models.local.KV_REUSE_MODES`) from the next prompt on. States kept
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


def loaded_engine(path: Path, *, n_ctx: int, n_threads: int, n_batch: int) -> Engine | None:
    """The engine :func:`get_engine` loaded for these settings, ``None`` if none yet."""
    with _registry_lock:
        return _engines.get(_engine_key(path, n_ctx, n_threads, n_batch))


def get_engine(
    path: Path,
    *,
    n_ctx: int,
    n_threads: int,
    seed: int,
    cache_bytes: int | None = None,
    n_batch: int = 512,
) -> Engine:
    """The process-wide engine for this model file, context size, thread count and prompt chunk
    (loaded on first use); ``cache_bytes`` (when given) sets the bound of its kept prefix
    states."""
    key = _engine_key(path, n_ctx, n_threads, n_batch)
    with _registry_lock:
        engine = _engines.get(key)
        if engine is None:
            bound = prefix_cache_bytes() if cache_bytes is None else cache_bytes
            engine = Engine(Path(path), n_ctx, n_threads, seed, bound, n_batch)
            _engines[key] = engine
        elif cache_bytes is not None and cache_bytes != engine.states.capacity_bytes:
            with engine.lock:
                engine.states.resize(cache_bytes)
        return engine
