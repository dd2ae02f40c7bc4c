"""callscope: where and why LLM tool calls fail, and how to repair them.

The public API is the curated :data:`__all__` below, in pipeline order: parse a model's
emission, diagnose the call with the SAAG cascade (SAAG paper, section 2) and score it, run
the correction loop on a model (section 2.4), classify action classes and compute GAR beside
Acc (calibration paper, section 3), keep runs in a store and report on them. Everything else
lives in ``callscope.errors``, ``callscope.types``, ``callscope.core`` and the stage packages
(``callscope.parse``, ``callscope.saag``, ``callscope.models``,
``callscope.benchmarks``, ``callscope.store``, ``callscope.calibration``, ``callscope.runs``,
``callscope.report``) and is imported from there.

``import callscope`` loads nothing but this module: each name is imported from its module
the first time it is used (PEP 562 module ``__getattr__``), so the package stays cheap to
import and never pulls pandas, matplotlib or llama.cpp unless a name that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from callscope.calibration.classify import classify_emission
    from callscope.calibration.diagnostics import compute_diagnostics
    from callscope.errors import CallscopeError, DataFormatError, ModelError
    from callscope.guard import guard_check, guard_repair
    from callscope.guard.check import TurnVerdict
    from callscope.guard.repair import RepairResult
    from callscope.models.base import ChatModel, Decoding, RequestContext
    from callscope.models.registry import load_model
    from callscope.parse import parse_output, parse_text
    from callscope.records import CaseRecord, Diagnosis
    from callscope.report.html import build_report
    from callscope.runs.loop import run_loop
    from callscope.runs.runner import run_cases
    from callscope.saag.audit import audit
    from callscope.saag.cascade import diagnose
    from callscope.saag.extrinsic import extrinsic
    from callscope.saag.groundings import GROUNDINGS
    from callscope.saag.messages import correction_message
    from callscope.saag.score import score_row
    from callscope.store.run_store import RunStore
    from callscope.types import Case, ModelReply, ParseResult, ToolCall

    __version__: str

#: public name -> the module it is imported from (the ``TYPE_CHECKING`` imports above, for
#: type checkers; tests/test_public_api.py checks the three lists agree)
_EXPORTS: dict[str, str] = {
    # values
    "ToolCall": "callscope.types",
    "Case": "callscope.types",
    "ModelReply": "callscope.types",
    "ParseResult": "callscope.types",
    # parse -> diagnose -> score
    "parse_output": "callscope.parse",
    "parse_text": "callscope.parse",
    "diagnose": "callscope.saag.cascade",
    "Diagnosis": "callscope.saag.cascade",
    "correction_message": "callscope.saag.messages",
    "GROUNDINGS": "callscope.saag.groundings",
    "audit": "callscope.saag.audit",
    "extrinsic": "callscope.saag.extrinsic",
    "score_row": "callscope.saag.score",
    # models and the correction loop
    "load_model": "callscope.models.registry",
    "ChatModel": "callscope.models.base",
    "Decoding": "callscope.models.base",
    "RequestContext": "callscope.models.base",
    "run_loop": "callscope.runs.loop",
    "run_cases": "callscope.runs.runner",
    # action classes and calibration
    "classify_emission": "callscope.calibration.classify",
    "compute_diagnostics": "callscope.calibration.diagnostics",
    "CaseRecord": "callscope.records",
    # the guard: a live agent's calls checked and repaired
    "guard_check": "callscope.guard",
    "guard_repair": "callscope.guard",
    "TurnVerdict": "callscope.guard.check",
    "RepairResult": "callscope.guard.repair",
    # store and report
    "RunStore": "callscope.store.run_store",
    "build_report": "callscope.report.html",
    # errors
    "CallscopeError": "callscope.errors",
    "ModelError": "callscope.errors",
    "DataFormatError": "callscope.errors",
}

#: the public API (the keys of ``_EXPORTS``; a literal, so linters and type checkers see it)
__all__ = [
    "ToolCall",
    "Case",
    "ModelReply",
    "ParseResult",
    "parse_output",
    "parse_text",
    "diagnose",
    "Diagnosis",
    "correction_message",
    "GROUNDINGS",
    "audit",
    "extrinsic",
    "score_row",
    "load_model",
    "ChatModel",
    "Decoding",
    "RequestContext",
    "run_loop",
    "run_cases",
    "classify_emission",
    "compute_diagnostics",
    "CaseRecord",
    "guard_check",
    "guard_repair",
    "TurnVerdict",
    "RepairResult",
    "RunStore",
    "build_report",
    "CallscopeError",
    "ModelError",
    "DataFormatError",
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
