"""The values of a trace file as :mod:`callscope.guard.traces` reads them: OTLP ``AnyValue``s,
nested attributes flattened to dotted keys, span and trace ids (hex or base64), JSON held in
strings, a call's arguments as text."""

from __future__ import annotations

import base64
import json
from typing import Any

from callscope.core.jsonl import loads_bounded


def _any_value(v: Any) -> Any:
    """An OTLP JSON ``AnyValue`` as a Python value."""
    if not isinstance(v, dict):
        return v
    for key in (
        "stringValue",
        "string_value",
        "boolValue",
        "bool_value",
        "doubleValue",
        "double_value",
    ):
        if key in v:
            return v[key]
    for key in ("intValue", "int_value"):
        if key in v:
            try:
                return int(v[key])
            except (TypeError, ValueError):
                return v[key]
    for key in ("arrayValue", "array_value"):
        if key in v:
            return [_any_value(x) for x in (v[key] or {}).get("values", [])]
    for key in ("kvlistValue", "kvlist_value"):
        if key in v:
            return {kv.get("key"): _any_value(kv.get("value")) for kv in v[key].get("values", [])}
    for key in ("bytesValue", "bytes_value"):
        if key in v:
            return v[key]
    return None


def _flatten(obj: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        for i, v in enumerate(obj):
            _flatten(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = obj


def _attributes(raw: Any) -> dict[str, Any]:
    """Span attributes as ``{dotted key: value}`` from OTLP's key/value list or a dict."""
    if isinstance(raw, list):
        return {a.get("key"): _any_value(a.get("value")) for a in raw if isinstance(a, dict)}
    if isinstance(raw, dict):
        out: dict[str, Any] = {}
        _flatten(raw, "", out)
        return out
    return {}


def _hex_id(x: Any) -> str:
    """A trace/span id as hex: OTLP JSON writes hex, protobuf's JSON base64, the SDK ``0x..``."""
    if not isinstance(x, str) or not x:
        return str(x) if x is not None else ""
    s = x[2:] if x.startswith("0x") else x
    if all(c in "0123456789abcdefABCDEF" for c in s) and len(s) in (16, 32):
        return s.lower()
    try:
        raw = base64.b64decode(s, validate=True)
    except ValueError:
        return s
    return raw.hex() if len(raw) in (8, 16) else s


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return loads_bounded(v)
        except ValueError:
            return v
    return v


def _arguments_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
