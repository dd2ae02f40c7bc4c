"""Turn a model string ``<prefix>:<rest>`` into a :class:`ChatModel`.

The backends are a registry, :data:`BACKENDS` (prefix -> :class:`Backend`), in the order the
help lists them; :func:`load_model` looks the prefix up, and the list of valid forms in its
error messages and in the CLI help (:func:`backend_help`, :func:`backend_forms`) is generated
from the same registry. The built-in backends::

    local:qwen2.5-coder-0.5b   (the default; also plain "local")
    local:qwen2.5-coder-1.5b
    gguf:/path/to/model.gguf
    ollama:<model>             e.g. ollama:qwen2.5-coder:1.5b
    openai:<model>             any OpenAI-compatible endpoint (OPENAI_BASE_URL)
    replay:<file.jsonl>        recorded answers

Adding a backend is one new module with a :class:`ChatModel` subclass and a factory
``(rest, BackendOptions) -> ChatModel`` (by convention a ``from_spec`` classmethod), plus one
:func:`register_backend` line below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.models.base import BackendOptions, ChatModel
from callscope.models.ollama import OllamaModel
from callscope.models.openai_compat import OpenAICompatModel
from callscope.models.replay import ReplayModel
from callscope.models.weights import MODELS, ensure_weights

DEFAULT_SPEC = "local:qwen2.5-coder-0.5b"

#: a backend factory: the text after ``<prefix>:`` and the load options -> the model
Factory = Callable[[str, BackendOptions], ChatModel]


@dataclass(frozen=True)
class Backend:
    """One model backend: ``prefix`` before the colon of a model string, the ``forms`` of
    model string it accepts (as shown in help and errors), a one-line ``description``, and the
    ``factory`` that builds the model from the rest of the string."""

    prefix: str
    forms: tuple[str, ...]
    description: str
    factory: Factory


#: prefix -> backend, in help order
BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend) -> Backend:
    """Add (or replace) the backend of ``backend.prefix``; returns it."""
    if not backend.prefix or ":" in backend.prefix:
        raise ValueError(
            f"a backend prefix is a non-empty name without ':', not {backend.prefix!r}"
        )
    BACKENDS[backend.prefix] = backend
    return backend


def backend_forms() -> list[tuple[str, str]]:
    """``(form, description)`` of every accepted model string form, in registry order."""
    return [(form, b.description) for b in BACKENDS.values() for form in b.forms]


def _forms() -> str:
    return ", ".join(form for form, _ in backend_forms())


def backend_help() -> str:
    """The forms as one help line (``local:qwen2.5-coder-0.5b | ... | replay:<file.jsonl>``),
    for the CLI's ``--model`` option."""
    return " | ".join(form.removesuffix(" (default)") for form, _ in backend_forms())


# --------------------------------------------------------------------------- built-ins


def _local(name: str, options: BackendOptions) -> ChatModel:
    """``local:<name>``: a named embedded model, its weights joined on first use."""
    # lazy: the llama.cpp-backed backend is only imported when a local model is asked for
    from callscope.models.local import LocalModel, local_options, require_llama_cpp

    weights = MODELS.get(name)
    if weights is None:
        raise ValueError(
            f"unknown local model {name!r}; choose one of: "
            + ", ".join(f"local:{n}" for n in MODELS)
            + f" (valid forms: {_forms()})"
        )
    require_llama_cpp()
    directory = options.extra.get("cache_dir")
    path = ensure_weights(weights, directory=Path(directory) if directory else None)
    return LocalModel(path, spec=f"local:{name}", **local_options(options.extra))


def _gguf(path: str, options: BackendOptions) -> ChatModel:
    """``gguf:<path>``: any GGUF file run by llama.cpp."""
    # lazy: the llama.cpp-backed backend is only imported when a local model is asked for
    from callscope.models.local import LocalModel

    return LocalModel.from_spec(path, options)


def _local_forms() -> tuple[str, ...]:
    return tuple(
        f"local:{n}" + (" (default)" if f"local:{n}" == DEFAULT_SPEC else "") for n in MODELS
    )


register_backend(
    Backend("local", _local_forms(), "embedded model run in-process (llama.cpp)", _local)
)
register_backend(Backend("gguf", ("gguf:/path/to/model.gguf",), "any GGUF file (llama.cpp)", _gguf))
register_backend(
    Backend("ollama", ("ollama:<model>",), "an Ollama server (OLLAMA_HOST)", OllamaModel.from_spec)
)
register_backend(
    Backend(
        "openai",
        ("openai:<model>",),
        "any OpenAI-compatible endpoint (OPENAI_BASE_URL)",
        OpenAICompatModel.from_spec,
    )
)
register_backend(
    Backend("replay", ("replay:<file.jsonl>",), "recorded answers", ReplayModel.from_spec)
)


# --------------------------------------------------------------------------- loading


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
    backend = BACKENDS.get(prefix)
    if backend is None:
        raise ValueError(f"unknown model backend {prefix!r} in {spec!r}; valid forms: {_forms()}")
    options = BackendOptions(
        spec=spec, base_url=base_url, api_key=api_key, timeout=timeout, retries=retries, extra=opts
    )
    return backend.factory(rest, options)
