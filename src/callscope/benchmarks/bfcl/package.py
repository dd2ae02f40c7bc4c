"""Safe access to the ``bfcl_eval`` package (BFCL): its data files and its AST checker.

BFCL is used as a data source and as a reference grader, never as an ordinary dependency:
its declared dependencies pull torch, many API SDKs and pin numpy. Install it with
``pip install --no-deps bfcl-eval==2026.3.23`` (plus ``mpmath==1.3.0``).

What this module guarantees:

* Data is read with :mod:`importlib.resources` and :func:`json.loads` only (dataset text is
  never evaluated).
* :func:`ast_checker` imports BFCL's single-turn AST checker without importing
  ``bfcl_eval.constants.model_config`` (which imports every model SDK) and without importing
  ``bfcl_eval.utils`` / ``bfcl_eval.constants.eval_config`` (which create ``result/``,
  ``score/`` and ``.file_locks/`` directories under ``BFCL_PROJECT_ROOT``, by default
  site-packages). A stand-in ``model_config`` module is placed in ``sys.modules`` only for
  the duration of that one import and removed afterwards, whether the import succeeds or not.
* :func:`gorilla_to_json_schema` turns BFCL's own type names into JSON Schema.
* :func:`checker_module` gives the AST checker's module (its ``simple_function_checker`` and
  ``parallel_function_checker_no_order``), imported as :func:`ast_checker` imports it.
* :func:`bfcl_functions` compiles named top-level functions of a BFCL module from its
  installed source, without running the module's imports (BFCL's prompt decoder lives in
  ``bfcl_eval.model_handler.utils``, which imports tree-sitter, tenacity and
  ``bfcl_eval.utils``, whose import creates directories); only for text callscope wrote
  itself (the agreement harness), never for model text: BFCL's decoder evaluates
  ``BinOp`` and ``Lambda`` nodes.

Function names: BFCL names may contain dots (``math.factorial``). JSON Schema and local
engines (llama.cpp) accept them, but native tool-calling APIs of OpenAI, Anthropic, Mistral
and Google require ``^[a-zA-Z0-9_-]{1,64}$``; BFCL itself replaces ``.`` by ``_`` for those
backends. :func:`bfcl_function_to_spec` keeps the original name unless ``sanitize_name=True``;
:func:`sanitize_function_names` returns the specs plus the map back to BFCL's names.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from callscope.core.jsonl import copy_json, loads_bounded, read_lines
from callscope.errors import CallscopeError

BFCL_DIST = "bfcl-eval"
BFCL_PINNED_VERSION = "2026.3.23"
BFCL_INSTALL_COMMAND = f"pip install --no-deps {BFCL_DIST}=={BFCL_PINNED_VERSION} mpmath==1.3.0"
BFCL_DATA_PREFIX = "BFCL_v4"

#: Model name handed to BFCL's checker; the stand-in mapping has exactly this entry.
STANDIN_MODEL_NAME = "callscope-reference"

_CHECKER_MODULE = "bfcl_eval.eval_checker.ast_eval.ast_checker"
_MODEL_CONFIG_MODULE = "bfcl_eval.constants.model_config"


_verified_version: str | None = None  # set once require_bfcl() has succeeded


class BfclUnavailableError(CallscopeError, ImportError):
    """``bfcl_eval`` cannot be imported; the message carries the install command."""


def bfcl_version() -> str | None:
    """Installed ``bfcl-eval`` distribution version, or ``None`` when it is not installed."""
    try:
        return importlib.metadata.version(BFCL_DIST)
    except importlib.metadata.PackageNotFoundError:
        return None


def require_bfcl() -> str:
    """Check that ``bfcl_eval`` is importable and return its version.

    Raises :class:`BfclUnavailableError` (with the install command) when it is missing.
    A version other than the pinned one only emits a :class:`UserWarning` (once per process):
    data counts and gold answers may differ, so results must state the version.
    """
    global _verified_version
    if _verified_version is not None:
        return _verified_version
    try:
        importlib.import_module("bfcl_eval")
    except ImportError as exc:
        raise BfclUnavailableError(
            f"the BFCL package is not installed; install it without its heavy dependencies "
            f"with: {BFCL_INSTALL_COMMAND}"
        ) from exc
    version = bfcl_version() or "unknown"
    if version != BFCL_PINNED_VERSION:
        warnings.warn(
            f"bfcl-eval {version} is installed but callscope is pinned to "
            f"{BFCL_PINNED_VERSION}; counts and gold answers may differ "
            f"(to match: {BFCL_INSTALL_COMMAND})",
            UserWarning,
            stacklevel=2,
        )
    _verified_version = version
    return version


def data_path(*parts: str) -> Traversable:
    """A file or folder under ``bfcl_eval/data`` (works from a wheel or a zip, too)."""
    require_bfcl()
    return files("bfcl_eval").joinpath("data", *parts)


def read_bfcl_jsonl(name: str) -> list[dict[str, Any]]:
    """Read one BFCL data file (one JSON object per line), relative to ``bfcl_eval/data``.

    ``name`` is e.g. ``"BFCL_v4_simple_python.json"`` or
    ``"possible_answer/BFCL_v4_simple_python.json"``. Raises ``FileNotFoundError`` when the
    file is absent and ``ValueError`` (with the line number) on a malformed line.
    """
    path = data_path(*name.split("/"))
    if not path.is_file():
        raise FileNotFoundError(f"no BFCL data file {name!r} in bfcl_eval/data")
    rows: list[dict[str, Any]] = []
    for lineno, line in read_lines(path):  # the one bounded line reader
        if isinstance(line, ValueError):
            raise ValueError(f"{name}:{lineno}: {line}")
        try:
            row = loads_bounded(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}:{lineno}: not valid JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise ValueError(f"{name}:{lineno}: not a JSON object")
        rows.append(row)
    return rows


def question_file(category: str) -> str:
    """Data-relative name of a category's question file."""
    return f"{BFCL_DATA_PREFIX}_{category}.json"


