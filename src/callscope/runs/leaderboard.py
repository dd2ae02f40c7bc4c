"""callscope over a whole BFCL single-turn leaderboard: every stored answer decoded as BFCL's
handler decoded it, diagnosed by the cascade, beside BFCL's committed verdict and BFCL's
installed checker on the same decoded answer.

Per model (:func:`diagnose_model`), one pass over its answers:

1. the answer is decoded by the model's BFCL decoder
   (:mod:`callscope.parse.bfcl_decode`, chosen by
   :func:`~callscope.benchmarks.bfcl.single_results.decoder_choice`: BFCL's handler map, or
   for a model it does not name the decoder that reads the most of a sample of its answers;
   a model whose answers mostly fail every decoder is :attr:`ModelResult.undecodable`); for
   the models BFCL compared with ``.`` written ``_`` the call names are mapped back to the case's own names;
2. an answer from which the decoder reads no call is ``broken`` when it holds a call all the
   same (callscope's own parser reads one in the text, or it is a native call list the
   decoder refuses), ``empty`` when it holds nothing, else ``abstained`` (prose, or Raven's
   explicit ``out_of_domain``);
3. the cascade judges every call (:func:`callscope.saag.answer.diagnose_answer`), the answer
   is scored against the installed gold (:func:`callscope.saag.answer.score_answer`);
4. BFCL's installed checker judges the decoded answer (``--no-checker`` skips it): the
   reproduction of BFCL's accept / reject.

What each answer yields is one row of a small numpy record array (:data:`ROW`, 37 bytes),
so a model costs ~46 KB after it is read, whatever its answers held; examples are
kept for at most :data:`EXAMPLES_PER_MODEL` answers per table and model.

Across models (:func:`drifted_cases`): a case whose installed question or gold differs from
the 2024 one cannot be seen directly (the 2024 question files are not published with the
answers). Two kinds of evidence are used, and a case with either is left out of every rate
and counted: *function drift*, at least :data:`MIN_MODELS_DRIFT` models whose answer BFCL
accepted in 2024 call a function the installed case does not have; *gold drift*, at least
:data:`MIN_MODELS_DRIFT` models, and at least :data:`DRIFT_SHARE` of the models with a
decodable answer, whose committed verdict the installed checker reverses on the same
decoded answer. A run of fewer than :data:`MIN_MODELS_EVIDENCE` models of a v2 tree has too
little evidence of its own and leaves out :data:`KNOWN_DRIFT_V2` (what the whole 2024 folder
shows) as ``known_v2``.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from callscope.benchmarks.bfcl.package import sanitize_function_name
from callscope.benchmarks.bfcl.single import ANY_CALL_CATEGORIES as BFCL_ANY_CALL_CATEGORIES
from callscope.benchmarks.bfcl.single import NO_CALL_CATEGORIES as BFCL_NO_CALL_CATEGORIES
from callscope.benchmarks.bfcl.single import (
    any_call_solved,
    bfcl_answer_verdict,
    load_bfcl_detailed,
)
from callscope.benchmarks.bfcl.single_results import (
    INSTALLED_CATEGORIES,
    SingleTurnModel,
    StoredAnswer,
    decoder_choice,
    dotted_names,
)
from callscope.parse.bfcl_decode import (
    EVALUATED_BY_BFCL,
    BadArguments,
    DecoderChoice,
    Irrelevant,
    WrongFormat,
    decode_bfcl,
)
from callscope.parse.literals import Rejected
from callscope.parse.text import EMPTY_OUTPUT, NO_CALL_FOUND, parse_output
from callscope.records import KIND_GROUPS, FailureKind
from callscope.runs.leaderboard_reference import (  # noqa: F401 (importable from here)
    UNSTATED_NUMBER,
    UNSTATED_TEXT,
    Reference,
    unstated_reference,
)
from callscope.saag.answer import NO_CALL_KINDS, diagnose_answer, no_call_kind, score_answer
from callscope.types import Case, ParseResult, ToolCall

#: today's categories of the 2024 leaderboard, in report order (the reader's list)
CATEGORIES: tuple[str, ...] = INSTALLED_CATEGORIES
NO_CALL_CATEGORIES = frozenset(BFCL_NO_CALL_CATEGORIES)
#: where any call is right (no gold call): solved, and accepted by BFCL, when a call decodes
ANY_CALL_CATEGORIES = frozenset(BFCL_ANY_CALL_CATEGORIES)
#: how the decoder read an answer
DECODE = ("calls", "failed", "wrong_format", "bad_arguments", "irrelevant", "evaluated")
#: what an answer without a call is (0: it has calls)
NO_CALL = ("", *NO_CALL_KINDS)
EXAMPLES_PER_MODEL = 3
MIN_MODELS_DRIFT = 3
DRIFT_SHARE = 0.25
#: below this many models a run has too little evidence of its own: a v2 (2024) tree then
#: leaves out :data:`KNOWN_DRIFT_V2`
MIN_MODELS_EVIDENCE = 10
#: the cases the whole 2024-08 leaderboard (63 models) shows to have drifted between v2 and
#: bfcl-eval 2026.3.23 (all by gold-drift evidence; ``calibrate leaderboard`` on that folder,
#: table ``left_out``)
KNOWN_DRIFT_V2: frozenset[str] = frozenset(
    {
        "simple_python_5",
        "simple_python_156",
        "simple_python_183",
        "simple_python_196",
        "simple_python_277",
        "simple_python_316",
        "simple_python_375",
        "multiple_64",
        "parallel_158",
        "parallel_195",
        "parallel_multiple_10",
        "parallel_multiple_141",
        "parallel_multiple_177",
        "parallel_multiple_179",
    }
)

#: one answer's facts (module docstring)
ROW = np.dtype(
    [
        ("case", "i4"),  # index into the run's case list
        ("cat", "i1"),
        ("scored", "?"),
        ("bfcl_ok", "?"),  # BFCL's committed verdict: accepted (False when not scored)
        ("err", "i2"),  # BFCL's error type, index into the run's error_types (-1: none)
        ("decode", "i1"),  # index into DECODE
        ("n_calls", "i2"),
        ("no_call", "i1"),  # index into NO_CALL
        ("stage", "i1"),  # the answer's stage (0: passed)
        ("calls_stage", "i2", (4,)),  # calls by stage 0..3
        ("unstated", "?"),  # a call with a value the cascade finds unstated (hard / numeric)
        ("beyond_gold", "?"),  # unstated, and the installed gold answer of the case is not
        ("soft", "?"),  # a call with a weakly grounded value
        ("vhr_sum", "f4"),
        ("vhr_n", "i2"),
        ("passed", "?"),  # the cascade passed the answer
        ("solved", "?"),  # callscope's answer solve against the installed gold
        ("checker", "i1"),  # BFCL's installed checker on the decoded answer: 1, 0, -1 not run
        ("unknown_fn", "?"),  # a decoded call names a function the installed case lacks
        ("checker_err", "i2"),  # the installed checker's error type (index, -1: none)
    ]
)


@dataclass
class Example:
    """One answer shown in a table: model, case, category, the answer's calls as text, what
    the table says about it."""

    model: str
    case_id: str
    category: str
    answer: str
    note: str


@dataclass
class ModelResult:
    """One model's answers as :data:`ROW` records, plus its decoder, BFCL's score headers,
    what was left out while reading, examples, and the seconds spent (``read``, ``decode``:
    the BFCL decoder, ``diagnose``: the cascade and the gold scores, ``checker``: BFCL's
    installed checker, ``page``: the case page)."""

    model: str
    decoder: str
    rows: np.ndarray
    headers: dict[str, dict[str, Any]]
    left_out: Counter[str]
    problems: list[str]
    accepted_unstated: list[Example] = field(default_factory=list)
    rejected_passing: list[Example] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    choice: DecoderChoice | None = None

    @property
    def undecodable(self) -> bool:
        """Its answers mostly fail every decoder (:attr:`DecoderChoice.undecodable`): left
        out of the ranked tables and of the drift evidence, and named on its own."""
        return self.choice is not None and self.choice.undecodable


class CaseTable:
    """The installed cases of the categories read, by id (one load of bfcl-eval's data)."""

    def __init__(self, categories: Iterable[str] = CATEGORIES[:5]) -> None:
        loaded = load_bfcl_detailed(list(categories))
        self.cases: list[Case] = loaded.cases
        self.index: dict[str, int] = {c.id: i for i, c in enumerate(self.cases)}
        self.bfcl_version = loaded.bfcl_version
        self._names: dict[int, set[str]] = {}
        self._back: dict[int, dict[str, str]] = {}
        self._gold_flags: np.ndarray | None = None
        self.reference: Reference | None = None

    def gold_unstated(self, grounding: str | None = None) -> np.ndarray:
        """Per case, whether the cascade finds an unstated value in the installed gold answer
        (:func:`unstated_reference`; computed once)."""
        if self._gold_flags is None:
            self.reference, self._gold_flags = unstated_reference(self, grounding)
        return self._gold_flags

    def names(self, i: int) -> set[str]:
        """The function names of case ``i``."""
        if i not in self._names:
            self._names[i] = {f["name"] for f in self.cases[i].functions}
        return self._names[i]

    def back(self, i: int) -> dict[str, str]:
        """``{name with "." written "_": name}`` of case ``i``'s functions."""
        if i not in self._back:
            self._back[i] = {sanitize_function_name(n): n for n in self.names(i)}
        return self._back[i]


class Vocabulary:
    """Strings (error types) as small integers, in order of first use."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, item: str | None) -> int:
        if item is None:
            return -1
        if item not in self._index:
            self._index[item] = len(self.items)
            self.items.append(item)
        return self._index[item]


def call_text(calls: Iterable[ToolCall]) -> str:
    """Calls as ``name(arg=value, ...)`` text for tables (values as JSON-ish ``repr``)."""
    out = []
    for c in calls:
        args = ", ".join(f"{k}={v!r}" for k, v in c.arguments.items())
        out.append(f"{c.name}({args})")
    return "; ".join(out)


def _rename(calls: list[ToolCall], back: dict[str, str], known: set[str]) -> list[ToolCall]:
    return [
        ToolCall(name=back[c.name], arguments=c.arguments)
        if c.name not in known and c.name in back
        else c
        for c in calls
    ]


def decode_answer(
    decoder: str, result: Any, rename: Callable[[list[ToolCall]], list[ToolCall]] | None = None
) -> tuple[ParseResult, str]:
    """One stored answer as a :class:`ParseResult` and how it decoded (:data:`DECODE`): the
    decoder's calls; else an error that :func:`~callscope.saag.answer.no_call_kind` reads as
    ``abstained``, ``empty`` or ``broken`` (:func:`_no_call`; Raven's ``out_of_domain`` is an
    abstention, a call whose arguments are not an object is broken)."""
    try:
        calls = decode_bfcl(decoder, result)
    except Irrelevant:
        return ParseResult(error=NO_CALL_FOUND), "irrelevant"
    except BadArguments as exc:
        return ParseResult(error=f"BFCL decoder: {exc}"), "bad_arguments"
    except Rejected as exc:
        how = (
            "wrong_format"
            if isinstance(exc, WrongFormat)
            else "evaluated"
            if str(exc) == EVALUATED_BY_BFCL
            else "failed"
        )
        return _no_call(result, f"BFCL decoder: {exc}"), how
    if calls:
        if rename is not None:
            calls = rename(calls)
        return ParseResult(calls=tuple(calls), form=f"bfcl:{decoder}"), "calls"
    return _no_call(result, "BFCL decoder: no call"), "calls"


def _no_call(result: Any, reason: str) -> ParseResult:
    """An answer without a call BFCL's decoder reads: ``broken`` (the decoder's reason) when
    it holds a call all the same (callscope's own parser reads one in the text, or it is a
    native call list the decoder refused), ``empty`` when it holds nothing, else
    ``abstained`` (prose; prose that merely looks like code, e.g. ``f(x) = x^2``, too)."""
    if not isinstance(result, str):
        if result in (None, [], {}):
            return ParseResult(error=EMPTY_OUTPUT)
        return ParseResult(error=reason)
    lenient = parse_output(result)
    if lenient.calls:
        return ParseResult(error=reason)
    if no_call_kind(lenient) == "empty":
        return ParseResult(error=EMPTY_OUTPUT)
    return ParseResult(error=NO_CALL_FOUND)


def diagnose_model(
    stored: SingleTurnModel,
    table: CaseTable,
    errors: Vocabulary,
    *,
    checker: bool = True,
    grounding: str | None = None,
    on_answer: Callable[[dict[str, Any]], None] | None = None,
) -> ModelResult:
    """One model's answers diagnosed (module docstring). ``on_answer`` receives, per answer,
    the case browser's record of it (the raw answer, decoded calls, verdicts)."""
    t0 = time.process_time()
    answers = stored.answers
    choice = decoder_choice(stored.model, answers)
    decoder = choice.name
    dotted = dotted_names(stored.model)
    rows = np.zeros(len(answers), dtype=ROW)
    out = ModelResult(stored.model, decoder, rows, stored.headers, stored.left_out, stored.problems)
    out.choice = choice
    t_check = t_decode = 0.0
    n = 0
    gold_flags = table.gold_unstated(grounding)
    for a in answers:
        i = table.index.get(a.case_id)
        if i is None:
            out.left_out["not_installed"] += 1
            continue
        case = table.cases[i]
        known = table.names(i)
        rename = functools.partial(_rename, back=table.back(i), known=known) if dotted else None
        t1 = time.process_time()
        parsed, how = decode_answer(decoder, a.result, rename)
        t_decode += time.process_time() - t1
        r = rows[n]
        n += 1
        r["case"] = i
        r["cat"] = CATEGORIES.index(a.category)
        r["scored"] = a.scored
        r["bfcl_ok"] = a.scored and a.rejection is None
        r["err"] = errors(a.rejection.error_type if a.rejection else None)
        r["decode"] = DECODE.index(how)
        r["n_calls"] = len(parsed.calls)
        r["unknown_fn"] = any(c.name not in known for c in parsed.calls)
        verdict = diagnose_answer(
            parsed, case.functions, case.query, grounding=grounding, expect_call=case.expects_call
        )
        kind = verdict.no_call
        r["no_call"] = NO_CALL.index(kind) if kind else 0
        r["stage"] = verdict.stage or 0  # no verdict (stage None) only without a gold class
        r["passed"] = verdict.passed
        groups = dict.fromkeys(KIND_GROUPS, False)
        for checked in verdict.checked:
            d = checked.diagnosis
            r["calls_stage"][d.stage] += 1
            if d.vhr is not None:
                r["vhr_sum"] += d.vhr
                r["vhr_n"] += 1
            for group in KIND_GROUPS:  # the kinds' summary groups (KindInfo.group)
                groups[group] = groups[group] or bool(d.in_group(group))
        if kind:  # the stage-1 "no name" stand-in of a broken answer is not a call
            r["calls_stage"][:] = 0
        for group, flagged in groups.items():
            r[group] = flagged
        r["beyond_gold"] = r["unstated"] and not gold_flags[i]
        if a.category in ANY_CALL_CATEGORIES:
            r["solved"] = any_call_solved(len(parsed.calls))
        else:
            gold = case.gold_calls or ()
            r["solved"] = score_answer(parsed.calls, list(gold), case.functions, kind).solved
        verdict_text = None
        if checker:
            t1 = time.process_time()
            ok, verdict_text = _checker(case, a.category, parsed, how)
            t_check += time.process_time() - t1
            r["checker"] = ok
            r["checker_err"] = errors(verdict_text.split(": ", 1)[0] if verdict_text else None)
        else:
            r["checker"] = -1
            r["checker_err"] = -1
        _examples(out, a, case, parsed, verdict, r)
        if on_answer is not None:
            on_answer(_browser_record(a, parsed, verdict, r, verdict_text, errors))
    out.rows = rows[:n]
    total = time.process_time() - t0
    out.seconds = {"decode": t_decode, "diagnose": total - t_check - t_decode, "checker": t_check}
    return out


