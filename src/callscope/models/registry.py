"""Turn a model string into a :class:`ChatModel`.

Valid forms::

    local:qwen2.5-coder-0.5b   (the default; also plain "local")
    local:qwen2.5-coder-1.5b
    gguf:/path/to/model.gguf
    ollama:<model>             e.g. ollama:qwen2.5-coder:1.5b
    openai:<model>             any OpenAI-compatible endpoint (OPENAI_BASE_URL)
    replay:<file.jsonl>        recorded answers
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from callscope.models.base import ChatModel
from callscope.models.http import policy_from_opts

DEFAULT_SPEC = "local:qwen2.5-coder-0.5b"

VALID_FORMS = (
    "local:qwen2.5-coder-0.5b (default)",
    "local:qwen2.5-coder-1.5b",
    "gguf:/path/to/model.gguf",
    "ollama:<model>",
    "openai:<model>",
    "replay:<file.jsonl>",
)


def _forms() -> str:
    return ", ".join(VALID_FORMS)


def _local(name: str, opts: dict[str, Any]) -> ChatModel:
    from callscope.models.local import LocalModel, require_llama_cpp
    from callscope.models.weights import MODELS, ensure_weights

    weights = MODELS.get(name)
    if weights is None:
        raise ValueError(
            f"unknown local model {name!r}; choose one of: "
            + ", ".join(f"local:{n}" for n in MODELS) + f" (valid forms: {_forms()})"
        )
    require_llama_cpp()
    directory = opts.get("cache_dir")
    path = ensure_weights(weights, directory=Path(directory) if directory else None)
    return LocalModel(path, spec=f"local:{name}", **_local_opts(opts))


def _local_opts(opts: dict[str, Any]) -> dict[str, Any]:
    return {k: opts[k] for k in ("n_ctx", "n_threads", "seed") if opts.get(k) is not None}


def load_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 120,
    retries: int = 3,
    **opts: Any,
) -> ChatModel:
    """Build the backend named by ``spec`` (see the module docstring for the forms).

    ``timeout`` (seconds per request) and ``retries`` (extra attempts after the first)
    apply to the HTTP backends. Backend options in ``opts``: ``n_ctx``, ``n_threads``,
    ``seed``, ``cache_dir`` (local); ``max_concurrency`` and ``num_ctx`` (ollama);
    ``max_concurrency`` and ``max_tokens_field`` (openai); ``source_spec``,
    ``native_tools`` (replay); ``backoff_base``, ``backoff_cap``, ``retry_after_cap``
    (HTTP retries). Raises ``ValueError`` for an unknown form, ``ModelError`` when a
    local model's package or weights are missing.
    """
    spec = (spec or DEFAULT_SPEC).strip()
    if spec == "local":
        spec = DEFAULT_SPEC
    prefix, sep, rest = spec.partition(":")
    if not sep:
        raise ValueError(f"model {spec!r} has no backend prefix; valid forms: {_forms()}")
    if prefix == "local":
        return _local(rest, opts)
    if prefix == "gguf":
        from callscope.models.local import LocalModel

        return LocalModel(Path(rest).expanduser(), spec=spec, **_local_opts(opts))
    if prefix == "ollama":
        from callscope.models.ollama import OllamaModel

        return OllamaModel(
            rest,
            base_url=base_url,
            policy=policy_from_opts(timeout, retries, opts),
            max_concurrency=int(opts.get("max_concurrency") or 2),
            num_ctx=opts.get("num_ctx"),
        )
    if prefix == "openai":
        from callscope.models.openai_compat import OpenAICompatModel

        return OpenAICompatModel(
            rest,
            base_url=base_url,
            api_key=api_key,
            policy=policy_from_opts(timeout, retries, opts),
            max_concurrency=int(opts.get("max_concurrency") or 4),
            max_tokens_field=str(opts.get("max_tokens_field") or "max_tokens"),
        )
    if prefix == "replay":
        from callscope.models.replay import ReplayModel

        return ReplayModel(
            Path(rest).expanduser(),
            source_spec=opts.get("source_spec"),
            native_tools=bool(opts.get("native_tools", False)),
        )
    raise ValueError(f"unknown model backend {prefix!r} in {spec!r}; valid forms: {_forms()}")
