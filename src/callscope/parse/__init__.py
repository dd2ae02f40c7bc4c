"""Model emission -> tool calls. Nothing is ever evaluated: JSON via ``json``, Python call
syntax via ``ast`` with literal arguments only.

One reader per syntax, shared by every caller in callscope:

* :mod:`callscope.parse.literals`: limits (input size, :data:`MAX_ARGUMENT_DEPTH`), JSON-data
  checks and the bracket matcher :func:`balanced_end`;
* :mod:`callscope.parse.json_calls`: call objects, native ``tool_calls``, JSON in text;
* :mod:`callscope.parse.python_calls`: Python call syntax (dotted names, literal arguments);
* :mod:`callscope.parse.glaive`: Glaive's ``<functioncall>`` payload;
* :mod:`callscope.parse.bfcl_decode`: BFCL's 2024-08 answer decoders, per handler family,
  without ``eval``;
* :mod:`callscope.parse.no_call`: what text without a readable call is (prose, structured,
  a JSON reply, garbage), decided from the text alone;
* :mod:`callscope.parse.text`: :func:`parse_text` / :func:`parse_output`, which try the forms
  in order.
"""

from callscope.parse.glaive import read_functioncall
from callscope.parse.json_calls import call_from_object, parse_native
from callscope.parse.literals import MAX_ARGUMENT_DEPTH, MAX_INPUT_CHARS, balanced_end
from callscope.parse.python_calls import (
    CallSyntax,
    parse_expression,
    parse_python_calls,
    read_call,
    read_python_calls,
)
from callscope.parse.text import parse_output, parse_text

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_INPUT_CHARS",
    "CallSyntax",
    "balanced_end",
    "call_from_object",
    "parse_native",
    "parse_expression",
    "parse_output",
    "parse_python_calls",
    "parse_text",
    "read_call",
    "read_functioncall",
    "read_python_calls",
]
