"""The BFCL single-turn leaderboard report's tables (the figure, the case pages and the page:
:mod:`callscope.report.leaderboard_pages`).

Every rate is over the answers of the cases kept (the cases left out for drift,
:func:`callscope.runs.leaderboard.drifted_cases`, are counted apart) with its Wilson 95%
interval (:func:`callscope.core.stats.rate_ci`). The tables
(:func:`leaderboard_tables`, each a :class:`~callscope.core.table.Table`):

``leaderboard``
    models ranked by BFCL accuracy (BFCL's committed verdicts); the same accuracy reproduced
    by BFCL's installed checker on callscope's decoding; callscope's answer solve against the
    installed gold; the cascade's pass rate (every call passes the three stages; a no-call
    case passes on a clean abstention); answers with a value the cascade finds unstated
    (stage 3 ``hard`` or ``numeric``); VHR (the mean of the calls' value hallucination rate,
    SAAG eq. 8-9); broken answers.
``stage_mix``
    the first failing stage over answers and over calls (answers without a call apart).
``relevance``
    on the no-call cases: clean abstentions, empty answers, broken answers, answers with a
    call; BFCL's relevance accuracy beside.
``accepted_unstated``
    answers BFCL accepted in which the cascade finds a value the request does not state,
    with the first example.
``rejected_passing``
    answers BFCL rejected (that made a call) which pass every stage, with BFCL's error types.
``agreement``, ``disagreements``
    BFCL's installed checker on callscope's decoding against the committed verdicts, per
    model, and every disagreement class with a count and an example.
``formats``
    the decoders: models, answers, how many decoded to calls, to none, failed; how each was
    chosen (BFCL's handler map, or a sample of the answers of a model it does not name, with
    the alternatives' counts). A model whose answers mostly fail every decoder
    (:attr:`~callscope.runs.leaderboard.ModelResult.undecodable`) is in this table only, and
    named by :func:`undecodable_note`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from callscope.core.table import Table, pct
from callscope.report.leaderboard_agreement import (
    agreement_table,
    disagreement_classes,
    disagreements_table,
)
from callscope.report.leaderboard_rows import (  # noqa: F401 (importable from here)
    _ranked,
    _rate,
    _vhr,
    decoded_results,
    kept_rows,
    left_out_cases,
    undecodable_note,
)
from callscope.runs.leaderboard import (
    CATEGORIES,
    DECODE,
    NO_CALL,
    NO_CALL_CATEGORIES,
    ModelResult,
)
from callscope.runs.leaderboard_tree import LeaderboardRun

#: the table formats every leaderboard table is written in
FORMATS: tuple[str, ...] = ("md", "csv", "html")
CASES_DIR = "cases"
_NO_CALL_CATS = [CATEGORIES.index(c) for c in NO_CALL_CATEGORIES]


def leaderboard_table(run: LeaderboardRun) -> Table:
    """Models ranked by BFCL accuracy (module docstring)."""
    broken = NO_CALL.index("broken")
    rows = []
    raw = []
    for rank, (r, k) in enumerate(_ranked(run), start=1):
        n = len(k)
        scored = int(k["scored"].sum())
        ran = k[k["checker"] >= 0]
        rows.append(
            [
                rank,
                r.model,
                n,
                _rate(k["bfcl_ok"].sum(), scored),
                pct(ran["checker"].mean()) if len(ran) else "n/a",
                _rate(k["solved"].sum(), n),
                _rate(k["passed"].sum(), n),
                _rate(k["unstated"].sum(), n),
                _vhr(k),
                _rate((k["no_call"] == broken).sum(), n),
            ]
        )
        raw.append(
            [
                rank,
                r.model,
                n,
                int(k["bfcl_ok"].sum()),
                int(ran["checker"].sum()) if len(ran) else "",
                int(k["solved"].sum()),
                int(k["passed"].sum()),
                int(k["unstated"].sum()),
                round(float(k["vhr_sum"].sum() / max(1, k["vhr_n"].sum())), 6),
                int((k["no_call"] == broken).sum()),
            ]
        )
    columns = [
        "rank",
        "model",
        "answers",
        "BFCL acc % [95% CI]",
        "BFCL checker now %",
        "callscope solve %",
        "cascade pass %",
        "unstated value %",
        "VHR",
        "broken %",
    ]
    raw_columns = [
        "rank",
        "model",
        "answers",
        "bfcl_accepted",
        "checker_accepted",
        "solved",
        "cascade_passed",
        "unstated",
        "vhr",
        "broken",
    ]
    return Table(
        columns,
        rows,
        title="BFCL leaderboard through callscope",
        caption=(
            "Models ranked by BFCL accuracy (its committed verdicts). 'BFCL checker now': "
            "the installed checker on callscope's decoding of the same answers. 'callscope "
            "solve': callscope's answer solve against the installed gold. 'cascade pass': "
            "every call passes the three stages without gold. 'unstated value': an answer "
            "with a value the request does not state (stage 3 hard / numeric)."
        ),
        note=(
            "Wilson 95% intervals; VHR: percentile bootstrap over answers; rates over the "
            "answers of the cases kept."
        ),
        name="leaderboard",
        align="rlrrrrrrrr",
        raw=Table(raw_columns, raw),
    )


def stage_mix_table(run: LeaderboardRun) -> Table:
    """The first failing stage over answers and over calls, per model."""
    rows = []
    for r, k in _ranked(run):
        n = len(k)
        calls = k["calls_stage"].sum(axis=0)
        n_calls = int(calls.sum())
        no_call = k["no_call"] > 0
        cells = [r.model, n]
        for stage in (1, 2, 3):
            cells.append(_rate(((k["stage"] == stage) & ~no_call).sum(), n))
        cells.append(_rate(no_call.sum(), n))
        cells.append(n_calls)
        for stage in (1, 2, 3):
            cells.append(_rate(calls[stage], n_calls))
        rows.append(cells)
    columns = [
        "model",
        "answers",
        "answers: stage 1 %",
        "stage 2 %",
        "stage 3 %",
        "no call %",
        "calls",
        "calls: stage 1 %",
        "stage 2 %",
        "stage 3 %",
    ]
    return Table(
        columns,
        rows,
        title="Stage mix over answers and over calls",
        caption=(
            "Answers: the answer's first failing stage (answers without a call apart, "
            "whatever the case). Calls: every decoded call's first failing stage."
        ),
        note="Wilson 95% intervals.",
        name="stage_mix",
        align="lrrrrrrrrr",
    )


def relevance_table(run: LeaderboardRun) -> Table:
    """What each model answered on the no-call cases."""
    rows = []
    for r, k in _ranked(run):
        rel = k[np.isin(k["cat"], _NO_CALL_CATS)]
        n = len(rel)
        if not n:
            continue
        cells = [r.model, n, _rate(rel["bfcl_ok"].sum(), int(rel["scored"].sum()))]
        for kind in ("abstained", "empty", "broken"):
            cells.append(_rate((rel["no_call"] == NO_CALL.index(kind)).sum(), n))
        cells.append(_rate((rel["n_calls"] > 0).sum(), n))
        rows.append(cells)
    return Table(
        ["model", "cases", "BFCL relevance %", "abstained %", "empty %", "broken %", "called %"],
        rows,
        title="Relevance cases: abstention vs broken",
        caption=(
            "BFCL credits every answer from which no call decodes, a broken one included; "
            "callscope counts a clean abstention apart from call-shaped text that does not "
            "decode."
        ),
        note="Wilson 95% intervals.",
        name="relevance",
        align="lrrrrrr",
    )


def accepted_unstated_table(run: LeaderboardRun) -> Table:
    """Answers BFCL accepted whose values the cascade finds unstated, per model; the
    detector's reference rows first (the installed gold answers: false alarms; the gold
    answers with one value no request states: detection)."""
    rows: list[list[Any]] = []
    ref = run.reference
    if ref is not None:
        rows.append(
            ["(reference) installed gold answers", ref.gold, ref.gold_flagged,
             _rate(ref.gold_flagged, ref.gold), "", "false alarms of the test"]
        )  # fmt: skip
        rows.append(
            ["(reference) gold, one value made up", ref.perturbed, ref.perturbed_flagged,
             _rate(ref.perturbed_flagged, ref.perturbed), "", "detection of the test"]
        )  # fmt: skip
    body = []
    for r, k in _ranked(run):
        acc = k[k["bfcl_ok"] & (k["n_calls"] > 0)]
        n = len(acc)
        beyond = int(acc["beyond_gold"].sum())
        ex = r.accepted_unstated[0] if r.accepted_unstated else None
        example = f"{ex.case_id}: {ex.note}" if ex else ""
        body.append(
            (
                beyond / n if n else 0.0,
                [r.model, n, int(acc["unstated"].sum()), _rate(acc["unstated"].sum(), n),
                 _rate(beyond, n), example[:300]],
            )
        )  # fmt: skip
    rows.extend(cells for _, cells in sorted(body, key=lambda p: -p[0]))
    return Table(
        ["model", "accepted with calls", "unstated", "unstated %", "beyond gold %", "example"],
        rows,
        title="BFCL accepted, the cascade finds a value the request does not state",
        caption=(
            "Answers BFCL accepted (with at least one call) in which a call carries a value "
            "the cascade's stage 3 finds neither in the request nor derived from it "
            "(hard / numeric). 'beyond gold': the installed gold answer of the same case has "
            "no such value (the gold's own flags are the test's false alarms: reference "
            "rows). Sorted by 'beyond gold'."
        ),
        note="Wilson 95% intervals.",
        name="accepted_unstated",
        align="lrrrrl",
    )


def _call_rows(k: np.ndarray) -> np.ndarray:
    """The answers of the cases where a call is expected."""
    return k[~np.isin(k["cat"], _NO_CALL_CATS)]


def rejected_passing_table(run: LeaderboardRun) -> Table:
    """Answers BFCL rejected that pass every stage (cases expecting a call), with BFCL's
    error types."""
    rows = []
    for r, k in _ranked(run):
        k = _call_rows(k)
        rej = k[k["scored"] & ~k["bfcl_ok"] & (k["n_calls"] > 0)]
        n = len(rej)
        passing = rej[rej["passed"]]
        types = Counter(run.error_types[e] for e in passing["err"] if e >= 0)
        top = ", ".join(f"{t} {c}" for t, c in types.most_common(3))
        rows.append([r.model, n, len(passing), _rate(len(passing), n), top])
    return Table(
        ["model", "rejected with calls", "pass every stage", "%", "BFCL's error types (top 3)"],
        rows,
        title="BFCL rejected, every stage passes",
        caption=(
            "Answers BFCL rejected (with at least one call, on cases that expect a call) whose "
            "every call passes the cascade: the request supports every value; what BFCL "
            "rejected is a difference from its gold (another number of calls, a value of "
            "another form or type), which a reference-free check cannot see."
        ),
        note="Wilson 95% intervals.",
        name="rejected_passing",
        align="lrrrl",
    )


def rejected_passing_types_table(run: LeaderboardRun) -> Table:
    """Over every model: BFCL's error types of rejected answers, and how many of them pass
    every stage."""
    out = left_out_cases(run)
    total: Counter[str] = Counter()
    passing: Counter[str] = Counter()
    example: dict[str, str] = {}
    for r in decoded_results(run):
        k = _call_rows(kept_rows(r, out))
        k = k[k["scored"] & ~k["bfcl_ok"] & (k["n_calls"] > 0) & (k["err"] >= 0)]
        for x in k:
            t = run.error_types[x["err"]]
            total[t] += 1
            if x["passed"] and t not in example:
                case_id = run.case_ids[x["case"]]
                shown = next((e.answer for e in r.rejected_passing if e.case_id == case_id), "")
                example[t] = f"{r.model} / {case_id}: {shown}"[:200]
            passing[t] += bool(x["passed"])
    rows = [
        [t, n, passing[t], _rate(passing[t], n), example.get(t, "")] for t, n in total.most_common()
    ]
    return Table(
        ["BFCL error type", "rejected with calls", "pass every stage", "%", "example"],
        rows,
        title="BFCL rejected, every stage passes: by BFCL's error type (all models)",
        caption="The cross table above by BFCL's error type, over every model.",
        note="Wilson 95% intervals.",
        name="rejected_passing_types",
        align="lrrrl",
    )


def _chosen_by(r: ModelResult) -> str:
    c = r.choice
    if c is None or c.by == "handler":
        return "handler map"
    return f"sample of {c.sample}" + (" (undecodable)" if c.undecodable else "")


def formats_table(run: LeaderboardRun) -> Table:
    """The decoders (answer formats) and what each decoded; for a model the handler map does
    not name, the decoder its sample chose and the alternatives' counts."""
    by: dict[tuple[str, str], list[ModelResult]] = {}
    for r in run.results:
        by.setdefault((r.decoder, _chosen_by(r)), []).append(r)
    rows = []
    for (decoder, how), results in sorted(
        by.items(), key=lambda p: -sum(len(r.rows) for r in p[1])
    ):
        k = np.concatenate([r.rows for r in results])
        n = len(k)
        calls = (k["decode"] == DECODE.index("calls")) & (k["n_calls"] > 0)
        none = (k["decode"] == DECODE.index("calls")) & (k["n_calls"] == 0)
        cells = [decoder, len(results), n, int(calls.sum()), int(none.sum())]
        for how_decoded in DECODE[1:]:
            cells.append(int((k["decode"] == DECODE.index(how_decoded)).sum()))
        cells.append(int((k["no_call"] == NO_CALL.index("broken")).sum()))
        sampled = [r for r in results if r.choice is not None and r.choice.by == "sample"]
        cells.append(how)
        cells.append(
            "; ".join(
                f"{r.model}: {r.choice.name} {r.choice.reads[0][1]}/{r.choice.sample}, "
                f"then {r.choice.alternatives()}"
                for r in sampled
                if r.choice is not None
            )
        )
        rows.append(cells)
    return Table(
        [
            "decoder",
            "models",
            "answers",
            "to calls",
            "to no call",
            "failed",
            "wrong format",
            "bad arguments",
            "out of domain",
            "arithmetic",
            "broken",
            "chosen by",
            "sample reads (chosen, then the next decoders)",
        ],
        rows,
        title="Answer formats",
        caption=(
            "Each model's answers read by its BFCL handler's decoder (2024 handler map), "
            "re-written without eval: how many decoded to calls, to an empty call list, and "
            "how many the decoder refused (failed: BFCL's decoder_failed; wrong format: "
            "decoder_wrong_output_format; arithmetic: BFCL evaluated it). 'broken': answers "
            "without a readable call in which callscope's own parser finds a call. A model "
            "the handler map does not name is read by the decoder that reads calls from the "
            "most of a sample of its answers (every decoder tried; the next ones' counts "
            "beside); one whose answers mostly fail every decoder is 'undecodable' and left "
            "out of the other tables."
        ),
        name="formats",
        align="lrrrrrrrrrrll",
    )


