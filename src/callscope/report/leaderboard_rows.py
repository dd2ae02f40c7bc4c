"""Which answers a leaderboard table counts (:mod:`callscope.report.leaderboard`): a model's
answers on the cases kept (the cases left out for drift removed), the models ranked by BFCL
accuracy, a rate cell with its Wilson interval and VHR with its bootstrap interval."""

from __future__ import annotations

import numpy as np

from callscope.core.stats import bootstrap_ci, rate_ci
from callscope.core.table import pct_ci
from callscope.runs.leaderboard import ModelResult
from callscope.runs.leaderboard_tree import LeaderboardRun


def _rate(k: int, n: int) -> str:
    return pct_ci(*rate_ci(int(k), int(n)))


def kept_rows(result: ModelResult, left_out: set[int]) -> np.ndarray:
    """A model's answers on the cases kept."""
    rows = result.rows
    if not left_out or not len(rows):
        return rows
    return rows[~np.isin(rows["case"], sorted(left_out))]


def left_out_cases(run: LeaderboardRun) -> set[int]:
    """Every case left out, whatever the evidence."""
    return set().union(*run.drift.values()) if run.drift else set()


def decoded_results(run: LeaderboardRun) -> list[ModelResult]:
    """The models whose answers a decoder reads (every one but the
    :attr:`~callscope.runs.leaderboard.ModelResult.undecodable`): the ranked tables' models."""
    return [r for r in run.results if not r.undecodable]


def undecodable_note(run: LeaderboardRun) -> str | None:
    """The line naming the models left out because their answers mostly fail every decoder
    (``None`` when there is none): shown before the leaderboard, never averaged into it."""
    bad = [r for r in run.results if r.undecodable and r.choice is not None]
    if not bad:
        return None
    named = "; ".join(
        f"{r.model} (best decoder {r.choice.name} reads {r.choice.reads[0][1]} of "
        f"{r.choice.sample} sampled answers)"
        for r in bad
        if r.choice is not None
    )
    return (
        f"{len(bad)} model(s) left out of the leaderboard: their answers mostly fail every "
        f"decoder: {named}. See the formats table."
    )


def _ranked(run: LeaderboardRun) -> list[tuple[ModelResult, np.ndarray]]:
    out = left_out_cases(run)
    pairs = [(r, kept_rows(r, out)) for r in decoded_results(run)]
    return sorted(pairs, key=lambda p: (-(p[1]["bfcl_ok"].mean() if len(p[1]) else 0), p[0].model))


def _vhr(rows: np.ndarray) -> str:
    """VHR over a model's calls (the mean of the calls' VHR, SAAG eq. 8-9) with a percentile
    bootstrap interval that resamples answers (a ratio of sums: an answer's calls stay
    together)."""
    scored = rows[rows["vhr_n"] > 0]
    n = int(scored["vhr_n"].sum())
    if not n:
        return "n/a"
    sums = scored["vhr_sum"].astype(float)
    counts = scored["vhr_n"].astype(float)

    def ratio(index: np.ndarray) -> float:
        picked = index.astype(int)
        return float(sums[picked].sum() / counts[picked].sum())

    lo, hi = bootstrap_ci(np.arange(len(scored), dtype=float), ratio, n_boot=1000)
    return f"{sums.sum() / n:.3f} [{lo:.3f}, {hi:.3f}]"
