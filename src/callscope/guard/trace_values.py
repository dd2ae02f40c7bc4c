"""The values of a trace file as :mod:`callscope.guard.traces` reads them: its top-level JSON
values (:func:`_objects`), the spans in them (:func:`_found`, an entry of an OTLP document
that is not a span's shape and a value that is not an object said as such), OTLP ``AnyValue``s, nested attributes flattened to
dotted keys, span and trace ids (hex or base64), JSON held in strings, a call's arguments as
text. Every value is read for what it is, never assumed: a span whose values are not of its
layout's shape raises :class:`BadSpan`, which the reader counts as an unreadable span."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from callscope.core.jsonl import (
    JsonLimitError,
    loads_bounded,
    raw_decode_bounded,
    read_bounded,
)


class BadSpan(ValueError):
    """A span (or run) whose values are not of the shape its layout writes: it is counted as
    an unreadable span, with this reason."""


def kind_of(x: Any) -> str:
    """What a JSON value is, for a reason (``an object``, ``a list``, ``a str``...)."""
    if isinstance(x, dict):
        return "an object"
    if isinstance(x, list):
        return "a list"
    if x is None:
        return "null"
    name = type(x).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def obj_at(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """``parent[key]`` as an object (``{}`` when absent or null); :class:`BadSpan` naming
    ``where`` when it is something else."""
    x = parent.get(key)
    if x is None:
        return {}
    if not isinstance(x, dict):
        raise BadSpan(f"{where} is not an object ({kind_of(x)})")
    return x


def list_of(x: Any, where: str) -> list[Any]:
    """``x`` as a list (``[]`` when null); :class:`BadSpan` naming ``where`` otherwise."""
    if x is None:
        return []
    if not isinstance(x, list):
        raise BadSpan(f"{where} is not a list ({kind_of(x)})")
    return x


def _values(v: Any, key: str, where: str) -> list[Any]:
    """The ``values`` list of an OTLP ``arrayValue`` / ``kvlistValue``."""
    inner = v[key]
    if inner is None:
        return []
    if not isinstance(inner, dict):
        raise BadSpan(f"{where}: {key} is not an object with 'values' ({kind_of(inner)})")
    return list_of(inner.get("values"), f"{where}: {key}.values")


def _any_value(v: Any, where: str = "value") -> Any:
    """An OTLP JSON ``AnyValue`` as a Python value; :class:`BadSpan` for an array or a
    key/value list that is not of OTLP's shape."""
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
            except (TypeError, ValueError):  # (over the digit limit too: kept as written)
                return v[key]
    for key in ("arrayValue", "array_value"):
        if key in v:
            items = _values(v, key, where)
            return [_any_value(x, f"{where}[{i}]") for i, x in enumerate(items)]
    for key in ("kvlistValue", "kvlist_value"):
        if key in v:
            return _pairs(_values(v, key, where), where)
    for key in ("bytesValue", "bytes_value"):
        if key in v:
            return v[key]
    return None


def _pairs(raw: list[Any], where: str) -> dict[str, Any]:
    """OTLP's ``[{"key", "value": AnyValue}]`` as a dict; :class:`BadSpan` for an entry that
    is not an object or a key that is not a string."""
    out: dict[str, Any] = {}
    for i, kv in enumerate(raw):
        if not isinstance(kv, dict):
            raise BadSpan(f"{where}[{i}] is not a key/value object ({kind_of(kv)})")
        key = kv.get("key")
        if not isinstance(key, str):
            raise BadSpan(f"{where}[{i}]: the key is not a string ({kind_of(key)})")
        out[key] = _any_value(kv.get("value"), f"attribute {key[:80]!r}")
    return out


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
    """Span attributes as ``{dotted key: value}`` from OTLP's key/value list or a dict;
    :class:`BadSpan` for a list entry or a value that is not of OTLP's shape."""
    if isinstance(raw, list):
        return _pairs(raw, "attributes")
    if isinstance(raw, dict):
        out: dict[str, Any] = {}
        _flatten(raw, "", out)
        return out
    if raw is None:
        return {}
    raise BadSpan(f"attributes is not a list or an object ({kind_of(raw)})")


def _hex_id(x: Any) -> str:
    """A trace/span id as hex: OTLP JSON writes hex, protobuf's JSON base64, the SDK ``0x..``
    (an integer as its digits; anything else that is not text is no id: ``""``)."""
    if not isinstance(x, str) or not x:
        return text_id(x)
    s = x[2:] if x.startswith("0x") else x
    if len(s) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in s):
        return s.lower()
    try:
        raw = base64.b64decode(s, validate=True)
    except ValueError:
        return s
    return raw.hex() if len(raw) in (8, 16) else s


def text_id(x: Any) -> str:
    """A LangSmith run or trace id as text: a string, an integer's digits, else ``""``."""
    if isinstance(x, str):
        return x
    return str(x) if isinstance(x, int) and not isinstance(x, bool) else ""


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return loads_bounded(v)
        except ValueError:
            return v
    return v