def answer_file(category: str) -> str:
    """Data-relative name of a category's possible-answer file."""
    return f"possible_answer/{BFCL_DATA_PREFIX}_{category}.json"


# ---------------------------------------------------------------------------------------------
# The AST checker, imported lightly
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StandInModelConfig:
    """The only attribute BFCL's AST checker reads from a model config.

    ``ast_checker.convert_func_name`` does
    ``MODEL_CONFIG_MAPPING[model_name.replace("_", "/")].underscore_to_dot`` when the gold
    function name contains a dot; ``False`` means names are compared as written.
    """

    model_name: str
    underscore_to_dot: bool = False


def _standin_model_config_module() -> types.ModuleType:
    module = types.ModuleType(
        _MODEL_CONFIG_MODULE, "callscope stand-in: only what the BFCL AST checker reads"
    )
    module.MODEL_CONFIG_MAPPING = {  # type: ignore[attr-defined]
        STANDIN_MODEL_NAME: _StandInModelConfig(STANDIN_MODEL_NAME)
    }
    return module


_checker_lock = threading.Lock()
_checker_cache: tuple[Callable[..., dict[str, Any]], str] | None = None


def _import_checker_module() -> types.ModuleType:
    loaded = sys.modules.get(_CHECKER_MODULE)
    if loaded is not None:
        return loaded
    require_bfcl()
    standin = None
    if _MODEL_CONFIG_MODULE not in sys.modules:
        standin = _standin_model_config_module()
        sys.modules[_MODEL_CONFIG_MODULE] = standin
    try:
        return importlib.import_module(_CHECKER_MODULE)
    finally:
        # The checker module keeps its own reference to MODEL_CONFIG_MAPPING; the stand-in
        # must not stay visible to anyone importing the real model_config later.
        if standin is not None:
            if sys.modules.get(_MODEL_CONFIG_MODULE) is standin:
                del sys.modules[_MODEL_CONFIG_MODULE]
            parent = sys.modules.get("bfcl_eval.constants")
            if parent is not None and getattr(parent, "model_config", None) is standin:
                delattr(parent, "model_config")


