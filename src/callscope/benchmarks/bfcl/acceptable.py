"""BFCL's acceptable values (:mod:`callscope.benchmarks.bfcl.single`): a gold answer's
acceptable lists resolved to one value per parameter, and BFCL's test of whether a value is
acceptable (its string form, an int accepted for a float)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callscope.core.jsonl import copy_json
from callscope.saag.extrinsic import bfcl_string_form
from callscope.saag.grounding import is_number


def first_acceptable(values: list[Any], schema: Mapping[str, Any]) -> tuple[bool, Any]:
    """``(present, value)``: the gold value for one parameter given BFCL's acceptable list."""
    for value in values:
        if value != "" and value is not None:
            return True, _resolve_nested(value, schema)
    if "" in values:
        return False, None
    return (True, None) if None in values else (False, None)


def _resolve_nested(value: Any, schema: Mapping[str, Any]) -> Any:
    """Resolve a dict answer ``{key: [acceptable...]}`` (or a list of them) to one value."""
    bfcl_type = schema.get("type")
    if bfcl_type == "dict" and isinstance(value, dict):
        return _resolve_dict(value)
    items = schema.get("items") or {}
    if (
        bfcl_type in ("array", "tuple")
        and items.get("type") == "dict"
        and isinstance(value, list)
        and all(isinstance(v, dict) for v in value)
    ):
        return [_resolve_dict(v) for v in value]
    return copy_json(value)


def _resolve_dict(answer: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, values in answer.items():
        if not isinstance(values, list):
            out[key] = copy_json(values)
            continue
        present, value = first_acceptable(values, {})
        if present:
            out[key] = value
    return out


def _bfcl_normalise(value: Any) -> Any:
    """BFCL's comparison form: strings through :func:`bfcl_string_form`, lists item by item."""
    if isinstance(value, str):
        return bfcl_string_form(value)
    if isinstance(value, list):
        return [_bfcl_normalise(v) for v in value]
    return value


def is_acceptable(value: Any, acceptable: list[Any]) -> bool:
    """Whether BFCL accepts ``value`` for a parameter with these acceptable values: same type
    and equal in BFCL's string form, or numbers equal (BFCL accepts an int for a float)."""
    norm = _bfcl_normalise(value)
    for a in acceptable:
        if type(a) is type(value) and _bfcl_normalise(a) == norm:
            return True
        if is_number(a) and is_number(value) and a == value:  # BFCL accepts int for float
            return True
    return False
