"""How a single-call case becomes chat messages, in prompt mode or native-tools mode."""

from __future__ import annotations

import json
from typing import Any

from callscope.types import ParseResult, Style

#: the SAAG paper's system prompt head (Appendix C, Figure 5)
PROMPT_HEAD = (
    "You are a helpful assistant with access to the following functions. Use them if required -"
)
CALL_FORMAT = (
    "To call a function, respond with only a JSON object of the form "
    '{"name": <function name>, "arguments": {<argument name>: <value>, ...}}.'
)
NATIVE_SYSTEM = "You are a helpful assistant with access to functions. Use them if required."


def render_registry(functions: list[dict[str, Any]]) -> str:
    """The registry as the paper shows it: one JSON block per function, in registry order."""
    return "\n\n".join(json.dumps(f, ensure_ascii=False) for f in functions)


def system_prompt(functions: list[dict[str, Any]]) -> str:
    return f"{PROMPT_HEAD}\n{render_registry(functions)}\n\n{CALL_FORMAT}"


def as_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style ``tools`` for native mode."""
    return [{"type": "function", "function": f} for f in functions]


def initial_messages(
    query: str, functions: list[dict[str, Any]], style: Style
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(messages, tools) of the first attempt: identical in every feedback mode."""
    if style == "prompt":
        return [
            {"role": "system", "content": system_prompt(functions)},
            {"role": "user", "content": query},
        ], None
    return [
        {"role": "system", "content": NATIVE_SYSTEM},
        {"role": "user", "content": query},
    ], as_tools(functions)


def assistant_turn(text: str, parsed: ParseResult, native: bool) -> dict[str, Any]:
    """The model's reply as it is appended before a feedback turn.

    A native call is rendered as its JSON text so that the next turn can be a plain user
    message on every backend (OpenAI requires tool results after ``tool_calls``)."""
    if native and parsed.ok:
        body = "\n".join(json.dumps(c.to_dict(), ensure_ascii=False) for c in parsed.calls)
        return {"role": "assistant", "content": body}
    return {"role": "assistant", "content": text}
