"""BFCL's multi-turn categories as :class:`MTCase` objects (data only; nothing is evaluated).

Four categories, 200 cases each (``bfcl-eval==2026.3.23``): ``multi_turn_base``,
``multi_turn_long_context``, ``multi_turn_miss_param``, ``multi_turn_miss_func``.

What a user relies on:

* ``MTCase.turns[i]`` are the user messages of turn ``i`` exactly as BFCL stores them; a
  miss_func re-injection turn ``k`` is ``[]`` in the data (the runner supplies BFCL's message).
* ``MTCase.functions`` are JSON-schema specs (via :mod:`callscope.benchmarks.bfcl.package`) of every
  tool of the involved classes, in BFCL's order (classes in ``involved_classes`` order, docs in
  file order), each description ending with BFCL's hint " Note that the provided function is in
  Python 3 syntax." Held-out (miss_func) tools are marked in ``MTCase.held_out`` (name -> the
  turn they are added back); :meth:`MTCase.functions_at` gives the tools available at a turn in
  the order BFCL sends them (held-out ones appended when they come back).
* ``MTCase.ground_truth[i]`` are BFCL's gold call strings of turn ``i``; :func:`gold_calls`
  reads them with :mod:`ast` (literals only; positional arguments, which 40 gold strings per
  category use, are bound to parameter names from the simulator method's signature).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from callscope.benchmarks.bfcl import categories
from callscope.benchmarks.bfcl.package import (
    answer_file,
    bfcl_function_to_spec,
    question_file,
    read_bfcl_jsonl,
)
from callscope.parse import parse_expression, parse_python_calls, read_call
from callscope.types import ToolCall

#: full category names in BFCL's order (:data:`.categories.FILE_ORDER`)
MULTI_TURN_CATEGORIES: tuple[str, ...] = tuple(
    categories.full_category(c) for c in categories.FILE_ORDER
)

#: BFCL's ``_get_language_specific_hint`` for Python, appended to every description.
PYTHON_HINT = " Note that the provided function is in Python 3 syntax."

#: ``bfcl_eval.constants.executable_backend_config`` (copied: a plain table, so that loading
#: data does not import BFCL code).
FUNC_DOC_FILES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
SIMULATOR_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
SIMULATOR_MODULES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}


@dataclass
class MTCase:
    """One BFCL multi-turn case. ``missed_function`` maps turn index -> held-out names."""

    id: str
    category: str
    turns: list[list[dict[str, Any]]]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    path: list[str]
    missed_function: dict[int, list[str]]
    functions: list[dict[str, Any]]
    ground_truth: list[list[str]]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def long_context(self) -> bool:
        """BFCL switches long-context states on from the id's category."""
        return "long_context" in self.category or "composite" in self.category

    @property
    def gold_class(self) -> str:
        """The action class this case's category rewards (:mod:`.categories`)."""
        return categories.gold_class(self.category)

    def due_turns(self) -> list[int]:
        """Turns at which the gold class is due (:func:`.categories.due_turns`)."""
        return categories.due_turns(self.category, self.ground_truth, self.missed_function)

    @property
    def held_out(self) -> dict[str, int]:
        """Held-out tool name -> the turn at which it becomes available."""
        return {name: k for k, names in self.missed_function.items() for name in names}

    def available_at(self, turn: int) -> set[str]:
        """Names of the tools the model may call at ``turn``."""
        return {f["name"] for f in self.functions_at(turn)}

    def functions_at(self, turn: int) -> list[dict[str, Any]]:
        """Specs available at ``turn``: the non-held-out tools in BFCL's order, then the
        held-out tools whose re-injection turn is <= ``turn`` (in re-injection order)."""
        held = self.held_out
        by_name = {f["name"]: f for f in self.functions}
        out = [f for f in self.functions if f["name"] not in held]
        for k in sorted(self.missed_function):
            if k <= turn:
                out.extend(by_name[n] for n in self.missed_function[k] if n in by_name)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "category": self.category,
            "turns": self.turns,
            "initial_config": self.initial_config,
            "involved_classes": self.involved_classes,
            "path": self.path,
            "missed_function": {str(k): v for k, v in self.missed_function.items()},
            "functions": self.functions,
            "ground_truth": self.ground_truth,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MTCase:
        return cls(
            id=str(d["id"]),
            category=str(d["category"]),
            turns=list(d["turns"]),
            initial_config=dict(d.get("initial_config") or {}),
            involved_classes=list(d["involved_classes"]),
            path=list(d.get("path") or []),
            missed_function={int(k): list(v) for k, v in (d.get("missed_function") or {}).items()},
            functions=list(d["functions"]),
            ground_truth=[list(t) for t in d["ground_truth"]],
            meta=dict(d.get("meta") or {}),
        )


def category_of(case_id: str) -> str:
    """BFCL's ``test_entry_id.rsplit("_", 1)[0]``."""
    return case_id.rsplit("_", 1)[0]


@cache
def _class_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    if class_name not in FUNC_DOC_FILES:
        raise ValueError(f"unknown BFCL multi-turn class {class_name!r}")
    rows = read_bfcl_jsonl(f"multi_turn_func_doc/{FUNC_DOC_FILES[class_name]}")
    return tuple(rows)


