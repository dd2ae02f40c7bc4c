"""The relevance half of the answer-agreement harness (:mod:`callscope.benchmarks.bfcl.answer_agreement`):
written answers to BFCL's no-call cases (abstentions, empty answers, calls, broken calls) judged
by BFCL's relevance checker and by callscope's answer verdict."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from callscope.benchmarks.bfcl.answer_agreement import placeholder_arguments
from callscope.benchmarks.bfcl.package import (
    bfcl_functions,
)
from callscope.benchmarks.bfcl.single import (
    any_call_solved,
)
from callscope.parse import parse_output
from callscope.saag.answer import no_call_kind, score_answer
from callscope.types import Case

#: the written answers of the relevance harness (:func:`relevance_answers`)
RELEVANCE_ANSWER_KINDS: tuple[str, ...] = (
    "abstained",
    "empty",
    "empty_list",
    "call",
    "two_calls",
    "unclosed_call",
    "broken_call",
    "json_call",
)

#: a clean abstention's text (prose, nothing call-shaped)
ABSTENTION_TEXT = "None of the available functions can answer this request, so I will not call one."


def _python_call(call: Mapping[str, Any]) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in call["arguments"].items())
    return f"{call['name']}({args})"


def relevance_answers(case: Case) -> dict[str, str | None]:
    """Answers written for a no-call or any-call case, in BFCL's prompt format (Python call
    syntax in brackets) where they hold calls; ``None`` where a kind needs a function and the
    case has none.

    ``abstained``: :data:`ABSTENTION_TEXT`; ``empty``: ``""``; ``empty_list``: ``"[]"``;
    ``call``: ``[f(...)]`` of the case's first function with :func:`placeholder_arguments`;
    ``two_calls``: that call and one of the last function; ``unclosed_call``: ``call``
    without its closing ``]``; ``broken_call``: ``call`` cut inside its argument list (for
    ``f(a='example')``: ``[f(a='ex``: the first half of the argument list; without arguments
    ``[f(``); ``json_call``: the call as
    ``{"name": ..., "arguments": ...}`` JSON.
    """
    texts: dict[str, str | None] = {"abstained": ABSTENTION_TEXT, "empty": "", "empty_list": "[]"}
    if not case.functions:
        texts.update(dict.fromkeys(RELEVANCE_ANSWER_KINDS[3:]))
        return texts
    first, last = case.functions[0], case.functions[-1]
    call = {"name": first["name"], "arguments": placeholder_arguments(first)}
    second = {"name": last["name"], "arguments": placeholder_arguments(last)}
    text = _python_call(call)
    texts["call"] = f"[{text}]"
    texts["two_calls"] = f"[{text}, {_python_call(second)}]"
    texts["unclosed_call"] = f"[{text}"
    open_at = text.index("(") + 1
    texts["broken_call"] = "[" + text[: open_at + (len(text) - 1 - open_at) // 2]
    texts["json_call"] = json.dumps(call)
    return texts


#: why BFCL's relevance verdict and callscope's differ, by (BFCL decoded, callscope's reading)
RELEVANCE_REASONS: dict[tuple[bool, str], str] = {
    (False, "broken"): "bfcl_credits_undecoded_text: a broken call counts as no call for BFCL",
    (False, "calls"): "bfcl_prompt_decoder_reads_python_syntax_only: callscope reads the call",
    (True, "broken"): "bfcl_decoder_closes_the_bracket: BFCL appends a missing ']' and decodes",
}


def _relevance_reason(decoded: bool, what: str) -> str:
    return RELEVANCE_REASONS.get((decoded, what), "other")


_DECODER: dict[str, Callable[..., Any]] | None = None


def _bfcl_decoder() -> dict[str, Callable[..., Any]]:
    """BFCL's prompt decoder and empty-output test, compiled from its installed source
    (:func:`~callscope.benchmarks.bfcl.package.bfcl_functions`)."""
    global _DECODER
    if _DECODER is None:
        import ast
        import re

        from bfcl_eval.constants.enums import ReturnFormat

        found = bfcl_functions(
            "model_handler/utils.py",
            [
                "default_decode_ast_prompting",
                "ast_parse",
                "resolve_ast_call",
                "resolve_ast_by_type",
            ],
            {"ast": ast, "re": re, "ReturnFormat": ReturnFormat},
        )
        found.update(
            bfcl_functions("utils.py", ["is_empty_output", "is_function_calling_format_output"], {})
        )
        _DECODER = found
    return _DECODER


def bfcl_relevance_verdict(text: str, category: str) -> tuple[bool, bool]:
    """``(decoded, credited)``: BFCL's ``relevance_file_runner`` on one answer written in its
    prompt format. ``decoded``: ``default_decode_ast_prompting`` (strip, wrap in ``[...]``,
    ``ast.parse``) succeeded; a call was made when it decoded to a non-empty call list
    (``is_empty_output`` false); an irrelevance category credits the answer when no call was
    made (so whenever the text does not decode), ``live_relevance`` when one was. BFCL's own
    code, compiled from its source: only for text callscope wrote (its decoder evaluates
    ``BinOp`` and ``Lambda`` nodes)."""
    decoder = _bfcl_decoder()
    try:
        decoded = decoder["default_decode_ast_prompting"](text)
    except Exception:  # BFCL: a decode failure means no call
        made, decoded_ok = False, False
    else:
        made, decoded_ok = not decoder["is_empty_output"](decoded), True
    return decoded_ok, (not made if "irrelevance" in category else made)


def callscope_relevance_verdict(case: Case, text: str) -> tuple[str, bool]:
    """``(what, solved)``: callscope on an answer to a no-call case (gold ``[]``:
    :func:`~callscope.saag.answer.score_answer`'s ``solved``, a clean abstention) or an
    any-call case (:func:`~callscope.benchmarks.bfcl.single.any_call_solved`); ``what`` is
    ``"calls"`` or the no-call kind (``abstained`` / ``broken`` / ``empty``)."""
    parsed = parse_output(text)
    kind = no_call_kind(parsed)
    if case.gold_calls == ():
        solved = score_answer(parsed.calls, [], case.functions, kind).solved
    else:
        solved = any_call_solved(len(parsed.calls))
    return (kind or "calls"), solved


def relevance_agreement_report(cases: Iterable[Case]) -> dict[str, Any]:
    """BFCL's relevance verdict (:func:`bfcl_relevance_verdict`) against callscope's
    (:func:`callscope_relevance_verdict`) on the answers of :func:`relevance_answers` for every
    irrelevance / live_irrelevance (gold ``[]``) and live_relevance (any call) case.

    Per category and answer kind: ``total``; where BFCL decodes the answer, ``decoded``,
    ``agree`` and ``disagree``; where it does not, ``not_decoded`` with callscope's reading
    of the text (``callscope_calls``: callscope reads a call BFCL's prompt decoder does not,
    ``broken``: call-shaped text callscope counts as a broken call, ``abstained``, ``empty``)
    and ``not_decoded_agree`` (same credit). BFCL credits every undecoded answer on an
    irrelevance case; callscope solves only a clean abstention, so ``broken`` counts the
    answers BFCL credits and callscope does not. Returns ``{"by_category": {category:
    {kind: counts}}, "disagreements": [{"id", "category", "kind", "text", "bfcl_decoded",
    "bfcl_credited", "callscope", "callscope_solved", "reason"}]}`` (reasons:
    :data:`RELEVANCE_REASONS`).
    """
    by_category: dict[str, dict[str, Counter[str]]] = {}
    disagreements: list[dict[str, Any]] = []
    for case in cases:
        category = str(case.meta.get("category"))
        table = by_category.setdefault(category, {k: Counter() for k in RELEVANCE_ANSWER_KINDS})
        for kind, text in relevance_answers(case).items():
            row = table[kind]
            if text is None:
                row["skipped"] += 1
                continue
            decoded, credited = bfcl_relevance_verdict(text, category)
            what, solved = callscope_relevance_verdict(case, text)
            row["total"] += 1
            if decoded:
                row["decoded"] += 1
                row["agree" if credited == solved else "disagree"] += 1
            else:
                row["not_decoded"] += 1
                row["callscope_" + what if what == "calls" else what] += 1
                row["not_decoded_agree" if credited == solved else "not_decoded_disagree"] += 1
            if credited != solved:
                disagreements.append(
                    {
                        "id": case.id,
                        "category": category,
                        "kind": kind,
                        "text": text,
                        "bfcl_decoded": decoded,
                        "bfcl_credited": credited,
                        "callscope": what,
                        "callscope_solved": solved,
                        "reason": _relevance_reason(decoded, what),
                    }
                )
    return {
        "by_category": {c: {k: dict(v) for k, v in t.items()} for c, t in by_category.items()},
        "disagreements": disagreements,
    }
