"""The answer is the unit: every call of an answer diagnosed, and an answer scored against gold.

A model's answer to a request holds zero, one or several tool calls. The SAAG cascade
(:func:`callscope.saag.cascade.diagnose`, paper section 2) judges one call;
:func:`diagnose_answer` runs it on *every* call of the answer, by position, and says what an
answer without a call is (:data:`NO_CALL_KINDS`):

``abstained``
    text a person reads as prose, or the explicit empty list ``[]``;
``broken``
    call syntax or data the parser refused (brackets, braces, JSON, ``name(``), prose that
    writes a registered name as a call that does not parse, or garbage that is neither prose
    nor a call (a run of digits, control characters); the parser's reason is kept;
``empty``
    nothing at all (empty text, no output).

That is decided from the text (:mod:`callscope.parse.no_call`), never from the gold.

The answer's verdict (:class:`~callscope.saag.correction.AnswerVerdict`): it passed when every
call passed; its stage is the earliest failing stage over its calls (0 when all passed); a call
that repeats an earlier one of the same answer (same name and arguments) is listed in
:func:`repeated_positions`. A call the parser could not read beside readable ones (a native
``tool_calls`` entry whose arguments are not JSON, a call cut off after others) is a stage-1
entry at its position, and the readable calls are judged. A broken answer fails at stage 1
(FNEM = -1, registry conformance: SAAG section 2.1) whatever the gold. Only an abstention
(``abstained`` / ``empty``) depends on what the case expects: a stage-1 failure when it
expects a call (``expect_call=True``, the paper's setting: "No function name found"), a pass
when it expects none (``False``), and no verdict at all when that is unknown (``None``: no
gold and no ``meta.expects_call``): its ``stage`` is ``None``, so no count, mean or figure
reads it as passed.

Extrinsic metrics over answers (:func:`score_answer`, SAAG paper section 3's name accuracy and
argument precision / recall / F1, extended from one call to an answer): model calls are matched
to gold calls one to one and independent of order by an optimal assignment
(:func:`match_calls`: most correct pairs, then most agreeing arguments, then most matching
names; exact, by the Hungarian method), and the counts of :func:`~callscope.saag.extrinsic.arg_counts`
are added over the pairs (unmatched gold calls count their expected arguments, unmatched model
calls their predicted ones)::

    name precision = Σ name matches / n_model,   name recall = Σ name matches / n_gold
    arg precision  = Σ |P ∩ G| / Σ |P|,          arg recall  = Σ |P ∩ G| / Σ |G|
    F1 = 2 P R / (P + R);  missing = max(0, n_gold - n_model);  extra = max(0, n_model - n_gold)
    solved = (n_model = n_gold) and every pair correct (name and every argument right)

With no-call gold (``[]``) an abstention (``abstained`` or ``empty``) is correct and every
precision and recall is 1; a broken call is counted apart (not solved: it attempted a call),
while BFCL's own relevance checker credits it (:attr:`AnswerScores.bfcl_credit`).

>>> from callscope.parse import parse_output
>>> weather = [{"name": "get_weather", "parameters": {"type": "object",
...     "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
>>> text = '[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
>>> text += '{"name": "get_weather", "arguments": {"city": "Berlin"}}]'
>>> v = diagnose_answer(parse_output(text), weather, "Weather in Paris and in London?")
>>> [c.diagnosis.stage for c in v.checked], v.stage, v.checked[1].diagnosis.hard
([0, 3], 3, ['city'])
>>> v = diagnose_answer(parse_output("Why did the cat sit on the laptop?"), weather, "A cat joke")
>>> v.no_call, v.stage, v.passed
('abstained', None, False)
>>> v = diagnose_answer(parse_output("{{{{"), weather, "Weather in Paris?", expect_call=False)
>>> v.no_call, v.stage, v.parse_error
('broken', 1, 'invalid JSON at character 1: Expecting property name enclosed in double quotes')
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from callscope.parse.no_call import ABSTAIN_ERRORS, BARE_NAME, NO_CALL_FOUND  # noqa: F401 (doctests)
from callscope.parse.text import NOTHING_ERRORS
from callscope.records import Diagnosis
from callscope.records.answers import (  # noqa: F401 (the answer's verdict: records)
    AnswerVerdict,
    CheckedCall,
    NoCall,
    deciding_call,
    verdict_from_dict,
    verdict_to_dict,
)
from callscope.saag.cascade import diagnose
from callscope.saag.extrinsic import ArgCounts, arg_counts
from callscope.saag.groundings import Grounding, Judge
from callscope.types import ParseResult, ToolCall

#: what an answer without a call is, in the order reports list them
NO_CALL_KINDS: tuple[NoCall, ...] = ("abstained", "broken", "empty")


def no_call_kind(parsed: ParseResult, names: Collection[str] = ()) -> NoCall | None:
    """``None`` when the parser read at least one call; else what the answer is, decided
    from its text (:mod:`callscope.parse.no_call`), never from the gold: ``empty`` (nothing
    answered), ``abstained`` (prose, or the explicit empty list ``[]``) or ``broken`` (call
    syntax or data the parser refused, or garbage; its reason in ``parsed.error``). Prose
    that writes one of the registered ``names`` as a call that does not parse
    (``get_weather(city=`` in a sentence) is ``broken``.

    >>> no_call_kind(ParseResult(error=NO_CALL_FOUND)), no_call_kind(ParseResult(error="x"))
    ('abstained', 'broken')
    >>> p = ParseResult(error=NO_CALL_FOUND, attempts=(("get_weather", "cut off"),))
    >>> no_call_kind(p), no_call_kind(p, ["get_weather"])
    ('abstained', 'broken')
    """
    if parsed.calls:
        return None
    if parsed.error in NOTHING_ERRORS:
        return "empty"
    if parsed.error in ABSTAIN_ERRORS:
        return "broken" if _registered_attempt(parsed, names) is not None else "abstained"
    return "broken"


def _registered_attempt(parsed: ParseResult, names: Collection[str]) -> str | None:
    """Why the first ``name(`` of prose that names a registered function did not parse."""
    if not names:
        return None
    for name, why in parsed.attempts:
        if why == BARE_NAME:  # the whole text one word: a call cut off before its "("
            if any(r.startswith(name) for r in names if isinstance(r, str)):
                return f"{BARE_NAME}: {name}"
        elif name in names:
            return f"{name}(...): {why}"
    return None


def _names(functions: Sequence[Any]) -> Iterator[str]:
    return (f["name"] for f in functions if isinstance(f, dict) and isinstance(f.get("name"), str))


def _unreadable(reason: str | None) -> CheckedCall:
    """A call attempt that could not be read: stage 1, no name (FNEM = -1, SAAG eq. 1)."""
    return CheckedCall(None, Diagnosis(stage=1, fnem=-1), reason)


def diagnose_answer(
    parsed: ParseResult,
    functions: list[dict[str, Any]],
    query: str,
    *,
    grounding: str | Grounding | None = None,
    context: Sequence[str] = (),
    judge: Judge | None = None,
    expect_call: bool | None = None,
) -> AnswerVerdict:
    """The cascade on every call of ``parsed`` (module docstring), in ``grounding`` mode with
    ``context`` and ``judge`` as :func:`~callscope.saag.cascade.diagnose` takes them. A call
    the parser could not read (``parsed.unreadable``) is a stage-1 entry at its position,
    beside the readable calls, which are judged. ``expect_call`` (``Case.expects_call``)
    decides only what an abstention is: a stage-1 failure (``True``), a pass (``False``), or
    neither (``None``, unknown: the verdict's ``stage`` is ``None``). A broken answer fails at
    stage 1 whatever it is."""
    # the registered names decide only what an answer without a readable call is
    names = () if parsed.calls else frozenset(_names(functions))
    kind = no_call_kind(parsed, names)
    if kind is None:
        readable = iter(parsed.calls)
        broken = dict(parsed.unreadable)
        checked = tuple(
            _unreadable(broken[pos])
            if pos in broken
            else CheckedCall(
                call := next(readable),
                diagnose(call, functions, query, grounding=grounding, context=context, judge=judge),
            )
            for pos in range(len(parsed.calls) + len(broken))
        )
        return AnswerVerdict(checked=checked, calls=parsed.calls, expect_call=expect_call)
    if kind == "broken":
        reason = parsed.error if parsed.error not in ABSTAIN_ERRORS else None
        reason = reason or _registered_attempt(parsed, names)
        entries = tuple(_unreadable(why) for _, why in parsed.unreadable) or (_unreadable(reason),)
        return AnswerVerdict(
            checked=entries, parse_error=reason, no_call=kind, expect_call=expect_call
        )
    if expect_call:
        return AnswerVerdict(
            checked=(_unreadable(None),), parse_error=parsed.error, no_call=kind, expect_call=True
        )
    return AnswerVerdict(parse_error=parsed.error, no_call=kind, expect_call=expect_call)


def _frozen(value: Any) -> Any:
    """A hashable form of a JSON-like value, equal exactly when the values are equal."""
    if isinstance(value, dict):
        return ("{", tuple(sorted((str(k), _frozen(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("[", tuple(_frozen(v) for v in value))
    return value


def repeated_positions(calls: Sequence[ToolCall]) -> tuple[int, ...]:
    """The positions (0-based) of calls that repeat an earlier call of the same answer: same
    name and same arguments. Linear in the answer's size (a hash per call; the parser bounds
    argument nesting).

    >>> c = ToolCall("get_weather", {"city": "Paris"})
    >>> repeated_positions([c, ToolCall("get_weather", {"city": "Rome"}), c])
    (2,)
    """
    seen: set[Any] = set()
    out: list[int] = []
    for i, call in enumerate(calls):
        key = (call.name, _frozen(call.arguments))
        if key in seen:
            out.append(i)
        else:
            seen.add(key)
    return tuple(out)


# --------------------------------------------------------------------------- matching


def _assign(weight: list[list[int]]) -> list[tuple[int, int]]:
    """A maximum-weight assignment of the rows of ``weight`` (n rows, m >= n columns) to
    distinct columns: ``[(row, column)]`` for every row. The Hungarian method with
    potentials, O(n^2 m): exact on integer weights."""
    n, m = len(weight), len(weight[0]) if weight else 0
    inf = float("inf")
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    p = [0] * (m + 1)  # p[j]: the row assigned to column j (1-based; 0 = none)
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = -weight[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    return sorted((p[j] - 1, j - 1) for j in range(1, m + 1) if p[j])


def match_calls(
    calls: Sequence[ToolCall],
    gold: Sequence[dict[str, Any]],
    functions: list[dict[str, Any]] | None = None,
) -> list[tuple[int, int]]:
    """Model calls matched to gold calls, one to one and independent of order:
    ``[(model position, gold position)]``, ``min(len(calls), len(gold))`` pairs sorted by
    model position. The matching maximises the number of correct pairs
    (:func:`~callscope.saag.extrinsic.is_correct`), then the agreeing arguments, then the
    matching names (lexicographically, as one integer weight per pair).

    BFCL's ``parallel_function_checker_no_order`` instead takes, for each gold call in turn,
    the first unmatched model call that passes, which can fail an answer a correct matching
    exists for; this matching never does.

    >>> g = [{"name": "f", "arguments": {"x": 1}}, {"name": "f", "arguments": {"x": 2}}]
    >>> match_calls([ToolCall("f", {"x": 2}), ToolCall("f", {"x": 1})], g)
    [(0, 1), (1, 0)]
    """
    if not calls or not gold:
        return []
    return _match(calls, _counts(calls, gold, functions))


def _counts(
    calls: Sequence[ToolCall], gold: Sequence[dict[str, Any]], functions: Any
) -> list[list[ArgCounts]]:
    """:func:`~callscope.saag.extrinsic.arg_counts` of every (model call, gold call) pair."""
    return [[arg_counts(c, g, functions) for g in gold] for c in calls]


def _right(c: ArgCounts) -> bool:
    """:func:`~callscope.saag.extrinsic.is_correct` from a pair's counts: the names match and
    precision and recall are both 1 (|P ∩ G| = |P| = |G|)."""
    return c.name_match and c.correct == c.predicted == c.expected


def _match(calls: Sequence[ToolCall], counts: list[list[ArgCounts]]) -> list[tuple[int, int]]:
    """:func:`match_calls` over the pairs' counts (one pair: no choice to make)."""
    n, m = len(counts), len(counts[0])
    if n == 1 and m == 1:
        return [(0, 0)]
    k1 = min(n, m) + 1  # names: at most k1 - 1 in a matching
    k2 = (sum(len(c.arguments) for c in calls) + 1) * k1  # arguments: at most Σ|P| in all
    weight = [[_right(c) * k2 + c.correct * k1 + c.name_match for c in row] for row in counts]
    if n <= m:
        return _assign(weight)
    transposed = [list(col) for col in zip(*weight, strict=True)]
    return sorted((i, j) for j, i in _assign(transposed))


@dataclass(frozen=True)
class AnswerScores:
    """The extrinsic metrics of one answer against its gold answer (module docstring).

    ``pairs``: the matching, ``(model position, gold position)``; ``correct``: whether each
    pair is right (name and every argument); ``no_call``: what an answer without a call is;
    ``bfcl_credit``: with no-call gold, whether BFCL's relevance checker would credit the
    answer (it does whenever no call decodes, a broken call included), else ``None``."""

    n_model: int
    n_gold: int
    pairs: tuple[tuple[int, int], ...]
    correct: tuple[bool, ...]
    name_precision: float
    name_recall: float
    name_f1: float
    arg_precision: float
    arg_recall: float
    arg_f1: float
    missing: int
    extra: int
    solved: bool
    no_call: NoCall | None = None
    bfcl_credit: bool | None = None

    def to_row(self) -> dict[str, Any]:
        """The answer-level keys of a ``score`` row (``answer_`` prefixed where a one-call
        key of the same meaning exists)."""
        return {
            "calls_made": self.n_model,
            "calls_expected": self.n_gold,
            "missing_calls": self.missing,
            "extra_calls": self.extra,
            "name_precision": self.name_precision,
            "name_recall": self.name_recall,
            "name_f1": self.name_f1,
            "answer_arg_precision": self.arg_precision,
            "answer_arg_recall": self.arg_recall,
            "answer_arg_f1": self.arg_f1,
            "answer_solved": self.solved,
            "matched": [list(p) for p in self.pairs],
            **({"bfcl_credit": self.bfcl_credit} if self.bfcl_credit is not None else {}),
        }


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def score_answer(
    calls: Sequence[ToolCall],
    gold: Sequence[dict[str, Any]],
    functions: list[dict[str, Any]] | None = None,
    no_call: NoCall | None = None,
) -> AnswerScores:
    """The extrinsic metrics of the answer ``calls`` (``no_call``: what an answer without a
    call is, :func:`no_call_kind`) against the gold calls ``gold`` (``[]``: no call is right);
    formulas in the module docstring.

    >>> g = [{"name": "w", "arguments": {"city": "Paris"}}, {"name": "w", "arguments": {"city": "London"}}]
    >>> s = score_answer([ToolCall("w", {"city": "Paris"}), ToolCall("w", {"city": "Berlin"})], g)
    >>> s.solved, s.correct, s.arg_precision, s.name_recall
    (False, (True, False), 0.5, 1.0)
    >>> score_answer([], [], no_call="broken").solved, score_answer([], [], no_call="broken").bfcl_credit
    (False, True)
    """
    n_model, n_gold = len(calls), len(gold)
    if not gold:  # a no-call case
        clean = n_model == 0 and no_call in ("abstained", "empty")
        p = 1.0 if clean else 0.0
        return AnswerScores(
            n_model, 0, (), (), p, 1.0, _f1(p, 1.0), p, 1.0, _f1(p, 1.0), 0, n_model,
            clean, no_call, bfcl_credit=n_model == 0,
        )  # fmt: skip
    counts = _counts(calls, gold, functions) if calls else []
    pairs = _match(calls, counts) if calls else []
    correct = tuple(_right(counts[i][j]) for i, j in pairs)
    matched_gold = {j for _, j in pairs}
    names = right = predicted = expected = 0
    for i, j in pairs:
        c = counts[i][j]
        names += c.name_match
        right += c.correct
        predicted += c.predicted
        expected += c.expected
    matched_model = {i for i, _ in pairs}
    predicted += sum(len(calls[i].arguments) for i in range(n_model) if i not in matched_model)
    expected += sum(
        arg_counts(None, gold[j], functions).expected
        for j in range(n_gold)
        if j not in matched_gold
    )
    name_p = names / n_model if n_model else 0.0
    name_r = names / n_gold
    arg_p = right / predicted if predicted else (1.0 if names and right == expected else 0.0)
    arg_r = right / expected if expected else (1.0 if names else 0.0)
    return AnswerScores(
        n_model=n_model,
        n_gold=n_gold,
        pairs=tuple(pairs),
        correct=correct,
        name_precision=name_p,
        name_recall=name_r,
        name_f1=_f1(name_p, name_r),
        arg_precision=arg_p,
        arg_recall=arg_r,
        arg_f1=_f1(arg_p, arg_r),
        missing=max(0, n_gold - n_model),
        extra=max(0, n_model - n_gold),
        solved=n_model == n_gold and all(correct),
        no_call=no_call,
    )
