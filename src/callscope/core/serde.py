"""Record (de)serialisation in one place: dataclass records <-> JSON-ready dicts.

Records inherit :class:`Record`. :func:`to_dict` is :func:`dataclasses.asdict` (nested records and lists of them included, keys in
field order). :func:`from_dict` rebuilds a record from such a dict, driven by the field types:

* a nested record (or ``list[Record]``, ``Record | None``) is rebuilt recursively;
* a missing or ``null`` value takes the field's default; a field without a default takes the
  empty value of its type (``""``, ``0``, ``0.0``, ``False``, ``[]``, ``{}``), or ``None`` when
  the type admits it;
* scalars are coerced with their type (``str``, ``int``, ``float``, ``bool``); a ``list``/``dict``
  field given something else becomes empty; ``Any`` and other types pass through.

Stored rows are written by :func:`to_dict`, so the leniency only matters for rows written by
older versions or by hand: they load instead of stopping a report.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, Self, TypeVar

T = TypeVar("T")

_EMPTY: dict[Any, Any] = {str: "", int: 0, float: 0.0, bool: False}


def to_dict(record: Any) -> dict[str, Any]:
    """The record as a JSON-ready dict (field order kept)."""
    return dataclasses.asdict(record)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _origin(tp: Any) -> Any:
    return typing.get_origin(tp) or tp


def _optional(tp: Any) -> tuple[Any, bool]:
    """``(inner type, admits None)`` for ``X | None``; other types unchanged."""
    if _origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else Any), len(args) < len(typing.get_args(tp))
    return tp, False


def _empty(tp: Any) -> Any:
    origin = _origin(tp)
    if origin in (list, dict):
        return origin()
    return _EMPTY.get(origin)


def _convert(tp: Any, value: Any) -> Any:
    origin = _origin(tp)
    if dataclasses.is_dataclass(origin):
        return from_dict(origin, value) if isinstance(value, dict) else _empty(origin)
    if origin is list:
        if not isinstance(value, list):
            return []
        (item,) = typing.get_args(tp) or (Any,)
        return [_convert(item, v) for v in value]
    if origin is dict:
        return value if isinstance(value, dict) else {}
    if origin in _EMPTY:
        try:
            return origin(value)
        except (TypeError, ValueError):
            return _EMPTY[origin]
    return value


class Record:
    """Mixin for dataclass records: ``to_dict`` and ``from_dict`` by the rules above."""

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return from_dict(cls, data)


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Rebuild a ``cls`` record from ``data`` (see the module docstring for the rules)."""
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        tp, nullable = _optional(hints[f.name])
        value = data.get(f.name)
        if value is None:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            kwargs[f.name] = None if nullable else _empty(tp)
        else:
            kwargs[f.name] = _convert(tp, value)
    return cls(**kwargs)