def _arguments_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


# --- where the spans are ----------------------------------------------------------------


class UnreadableValue(ValueError):
    """A top-level value of a trace file that cannot be read: the ``line`` it is on, why."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line, self.reason = line, reason


def _objects(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` for every top-level JSON value of a file: one document, JSON Lines,
    or concatenated objects (the ConsoleSpanExporter's pretty-printed spans), read by the one
    bounded reader (:func:`~callscope.core.jsonl.raw_decode_bounded`) from a regular file of
    at most :data:`~callscope.core.jsonl.MAX_FILE_BYTES`
    (:func:`~callscope.core.jsonl.read_bounded`: ``/dev/zero`` or a FIFO is refused, never
    read); :class:`UnreadableValue` for a value that cannot be read."""
    text = read_bounded(path).decode("utf-8")
    i, n, line, counted = 0, len(text), 1, 0
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        line += text.count("\n", counted, i)  # (counted as the reading goes: linear)
        counted = i
        try:
            value, i = raw_decode_bounded(text, i)
        except json.JSONDecodeError as exc:
            raise UnreadableValue(exc.lineno, f"not valid JSON ({exc.msg})") from None
        except JsonLimitError as exc:  # nested too deeply, an integer over the digit limit
            raise UnreadableValue(exc.line or line, str(exc)) from None
        yield line, value


#: what a file's value that is not an object is told (neither a span, a run nor a document)
NOT_AN_OBJECT = "not an object"
NO_SPAN = "neither a span, a LangSmith run nor an OTLP document"

#: a span's layout as found in a file: an OTLP document's span, the SDK's ``to_json()`` span
#: (or one with nested attributes), a LangSmith run
OTLP, SDK, LANGSMITH = "otlp", "sdk", "langsmith"


def _entries(x: Any, where: str) -> Iterator[tuple[str, Any, str | None]]:
    """``(path, item, None)`` for every object of the list ``x`` of an OTLP document, and
    ``(path, None, why)`` for an item (or ``x`` itself) that is not of that shape."""
    if x is None:
        return
    if not isinstance(x, list):
        yield where, None, f"not a list ({kind_of(x)})"
        return
    for i, item in enumerate(x):
        if isinstance(item, dict):
            yield f"{where}[{i}]", item, None
        else:
            yield f"{where}[{i}]", None, f"not an object ({kind_of(item)})"


def _found(obj: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """``(path, layout, span)`` for every span or run in one top-level value, and
    ``(path, "", why)`` for an entry of an OTLP document that is not a span's shape and for
    a value that is not an object (a number, a string, ``null``: the value itself, an item
    of a list of them; ``path`` ``""`` for the top-level value), which holds no span."""
    if isinstance(obj, list):
        for i, x in enumerate(obj):
            yield from _found(x, f"{path}[{i}]")
        return
    if not isinstance(obj, dict):
        yield path, "", f"{NOT_AN_OBJECT} ({kind_of(obj)}): {NO_SPAN}"
        return
    key = "resourceSpans" if "resourceSpans" in obj else "resource_spans"
    if obj.get(key) is not None:
        for at, rs, why in _entries(obj[key], f"{path}.{key}" if path else key):
            if why is not None:
                yield at, "", why
                continue
            skey = "scopeSpans" if "scopeSpans" in rs else "scope_spans"
            for at2, ss, why2 in _entries(rs.get(skey), f"{at}.{skey}"):
                if why2 is not None:
                    yield at2, "", why2
                    continue
                for at3, sp, why3 in _entries(ss.get("spans"), f"{at2}.spans"):
                    yield (at3, "", why3) if why3 is not None else (at3, OTLP, sp)
        return
    if isinstance(obj.get("runs"), list):  # a LangSmith export holding several runs
        yield from _found(obj["runs"], f"{path}.runs" if path else "runs")
        return
    if "run_type" in obj and ("inputs" in obj or "outputs" in obj):
        yield path, LANGSMITH, obj
    elif "attributes" in obj:  # the SDK's to_json(), or a span with nested attributes
        yield path, SDK, obj


def _ids(layout: str, sp: dict[str, Any]) -> tuple[str, str, str]:
    """A span's (trace, span, name), each ``""`` where it is not text (nor an integer)."""
    name = sp.get("name")
    name = name if isinstance(name, str) else ""
    if layout == LANGSMITH:
        return text_id(sp.get("trace_id")) or text_id(sp.get("id")), text_id(sp.get("id")), name
    ctx = sp.get("context") if layout == SDK else None
    ctx = ctx if isinstance(ctx, dict) else {}
    trace = ctx.get("trace_id", sp.get("trace_id", sp.get("traceId")))
    span = ctx.get("span_id", sp.get("span_id", sp.get("spanId")))
    if layout == OTLP:
        trace, span = sp.get("traceId", sp.get("trace_id")), sp.get("spanId", sp.get("span_id"))
    return _hex_id(trace), _hex_id(span), name