def left_out_table(run: LeaderboardRun) -> Table:
    rows = []
    for evidence, cases in run.drift.items():
        for i in sorted(cases):
            rows.append([run.case_ids[i], evidence])
    return Table(
        ["case", "evidence"],
        rows,
        title="Cases left out (installed question or gold differs from 2024)",
        caption=(
            "function_drift: models whose answer BFCL accepted call a function the "
            "installed case lacks; gold_drift: the installed checker reverses the committed "
            "verdict of many models on the same decoded answers; known_v2: a run of few "
            "models of a 2024 tree leaves out what the whole 2024 folder shows."
        ),
        name="left_out",
        empty="No case left out.",
    )


def leaderboard_tables(run: LeaderboardRun) -> list[Table]:
    """Every table of the report, in page order."""
    return [
        leaderboard_table(run),
        stage_mix_table(run),
        relevance_table(run),
        accepted_unstated_table(run),
        rejected_passing_table(run),
        rejected_passing_types_table(run),
        agreement_table(run),
        disagreements_table(run),
        formats_table(run),
        left_out_table(run),
    ]


__all__ = [
    "FORMATS",
    "decoded_results",
    "undecodable_note",
    "accepted_unstated_table",
    "agreement_table",
    "disagreement_classes",
    "leaderboard_tables",
]
