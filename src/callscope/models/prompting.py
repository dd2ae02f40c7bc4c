"""How a single-call case becomes chat messages, in prompt mode or native-tools mode."""

from __future__ import annotations

from typing import Any

from callscope.core.jsonl import dumps_safe
from callscope.types import ParseResult, Style

#: the SAAG paper's system prompt head (Appendix C, Figure 5)
PROMPT_HEAD = (
    "You are a helpful assistant with access to the following functions. Use them if required -"
)
CALL_FORMAT = (
    "To call a function, respond with only a JSON object of the form "
    '{"name": <function name>, "arguments": {<argument name>: <value>, ...}}.'
)
#: the call format of a case whose answer may hold several calls or none (``answer_format``
#: ``"calls"``): the same words for every such case, whatever its gold
ANSWER_FORMAT = (
    "To call a function, respond with only a JSON object of the form "
    '{"name": <function name>, "arguments": {<argument name>: <value>, ...}}; to make '
    "several calls, respond with only a JSON list of such objects. If none of the functions "
    "fits the request, answer in plain text without a call."
)
NATIVE_SYSTEM = "You are a helpful assistant with access to functions. Use them if required."


def render_registry(functions: list[dict[str, Any]]) -> str:
    """The registry as the paper shows it: one JSON block per function, in registry order."""
    return "\n\n".join(dumps_safe(f, mark=False) for f in functions)


def system_prompt(functions: list[dict[str, Any]], several_calls: bool = False) -> str:
    """The paper's prompt (head, registry, the one-call format); ``several_calls``: the
    answer format (:data:`ANSWER_FORMAT`) instead of the one-call one."""
    fmt = ANSWER_FORMAT if several_calls else CALL_FORMAT
    return f"{PROMPT_HEAD}\n{render_registry(functions)}\n\n{fmt}"


def as_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style ``tools`` for native mode."""
    return [{"type": "function", "function": f} for f in functions]


def initial_messages(
    query: str, functions: list[dict[str, Any]], style: Style, several_calls: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(messages, tools) of the first attempt: identical in every feedback mode.
    ``several_calls`` (prompt style): the answer may hold several calls or none."""
    if style == "prompt":
        return [
            {"role": "system", "content": system_prompt(functions, several_calls)},
            {"role": "user", "content": query},
        ], None
    return [
        {"role": "system", "content": NATIVE_SYSTEM},
        {"role": "user", "content": query},
    ], as_tools(functions)


def assistant_turn(text: str, parsed: ParseResult, native: bool) -> dict[str, Any]:
    """The model's reply as it is appended before a feedback turn.

    A native call is rendered as its JSON text so that the next turn can be a plain user
    message on every backend (OpenAI requires tool results after ``tool_calls``). Written
    by :func:`~callscope.core.jsonl.dumps_safe`, as every JSON text that leaves the process:
    a value UTF-8 JSON cannot hold as is is escaped, never a reason to stop the run."""
    if native and parsed.ok:
        body = "\n".join(dumps_safe(c.to_dict(), mark=False) for c in parsed.calls)
        return {"role": "assistant", "content": body}
    return {"role": "assistant", "content": text}
