"""τ²-bench's stock domains (airline, retail, telecom): the tool-type label and the JSON-schema
spec of every tool, as facts read from τ² itself.

Source: sierra-research/tau2-bench ``src/tau2/domains/<domain>/tools.py`` (the agent's tools)
and ``src/tau2/domains/telecom/user_tools.py`` (the telecom user's device tools). Each tool
there is marked ``@is_tool(ToolType.X)`` with X one of READ, WRITE, THINK, GENERIC (e.g.
``transfer_to_human_agents`` is GENERIC, ``calculate`` GENERIC, ``book_reservation``
WRITE); the label and the function signature and docstring (parameter names, types,
required-ness, descriptions) are recorded in ``stock_tools.json`` beside this module, with
the τ² commit they were read at (``STOCK_COMMIT``). The labels agree for every tool the
external τ² results call at τ² commits 37199f36 and a2c02472.

* :func:`stock_tool_type`: τ²'s label (lower case) of a tool in a stock domain, or ``None``;
* :func:`stock_functions`: the agent tools of a stock domain as ``[{name, description,
  parameters}]`` (the form :func:`callscope.saag.cascade.diagnose` reads), or ``None``;
* :func:`stock_domain_of_tools`: the stock domain whose agent tools include a set of names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from typing import Any

#: τ²'s tool types (``ToolType`` in ``tau2/environment/toolkit.py``), lower case.
TOOL_TYPES: tuple[str, ...] = ("read", "write", "think", "generic")


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    text = (
        resources.files("callscope.benchmarks.tau2")
        .joinpath("stock_tools.json")
        .read_text(encoding="utf-8")
    )
    return json.loads(text)


def stock_commit() -> str:
    """The τ² commit the stock table was read at."""
    return str(_table()["commit"])


def stock_domains() -> tuple[str, ...]:
    """The stock domains in the table (``airline``, ``retail``, ``telecom``)."""
    return tuple(sorted(_table()["domains"]))


def stock_tools(domain: str, side: str | None = "agent") -> dict[str, dict[str, Any]]:
    """``{name: {side, tool_type, description, parameters}}`` of a stock domain (``{}`` for
    another domain); ``side`` ``"agent"`` / ``"user"`` keeps that side's tools, ``None`` all."""
    tools = _table()["domains"].get(domain, {})
    return {n: t for n, t in tools.items() if side is None or t["side"] == side}


def stock_tool_type(domain: str, name: str, side: str | None = None) -> str | None:
    """τ²'s ``ToolType`` (``read`` / ``write`` / ``think`` / ``generic``) of tool ``name`` in
    stock ``domain`` (agent or user tool unless ``side`` says which); ``None`` when unknown."""
    tool = stock_tools(domain, side).get(name)
    return None if tool is None else str(tool["tool_type"])


def stock_functions(domain: str) -> list[dict[str, Any]] | None:
    """The agent tools of stock ``domain`` as ``[{name, description, parameters}]`` in name
    order; ``None`` for a domain that is not a stock one."""
    tools = stock_tools(domain, "agent")
    if not tools:
        return None
    return [
        {"name": n, "description": t["description"], "parameters": t["parameters"]}
        for n, t in sorted(tools.items())
    ]


def stock_domain_of_tools(names: Iterable[str]) -> str | None:
    """The stock domain whose tools (agent or user) include every one of ``names`` (the first
    in name order when several do); ``None`` when none does or ``names`` is empty."""
    wanted = set(names)
    if not wanted:
        return None
    for domain in stock_domains():
        if wanted <= set(stock_tools(domain, None)):
            return domain
    return None
