"""Which τ²-bench tools write to the database.

τ² labels every tool of its stock domains ``@is_tool(ToolType.X)`` (READ, WRITE, THINK,
GENERIC; :mod:`callscope.benchmarks.tau2.stock_tools`), and newer τ² versions copy the label
into ``action_checks[].tool_type``. A tool name is decided, first rule that applies
(:func:`decide_write_tools`): ``read_tools`` (never write), ``write_tools`` (always write), a
``tool_type`` seen in the run's own action checks (``"write"`` is write; ``read``/``think``/
``generic`` are not), τ²'s stock label for the run's domain (so ``transfer_to_human_agents``,
GENERIC, is not a write). Only a tool unknown to both is guessed: ``write_pattern`` on the
name (default: a verb prefix such as ``update_``, ``cancel_``, ``book_``, ``modify_``,
``exchange_``, ``return_``, ``send_``, ``transfer_``, see :data:`WRITE_VERBS`), then, when the
run exposes tool descriptions, a description whose first word is one of :data:`WRITE_VERBS`
("Issue a certificate ..."); otherwise it is read-only. The decision, its source and, for a
guess, that the tool is unknown are reported per tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from callscope.benchmarks.tau2.stock_tools import stock_tool_type
from callscope.records import WriteDecision

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
    @property
    def use_stock_types(self) -> bool: ...


@dataclass(frozen=True)
class WriteRules:
    """The write-tool rules on their own: tools declared write / read, the name pattern,
    and whether the run's ``tool_type`` labels, τ²'s stock labels and tool descriptions are
    used."""

    write_tools: frozenset[str] = frozenset()
    read_tools: frozenset[str] = frozenset()
    write_pattern: str = DEFAULT_WRITE_PATTERN
    use_tau2_tool_types: bool = True
    use_tool_docs: bool = True
    use_stock_types: bool = True

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
    domain: str | None = None,
) -> dict[str, WriteDecision]:
    """``{name: WriteDecision}`` (write, the rule that decided, τ²'s label, whether it is
    known) for every name in ``names`` and every tool of ``functions`` (the run's tool
    definitions, ``None`` when absent), by the first rule of the module docstring that
    applies. ``tau2_types``: tool name -> τ²'s ``tool_type`` from the run's action checks
    (:func:`callscope.benchmarks.tau2.messages.tool_types`). ``domain``: the run's domain,
    for τ²'s stock labels. ``known`` is false when the decision is a guess (name pattern,
    description verb or the read default for a tool τ² does not label). ``config``: any
    object with the fields of :class:`WriteRules` (e.g. the diagnostic's
    :class:`~callscope.calibration.tau2.Tau2Config`)."""
    docs = {f["name"]: f.get("description") or "" for f in functions or []}
    pattern = re.compile(config.write_pattern, re.I)
    use_stock = getattr(config, "use_stock_types", True)
    out: dict[str, WriteDecision] = {}
    for name in sorted(set(names) | set(docs)):
        label = tau2_types.get(name) if config.use_tau2_tool_types else None
        stock = stock_tool_type(domain, name) if (domain and use_stock) else None
        kind = label or stock
        if name in config.read_tools:
            write, source = False, "config read_tools"
        elif name in config.write_tools:
            write, source = True, "config write_tools"
        elif label is not None:
            write, source = label == "write", f"τ² tool_type {label!r} in the file"
        elif stock is not None:
            write, source = stock == "write", f"τ² stock label {stock!r} ({domain})"
        elif pattern.search(name):
            write, source = True, "name pattern (no τ² label)"
        elif config.use_tool_docs and (verb := _doc_verb(name, docs.get(name, ""))) in set(
            WRITE_VERBS
        ):
            write, source = True, f"description verb {verb!r} (no τ² label)"
        else:
            write, source = False, "default read (no τ² label)"
        out[name] = WriteDecision(
            write=write, source=source, tool_type=kind, known=kind is not None
        )
    return out
