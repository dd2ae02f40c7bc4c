"""Model emission -> tool calls. Nothing is ever evaluated: JSON via ``json``, Python call
syntax via ``ast`` with literal arguments only."""

from callscope.parse.output import (
    MAX_ARGUMENT_DEPTH,
    MAX_INPUT_CHARS,
    balanced_end,
    call_from_object,
    parse_native,
    parse_output,
    parse_python_calls,
    parse_text,
)

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_INPUT_CHARS",
    "balanced_end",
    "call_from_object",
    "parse_native",
    "parse_output",
    "parse_python_calls",
    "parse_text",
]