def _checker(case: Case, category: str, parsed: ParseResult, how: str) -> tuple[int, str | None]:
    """BFCL's verdict on the decoded answer, with the installed checker: irrelevance cases are
    accepted when no call decodes, ``live_relevance`` cases when a call does (BFCL's
    ``relevance_file_runner``); other cases go to
    :func:`~callscope.benchmarks.bfcl.single.bfcl_answer_verdict` when the decoder read a
    list of calls, and are rejected with the decoder's error type otherwise."""
    if category in NO_CALL_CATEGORIES:
        called = bool(parsed.calls) or how == "bad_arguments"
        return (0, "relevance_error:decoder_success") if called else (1, None)
    if category in ANY_CALL_CATEGORIES:  # BFCL: a non-empty call list must decode
        return (1, None) if parsed.calls else (0, "relevance_error:decoder_failed")
    if how == "wrong_format":
        return 0, "ast_decoder:decoder_wrong_output_format"
    if how != "calls":
        return 0, "ast_decoder:decoder_failed"
    ok, error = bfcl_answer_verdict(case, list(parsed.calls), category)
    return (1, None) if ok else (0, error or "invalid")


def _examples(
    out: ModelResult, a: StoredAnswer, case: Case, parsed: ParseResult, verdict: Any, r: Any
) -> None:
    """Keep the first few answers of the first cross table (beyond gold) and one answer per
    BFCL error type of the second (rejected, every stage passes) per model."""
    if r["bfcl_ok"] and r["beyond_gold"] and len(out.accepted_unstated) < EXAMPLES_PER_MODEL:
        values = []
        for checked in verdict.checked:
            d = checked.diagnosis
            args = checked.call.arguments if checked.call else {}
            # the unstated group's kinds, the last kind's values first (as this note was)
            kinds = reversed(FailureKind.of_group("unstated"))
            values += [f"{p}={args.get(p)!r}" for k in kinds for p in getattr(d, k.value)]
        gold = call_text(
            ToolCall(name=g["name"], arguments=g["arguments"]) for g in case.gold_calls or ()
        )
        note = f"{', '.join(values)} (gold: {gold}; request: {case.query[:200]})"
        out.accepted_unstated.append(
            Example(out.model, case.id, a.category, call_text(parsed.calls), note)
        )
    if (
        a.scored
        and not r["bfcl_ok"]
        and r["passed"]
        and parsed.calls
        and len(out.rejected_passing) < 50
    ):
        error = a.rejection.error_type if a.rejection else ""
        if sum(e.note == error for e in out.rejected_passing) < 1:
            out.rejected_passing.append(
                Example(out.model, case.id, a.category, call_text(parsed.calls), error)
            )


