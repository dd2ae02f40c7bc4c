"""CRI's detectors: is a proposed call *suspect* before it executes? (paper "Calibration is the
Bottleneck", §3.3; the rules are stated in :mod:`callscope.calibration.probes`' docstring).

* label-free (:func:`detect_label_free`): ``MC`` when the called name is not among the turn's
  tools; ``UR`` when a required argument's scalar value has no antecedent
  (:func:`has_antecedent`) in the user text or the observed state;
* SAAG (:func:`detect_saag`): the cascade on the same call, a stage-1 failure is ``MC``, a
  stage-3 hard drift on a required argument is ``UR``.

:data:`DETECTORS` is the registry of detectors by name (a probe names its detector).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from callscope.core.registry import Registry
from callscope.saag import grounding as g
from callscope.saag.cascade import diagnose, find_spec, schema_params, spec_properties
from callscope.types import ToolCall

#: values shorter than this pass the label-free UR check
MIN_VALUE_CHARS = 2


@dataclass(frozen=True)
class Detection:
    """A suspect call: ``kind`` MC or UR, the call's index in its emission, and details."""

    kind: str
    index: int
    call: ToolCall
    details: dict[str, Any] = field(default_factory=dict)


def _number_text(value: float | int) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def has_antecedent(value: Any, haystack: str, spec: dict[str, Any] | None = None) -> bool:
    """Whether ``value`` may come from ``haystack`` (user text and observed state) or from the
    parameter ``spec``'s ``enum``/``default``. Strings: case-insensitive substring of the
    haystack (whitespace stripped); numbers: equal to a number written in the haystack
    (:func:`callscope.saag.grounding.number_tokens`). Values that are not scalar strings or
    numbers (bool, None, lists, objects) and values shorter than :data:`MIN_VALUE_CHARS`
    characters always pass."""
    spec = spec or {}
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return True
    text = value.strip() if isinstance(value, str) else _number_text(value)
    if len(text) < MIN_VALUE_CHARS:
        return True
    candidates = list(spec.get("enum") or [])
    if "default" in spec:
        candidates.append(spec["default"])
    for cand in candidates:
        if isinstance(cand, bool) or not isinstance(cand, str | int | float):
            continue
        if isinstance(value, str) != isinstance(cand, str):
            continue
        if isinstance(cand, str) and cand.strip().lower() == text.lower():
            return True
        if not isinstance(cand, str) and g.numbers_equal(value, cand):  # type: ignore[arg-type]
            return True
    if isinstance(value, str):
        return text.lower() in haystack.lower()
    return any(g.numbers_equal(value, tok) for tok in g.number_tokens(haystack))


def detect_label_free(
    calls: Sequence[ToolCall], functions: Sequence[dict[str, Any]], user_text: str, observed: str
) -> Detection | None:
    """The first suspect call of an emission under the label-free detector (see module doc)."""
    haystack = f"{user_text}\n{observed}"
    names = {f.get("name") for f in functions}
    for i, call in enumerate(calls):
        if call.name not in names:
            return Detection(
                "MC", i, call, {"why": f"'{call.name}' is not among this turn's tools"}
            )
        spec = find_spec(functions, call.name) or {}
        required, _ = schema_params(spec)
        props = spec_properties(spec)
        args = call.arguments if isinstance(call.arguments, dict) else {}
        for param in required:
            if param in args and not has_antecedent(args[param], haystack, props.get(param)):
                return Detection(
                    "UR",
                    i,
                    call,
                    {
                        "argument": param,
                        "value": args[param],
                        "why": f"required '{param}'={args[param]!r} has no antecedent",
                    },
                )
    return None


def detect_saag(
    calls: Sequence[ToolCall], functions: Sequence[dict[str, Any]], user_text: str, observed: str
) -> Detection | None:
    """The first suspect call under the SAAG cascade (query = user text + observed state):
    stage-1 failure -> MC; stage-3 hard drift on a required argument -> UR."""
    query = f"{user_text}\n{observed}"
    for i, call in enumerate(calls):
        d = diagnose(call, list(functions), query)
        if d.stage == 1:
            return Detection(
                "MC",
                i,
                call,
                {
                    "saag_stage": 1,
                    "nearest": d.nearest,
                    "why": f"stage 1: '{call.name}' not in registry",
                },
            )
        if d.stage == 3:
            required, _ = schema_params(find_spec(functions, call.name) or {})
            hard = [p for p in d.hard if p in required]
            if hard:
                return Detection(
                    "UR",
                    i,
                    call,
                    {
                        "saag_stage": 3,
                        "argument": hard[0],
                        "value": call.arguments.get(hard[0]),
                        "hard": list(d.hard),
                        "why": f"stage 3: hard drift on required '{hard[0]}'",
                    },
                )
    return None


#: a detector: ``(calls, functions, user text, observed state) -> the first suspect call``
#: (``None`` when none is)
Detector = Callable[[Sequence[ToolCall], Sequence[dict[str, Any]], str, str], Detection | None]

#: CRI's detectors by name (a :class:`~callscope.calibration.probes.ProbeConfig`'s
#: ``detector``); another package adds one with an entry point in the
#: ``callscope.cri_detectors`` group whose object is the detector
DETECTORS: Registry[Detector] = Registry(
    "CRI detector",
    entries={"label-free": detect_label_free, "saag": detect_saag},
    entry_point_group="callscope.cri_detectors",
)