def _model_name_for(mapping: Any) -> str:
    """A model name whose config keeps dotted names as they are (``underscore_to_dot=False``)."""
    entry = mapping.get(STANDIN_MODEL_NAME) if hasattr(mapping, "get") else None
    if entry is not None and not entry.underscore_to_dot:
        return STANDIN_MODEL_NAME
    # The real model_config was imported before us: pick one of its entries that the
    # checker's ``model_name.replace("_", "/")`` lookup can reach.
    for key, config in mapping.items():
        if "_" not in key and not getattr(config, "underscore_to_dot", True):
            return key.replace("/", "_")
    raise RuntimeError("BFCL's MODEL_CONFIG_MAPPING has no entry with underscore_to_dot=False")


def _load_checker() -> tuple[Callable[..., dict[str, Any]], str]:
    global _checker_cache
    with _checker_lock:
        if _checker_cache is None:
            module = _import_checker_module()
            _checker_cache = (module.ast_checker, _model_name_for(module.MODEL_CONFIG_MAPPING))
        return _checker_cache


def ast_checker() -> Callable[..., dict[str, Any]]:
    """BFCL's single-turn ``ast_checker(func_description, model_output, possible_answer,
    language, test_category, model_name)``; pass :func:`checker_model_name` as model name.

    It returns ``{"valid": bool, "error": [...], "error_type": str}``.
    """
    return _load_checker()[0]


def checker_module() -> types.ModuleType:
    """BFCL's AST checker module (``simple_function_checker``,
    ``parallel_function_checker_no_order``, ...), imported lightly as for :func:`ast_checker`."""
    _load_checker()
    return _import_checker_module()


def bfcl_functions(
    module_path: str, names: Iterable[str], namespace: dict[str, Any]
) -> dict[str, Callable[..., Any]]:
    """The top-level functions ``names`` of BFCL's module at ``module_path`` (relative to the
    ``bfcl_eval`` package, e.g. ``"model_handler/utils.py"``), compiled from its installed
    source in a fresh module namespace seeded with ``namespace`` (the names they use from
    the module's imports); the module's own imports are not run. ``KeyError`` for a name
    the module does not define at top level. See the module docstring for what it may be
    used on."""
    import ast as python_ast

    require_bfcl()
    path = files("bfcl_eval").joinpath(*module_path.split("/"))
    tree = python_ast.parse(path.read_text(encoding="utf-8"))
    wanted = list(names)
    defs = {
        node.name: node
        for node in tree.body
        if isinstance(node, python_ast.FunctionDef) and node.name in wanted
    }
    missing = [name for name in wanted if name not in defs]
    if missing:
        raise KeyError(f"bfcl_eval/{module_path} defines no top-level {', '.join(missing)}")
    scope: dict[str, Any] = {"__name__": f"callscope_bfcl_{module_path}", **namespace}
    out: dict[str, Callable[..., Any]] = {}
    for name in wanted:
        node = defs[name]
        module = python_ast.Module(body=[node], type_ignores=[])
        code = compile(module, f"bfcl_eval/{module_path}", "exec")
        body = next(c for c in code.co_consts if isinstance(c, types.CodeType))
        # the installed package's own function, bound to a fresh namespace (no module code
        # runs); its defaults are literals or names of the namespace (``Language.PYTHON``)
        defaults = tuple(_default_value(d, scope) for d in node.args.defaults) or None
        out[name] = scope[name] = types.FunctionType(body, scope, name, defaults)
    return out


def _default_value(node: Any, scope: dict[str, Any]) -> Any:
    """A default argument of a BFCL function: a literal, or a (dotted) name of ``scope``."""
    import ast as python_ast

    if isinstance(node, python_ast.Name):
        return scope[node.id]
    if isinstance(node, python_ast.Attribute):
        return getattr(_default_value(node.value, scope), node.attr)
    return python_ast.literal_eval(node)


def checker_model_name() -> str:
    """The model name to pass to :func:`ast_checker` (dotted names compared verbatim)."""
    return _load_checker()[1]


def python_language() -> Any:
    """``bfcl_eval.constants.enums.Language.PYTHON`` (a light import)."""
    require_bfcl()
    from bfcl_eval.constants.enums import Language

    return Language.PYTHON