def _browser_record(
    a: StoredAnswer,
    parsed: ParseResult,
    verdict: Any,
    r: Any,
    checker_error: str | None,
    errors: Vocabulary,
) -> dict[str, Any]:
    """What the case browser shows of one answer."""
    raw = a.result if isinstance(a.result, str) else repr(a.result)
    return {
        "id": a.case_id,
        "raw": raw[:4000],
        "calls": [{"name": c.name, "arguments": c.arguments} for c in parsed.calls],
        "no_call": NO_CALL[int(r["no_call"])] or None,
        "parse_error": parsed.error,
        "stage": int(r["stage"]),
        "kinds": [[str(k) for k in c.diagnosis.failure_kinds()] for c in verdict.checked],
        "bfcl": ("accepted" if r["bfcl_ok"] else "rejected") if a.scored else "not scored",
        "bfcl_error": (f"{a.rejection.error_type}: {a.rejection.error}" if a.rejection else None),
        "checker": {1: "accepted", 0: "rejected"}.get(int(r["checker"])),
        "checker_error": checker_error,
        "solved": bool(r["solved"]),
    }


def drifted_cases(results: Iterable[ModelResult], n_cases: int) -> dict[str, set[int]]:
    """The cases whose installed question or gold differs from the one the answers were
    graded on, by evidence (module docstring): ``{"function_drift": {case index},
    "gold_drift": {...}}``."""
    accepted_unknown = np.zeros(n_cases, dtype=np.int32)
    reversed_ = np.zeros(n_cases, dtype=np.int32)
    decodable = np.zeros(n_cases, dtype=np.int32)
    evaluated = DECODE.index("evaluated")
    for res in results:
        rows = res.rows
        if not len(rows) or res.undecodable:  # its failures are ours, not drift
            continue
        np.add.at(accepted_unknown, rows["case"], rows["bfcl_ok"] & rows["unknown_fn"])
        ran = rows["scored"] & (rows["checker"] >= 0) & (rows["decode"] != evaluated)
        np.add.at(decodable, rows["case"], ran)
        flip = ran & (rows["checker"].astype(bool) != rows["bfcl_ok"])
        np.add.at(reversed_, rows["case"], flip)
    fn = set(np.flatnonzero(accepted_unknown >= MIN_MODELS_DRIFT).tolist())
    gold = set(
        np.flatnonzero(
            (reversed_ >= MIN_MODELS_DRIFT) & (reversed_ >= DRIFT_SHARE * np.maximum(decodable, 1))
        ).tolist()
    )
    return {"function_drift": fn, "gold_drift": gold - fn}
