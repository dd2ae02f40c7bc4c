"""Turn a model string ``<prefix>:<rest>`` into a :class:`ChatModel`.

The backends are a :class:`~callscope.core.registry.Registry`, :data:`BACKENDS` (prefix ->
:class:`Backend`), in the order the help lists them; :func:`load_model` looks the prefix up
(``ConfigError`` listing the valid forms for an unknown one), and the list of valid forms in
its error messages and in the CLI help (:func:`backend_help`, :func:`backend_forms`) is
generated from the same registry. The built-in backends::

    local:qwen2.5-coder-0.5b   (the default; also plain "local")
    local:qwen2.5-coder-1.5b
    gguf:/path/to/model.gguf
    ollama:<model>             e.g. ollama:qwen2.5-coder:1.5b
    openai:<model>             any OpenAI-compatible endpoint (OPENAI_BASE_URL)
    replay:<file.jsonl>        recorded answers

Adding a backend is one new module with a :class:`ChatModel` subclass and a factory
``(rest, BackendOptions) -> ChatModel`` (by convention a ``from_spec`` classmethod), plus one
:func:`register_backend` line below. Another installed package adds a backend with an entry
point in the ``callscope.backends`` group whose object is a :class:`Backend` (the entry
point's name is its prefix).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.core.registry import Registry
from callscope.errors import ConfigError
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


def _plugin_backend(registry: Registry[Backend], name: str, obj: Any) -> None:
    """Register an entry point's :class:`Backend`, whose prefix is the entry point's name."""
    if not isinstance(obj, Backend):
        raise TypeError(f"entry point {name!r} is a {type(obj).__name__}, not a Backend")
    if obj.prefix != name:
        raise ConfigError(f"entry point {name!r} holds the backend {obj.prefix!r}")
    registry.register(name, obj, replace=False)


#: prefix -> backend, in help order (plugins: the ``callscope.backends`` entry points)
BACKENDS: Registry[Backend] = Registry(
    "backend", entry_point_group="callscope.backends", on_plugin=_plugin_backend
)


def register_backend(backend: Backend) -> Backend:
    """Add (or replace) the backend of ``backend.prefix``; returns it (``ConfigError`` for a
    prefix that is empty or holds ``:``)."""
    return BACKENDS.register(backend.prefix, backend)


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
        raise ConfigError(
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
    ``n_batch``, ``seed``, ``cache_dir`` (local); ``max_concurrency`` and ``num_ctx`` (ollama);
    ``max_concurrency`` and ``max_tokens_field`` (openai); ``source_spec``,
    ``native_tools`` (replay); ``backoff_base``, ``backoff_cap``, ``retry_after_cap``
    (HTTP retries). Raises ``ConfigError`` for an unknown form, ``ModelError`` when a
    local model's package or weights are missing.
    """
    spec = (spec or DEFAULT_SPEC).strip()
    if spec == "local":
        spec = DEFAULT_SPEC
    prefix, sep, rest = spec.partition(":")
    if not sep:
        raise ConfigError(f"model {spec!r} has no backend prefix; valid forms: {_forms()}")
    backend = BACKENDS.get(prefix, None)
    if backend is None:
        raise ConfigError(f"unknown model backend {prefix!r} in {spec!r}; valid forms: {_forms()}")
    options = BackendOptions(
        spec=spec, base_url=base_url, api_key=api_key, timeout=timeout, retries=retries, extra=opts
    )
    return backend.factory(rest, options)
