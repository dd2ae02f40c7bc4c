"""Which τ²-bench tools write to the database.

τ² results do not label tools read/write except, in newer versions, through
``action_checks[].tool_type``. A tool name is decided, first rule that applies
(:func:`decide_write_tools`): ``read_tools`` (never write), ``write_tools`` (always write), a
``tool_type`` seen in the run's action checks (``"write"`` is write; ``read``/``think``/
``generic`` are not), ``write_pattern`` on the name (default: a verb prefix such as
``update_``, ``cancel_``, ``book_``, ``modify_``, ``exchange_``, ``return_``, ``send_``,
``transfer_``, see :data:`WRITE_VERBS`), and, when the run exposes tool descriptions, a
description whose first word is one of :data:`WRITE_VERBS` ("Issue a certificate ...").
Otherwise the tool is read-only. The decision and its source are reported per tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: Verbs whose tools change the database (name prefixes ``<verb>_`` and description openings).
WRITE_VERBS: tuple[str, ...] = (
    "update",
    "cancel",
    "book",
    "modify",
    "exchange",
    "return",
    "send",
    "transfer",
    "create",
    "delete",
    "remove",
    "add",
    "set",
    "change",
    "refund",
    "issue",
    "suspend",
    "resume",
    "enable",
    "disable",
    "refuel",
    "pay",
    "place",
    "submit",
    "reset",
    "apply",
    "assign",
    "grant",
    "revoke",
    "toggle",
)

#: Default write-tool name rule: one of :data:`WRITE_VERBS` followed by ``_`` at the start.
DEFAULT_WRITE_PATTERN = r"^(?:" + "|".join(WRITE_VERBS) + r")_"


class WriteToolRules(Protocol):
    """The settings :func:`decide_write_tools` reads (see the module docstring)."""

    @property
    def write_tools(self) -> frozenset[str]: ...
    @property
    def read_tools(self) -> frozenset[str]: ...
    @property
    def write_pattern(self) -> str: ...
    @property
    def use_tau2_tool_types(self) -> bool: ...
    @property
    def use_tool_docs(self) -> bool: ...


@dataclass(frozen=True)
class WriteRules:
    """The write-tool rules on their own: tools declared write / read, the name pattern,
    and whether τ²'s ``tool_type`` labels and tool descriptions are used."""

    write_tools: frozenset[str] = frozenset()
    read_tools: frozenset[str] = frozenset()
    write_pattern: str = DEFAULT_WRITE_PATTERN
    use_tau2_tool_types: bool = True
    use_tool_docs: bool = True

    def __post_init__(self) -> None:
        re.compile(self.write_pattern)


DEFAULT_WRITE_RULES = WriteRules()


def _doc_verb(name: str, doc: str) -> str | None:
    """The first word of the description that is not the tool's own signature line."""
    for line in doc.splitlines():
        line = line.strip()
        if not line or line.startswith(name):
            continue
        m = re.match(r"[A-Za-z]+", line)
        return m.group(0).lower() if m else None
    return None


def decide_write_tools(
    names: Iterable[str],
    functions: Sequence[Mapping[str, Any]] | None,
    tau2_types: Mapping[str, str],
    config: WriteToolRules = DEFAULT_WRITE_RULES,
) -> dict[str, dict[str, Any]]:
    """``{name: {"write": bool, "source": why}}`` for every name in ``names`` and every tool
    of ``functions`` (the run's tool definitions, ``None`` when absent), by the first rule
    of the module docstring that applies. ``tau2_types``: tool name -> τ²'s ``tool_type``
    from the run's action checks (:func:`callscope.benchmarks.tau2.messages.tool_types`).
    ``config``: any object with the fields of :class:`WriteRules` (e.g. the diagnostic's
    :class:`~callscope.calibration.tau2.Tau2Config`)."""
    docs = {f["name"]: f.get("description") or "" for f in functions or []}
    pattern = re.compile(config.write_pattern, re.I)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(set(names) | set(docs)):
        if name in config.read_tools:
            out[name] = {"write": False, "source": "config read_tools"}
        elif name in config.write_tools:
            out[name] = {"write": True, "source": "config write_tools"}
        elif config.use_tau2_tool_types and name in tau2_types:
            kind = tau2_types[name]
            out[name] = {"write": kind == "write", "source": f"τ² tool_type {kind!r}"}
        elif pattern.search(name):
            out[name] = {"write": True, "source": "name pattern"}
        elif config.use_tool_docs and (verb := _doc_verb(name, docs.get(name, ""))) in set(
            WRITE_VERBS
        ):
            out[name] = {"write": True, "source": f"description verb {verb!r}"}
        else:
            out[name] = {"write": False, "source": "default (read)"}
    return out
