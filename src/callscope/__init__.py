"""callscope: where and why LLM tool calls fail, and how to repair them.

The public API is :data:`__all__`: a few verbs and the types they take and return, in
pipeline order.

* One call (SAAG paper, section 2): :func:`parse_output` reads any emission (text, a call
  object, an assistant message) into a :class:`ParseResult` of calls (:class:`ToolCall`);
  :func:`diagnose` runs the three-stage cascade on one call and returns a :class:`Diagnosis`
  (the first failing stage, the eight metrics, what failed), in one of the
  :func:`grounding_modes` (``lexical`` is the paper's); :func:`correction_message` is the fix
  the loop sends for it; :func:`score_row` scores one input row (with its gold call, the
  extrinsic metrics too); :func:`audit` measures the cascade as a detector on cases with gold
  calls.
* A model on many cases (section 2.4): :func:`load_model` gives a :class:`ChatModel` from a
  spec (``ollama:qwen2.5-coder:1.5b``...; :class:`Decoding`, :class:`RequestContext` and
  :class:`ModelReply` are what its ``chat`` takes and returns); :func:`run_cases` runs the
  correction loop on cases (:class:`Case`) into a :class:`RunStore`; :func:`build_report` writes
  the run's HTML page.
* Action classes (calibration paper, section 3): :func:`classify_emission` names an
  emission's class (``TOOL_CALL``, ``ASK``, ``REFUSE``, ``CONFIRM``, ``OTHER``).
* A live agent: :func:`guard_check` checks a response's calls (a :class:`TurnVerdict`),
  :func:`guard_repair` re-asks with the gated correction (a :class:`RepairResult`).
* :class:`CallscopeError`: the base of every error callscope raises on purpose
  (:class:`ConfigError`: an unknown name or a bad setting).

Everything else lives in its layer's package and is imported from there: ``callscope.errors``,
``callscope.types``, ``callscope.records`` (the records crossing layers), ``callscope.core``,
``callscope.parse``, ``callscope.saag`` (``intrinsic``: the metrics' formulas; ``extrinsic``:
the gold metrics), ``callscope.models``, ``callscope.benchmarks``, ``callscope.store``,
``callscope.calibration`` (GAR beside Acc: ``calibration.diagnostics``), ``callscope.runs``,
``callscope.guard``, ``callscope.report``.

``import callscope`` loads nothing but this module: each name is imported from its module
the first time it is used (PEP 562 module ``__getattr__``), so the package stays cheap to
import and never pulls pandas, matplotlib or llama.cpp unless a name that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from callscope.calibration.classify import classify_emission
    from callscope.errors import CallscopeError, ConfigError
    from callscope.guard import guard_check, guard_repair
    from callscope.guard.check import TurnVerdict
    from callscope.guard.repair import RepairResult
    from callscope.models.base import ChatModel, Decoding, RequestContext
    from callscope.models.registry import load_model
    from callscope.parse import parse_output
    from callscope.records import Diagnosis
    from callscope.report.html import build_report
    from callscope.runs.runner import run_cases
    from callscope.saag.audit import audit
    from callscope.saag.cascade import diagnose, grounding_modes
    from callscope.saag.messages import correction_message
    from callscope.saag.score import score_row
    from callscope.store.run_store import RunStore
    from callscope.types import Case, ModelReply, ParseResult, ToolCall

    __version__: str

#: public name -> the module it is imported from (the ``TYPE_CHECKING`` imports above, for
#: type checkers; tests/test_public_api.py checks the three lists agree)
_EXPORTS: dict[str, str] = {
    # one call: parse, diagnose, correct, score
    "ToolCall": "callscope.types",
    "ParseResult": "callscope.types",
    "parse_output": "callscope.parse",
    "Diagnosis": "callscope.records",
    "diagnose": "callscope.saag.cascade",
    "grounding_modes": "callscope.saag.cascade",
    "correction_message": "callscope.saag.messages",
    "score_row": "callscope.saag.score",
    "audit": "callscope.saag.audit",
    # a model on many cases: the correction loop, the store, the report
    "ChatModel": "callscope.models.base",
    "Decoding": "callscope.models.base",
    "RequestContext": "callscope.models.base",
    "ModelReply": "callscope.types",
    "load_model": "callscope.models.registry",
    "Case": "callscope.types",
    "run_cases": "callscope.runs.runner",
    "RunStore": "callscope.store.run_store",
    "build_report": "callscope.report.html",
    # action classes
    "classify_emission": "callscope.calibration.classify",
    # a live agent: check and repair its calls
    "guard_check": "callscope.guard",
    "TurnVerdict": "callscope.guard.check",
    "guard_repair": "callscope.guard",
    "RepairResult": "callscope.guard.repair",
    # errors
    "CallscopeError": "callscope.errors",
    "ConfigError": "callscope.errors",
}

#: the public API (the keys of ``_EXPORTS``; a literal, so linters and type checkers see it)
__all__ = [
    "ToolCall",
    "ParseResult",
    "parse_output",
    "Diagnosis",
    "diagnose",
    "grounding_modes",
    "correction_message",
    "score_row",
    "audit",
    "ChatModel",
    "Decoding",
    "RequestContext",
    "ModelReply",
    "load_model",
    "Case",
    "run_cases",
    "RunStore",
    "build_report",
    "classify_emission",
    "guard_check",
    "TurnVerdict",
    "guard_repair",
    "RepairResult",
    "CallscopeError",
    "ConfigError",
]


def _version() -> str:
    """The installed distribution's version; ``0+unknown`` when it is not installed."""
    from importlib import metadata  # lazy: only when __version__ is asked for

    try:
        return metadata.version("callscope")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, then keep it here."""
    if name == "__version__":
        value: Any = _version()
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'callscope' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})