# ---------------------------------------------------------------------------------------------
# Function docs -> JSON Schema
# ---------------------------------------------------------------------------------------------

#: BFCL type name -> JSON Schema type; ``None`` means "no type constraint" (``any``).
#: Same as ``bfcl_eval.constants.type_mappings.GORILLA_TO_OPENAPI`` except for ``any``,
#: which BFCL sends as ``string`` although it means any JSON value.
GORILLA_TO_JSON_SCHEMA: dict[str, str | None] = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": None,
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": None,
    "String": "string",
    "Bigint": "integer",
}

#: Keys copied unchanged from a BFCL schema node (JSON Schema keywords). Everything else is
#: dropped: ``response`` (a return-value doc), ``optional`` (not JSON Schema), unknown keys.
_KEPT_KEYS = (
    "description",
    "enum",
    "default",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
)


def gorilla_to_json_schema(params: dict[str, Any]) -> dict[str, Any]:
    """Convert one BFCL schema node (e.g. a function's ``parameters``) to JSON Schema.

    Types are mapped with :data:`GORILLA_TO_JSON_SCHEMA` (``dict`` -> ``object``, ``float`` ->
    ``number``, ``tuple`` -> ``array``, ``any`` -> no ``type`` key), recursively through
    ``properties`` and ``items``. ``description``, ``enum``, ``default``, ``required`` (when a
    list) and the JSON Schema keywords in ``_KEPT_KEYS`` are kept; ``response`` and other keys
    are dropped. A node without ``type`` is left untyped. The input is not modified.
    Raises ``ValueError`` on a type name BFCL does not define.
    """
    if not isinstance(params, dict):
        raise ValueError(f"schema node must be an object, got {type(params).__name__}")
    out: dict[str, Any] = {}
    if "type" in params:
        bfcl_type = params["type"]
        if not isinstance(bfcl_type, str) or bfcl_type not in GORILLA_TO_JSON_SCHEMA:
            raise ValueError(f"unknown BFCL type {bfcl_type!r}")
        json_type = GORILLA_TO_JSON_SCHEMA[bfcl_type]
        if json_type is not None:
            out["type"] = json_type
    for key in _KEPT_KEYS:
        if key in params:
            out[key] = copy_json(params[key])
    if isinstance(params.get("properties"), dict):
        out["properties"] = {
            name: gorilla_to_json_schema(node) for name, node in params["properties"].items()
        }
    if isinstance(params.get("items"), dict):
        out["items"] = gorilla_to_json_schema(params["items"])
    required = params.get("required")
    if isinstance(required, list) and all(isinstance(r, str) for r in required):
        out["required"] = list(required)
    return out


def sanitize_function_name(name: str) -> str:
    """``name`` with ``.`` replaced by ``_`` (what OpenAI-style native tool APIs accept)."""
    return name.replace(".", "_")


def bfcl_function_to_spec(doc: dict[str, Any], *, sanitize_name: bool = False) -> dict[str, Any]:
    """One BFCL function doc as a ``{name, description, parameters}`` JSON-schema spec.

    The name is kept as BFCL wrote it (dots included) unless ``sanitize_name`` is true.
    ``parameters`` always has ``"type": "object"`` and a ``properties`` object.
    """
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("BFCL function doc has no string 'name'")
    parameters = gorilla_to_json_schema(doc.get("parameters") or {"type": "dict"})
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    return {
        "name": sanitize_function_name(name) if sanitize_name else name,
        "description": str(doc.get("description") or ""),
        "parameters": parameters,
    }


def sanitize_function_names(
    specs: Iterable[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Copies of ``specs`` with sanitized names, and the map ``{sanitized: original}``.

    Raises ``ValueError`` when two different names sanitize to the same name (the reverse
    map would be ambiguous).
    """
    out: list[dict[str, Any]] = []
    reverse: dict[str, str] = {}
    for spec in specs:
        original = spec["name"]
        new = sanitize_function_name(original)
        if reverse.get(new, original) != original:
            raise ValueError(f"{reverse[new]!r} and {original!r} both sanitize to {new!r}")
        reverse[new] = original
        out.append({**spec, "name": new})
    return out, reverse