def class_functions(class_name: str, *, language_hint: bool = True) -> list[dict[str, Any]]:
    """JSON-schema specs of one simulator class's tools, in BFCL's file order."""
    specs = []
    for doc in _class_docs(class_name):
        spec = bfcl_function_to_spec(doc)
        if language_hint:
            spec["description"] = spec["description"] + PYTHON_HINT
        specs.append(spec)
    return specs


def _case_from_rows(entry: dict[str, Any], answer: dict[str, Any], language_hint: bool) -> MTCase:
    if entry.get("id") != answer.get("id"):
        raise ValueError(f"question/answer ids differ: {entry.get('id')!r} {answer.get('id')!r}")
    case_id = str(entry["id"])
    classes = list(entry["involved_classes"])
    functions: list[dict[str, Any]] = []
    for class_name in classes:
        functions.extend(class_functions(class_name, language_hint=language_hint))
    missed = {int(k): list(v) for k, v in (entry.get("missed_function") or {}).items()}
    turns = [list(t) for t in entry["question"]]
    gold = [list(t) for t in answer["ground_truth"]]
    if len(turns) != len(gold):
        raise ValueError(f"{case_id}: {len(turns)} turns but {len(gold)} gold turns")
    meta = {}
    if "excluded_function" in entry:
        meta["excluded_function"] = list(entry["excluded_function"])
    return MTCase(
        id=case_id,
        category=category_of(case_id),
        turns=turns,
        initial_config=dict(entry.get("initial_config") or {}),
        involved_classes=classes,
        path=list(entry.get("path") or []),
        missed_function=missed,
        functions=functions,
        ground_truth=gold,
        meta=meta,
    )


def load_multi_turn(
    categories: tuple[str, ...] | list[str] = MULTI_TURN_CATEGORIES,
    *,
    language_hint: bool = True,
) -> list[MTCase]:
    """All cases of ``categories`` in BFCL's file order. Raises ``ValueError`` on an unknown
    category and :class:`~callscope.benchmarks.bfcl.package.BfclUnavailableError` without BFCL."""
    cases: list[MTCase] = []
    for cat in categories:
        if cat not in MULTI_TURN_CATEGORIES:
            raise ValueError(f"not a multi-turn category: {cat!r}")
        questions = read_bfcl_jsonl(question_file(cat))
        answers = read_bfcl_jsonl(answer_file(cat))
        if len(questions) != len(answers):
            raise ValueError(f"{cat}: {len(questions)} questions but {len(answers)} answers")
        cases.extend(
            _case_from_rows(q, a, language_hint) for q, a in zip(questions, answers, strict=True)
        )
    return cases


# ------------------------------------------------------------------------------------ gold


@cache
def _method_params(class_name: str) -> dict[str, tuple[str, ...]]:
    """Public method name -> positional parameter names, read from the simulator class."""
    module = importlib.import_module(f"{SIMULATOR_PACKAGE}.{SIMULATOR_MODULES[class_name]}")
    cls = getattr(module, class_name)
    out: dict[str, tuple[str, ...]] = {}
    for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
        if name.startswith("_"):
            continue
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        out[name] = tuple(params)
    return out


def parse_gold_call(text: str, involved_classes: list[str]) -> ToolCall:
    """One BFCL gold call string as a :class:`ToolCall`, never evaluated.

    Read with :func:`callscope.parse.parse_python_calls` when it accepts the string (keyword
    arguments, values as JSON data); that parser refuses positional arguments, so those
    strings are read with :func:`callscope.parse.read_call` (the same :mod:`ast` reader:
    literal arguments only, values as :func:`ast.literal_eval` gives them), and must be one
    call of a plain name. Positional arguments are bound, in order, to the parameters of the
    simulator method (the last involved class that defines it wins, as in BFCL's executor);
    keyword arguments follow them. Raises ``ValueError``.
    """
    try:
        calls = parse_python_calls(text)
    except ValueError:
        calls = []
    if len(calls) == 1:
        return calls[0]
    try:
        call = read_call(parse_expression(text), positional=True)
    except ValueError as exc:
        raise ValueError(f"gold call {text!r} is not a literal-only call: {exc}") from None
    if "." in call.name:
        raise ValueError(f"gold call is not a plain call: {text!r}")
    args: dict[str, Any] = {}
    if call.args:
        params: tuple[str, ...] | None = None
        for class_name in involved_classes:
            params = _method_params(class_name).get(call.name, params)
        if params is None or len(call.args) > len(params):
            raise ValueError(f"cannot bind positional arguments of {text!r}")
        args.update(zip(params, call.args, strict=False))
    args.update(call.kwargs)
    return ToolCall(name=call.name, arguments=args)


def gold_calls(case: MTCase) -> list[list[ToolCall]]:
    """The case's gold calls per turn, as parsed :class:`ToolCall` objects."""
    return [[parse_gold_call(s, case.involved_classes) for s in turn] for turn in case.ground_truth]
