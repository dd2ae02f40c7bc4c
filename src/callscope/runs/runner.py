"""Drive one model over many cases and feedback modes, resumably, into a run store."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import takewhile
from queue import SimpleQueue
from statistics import fmean
from typing import Any, TypeVar

from callscope.models.base import ChatModel, Decoding
from callscope.runs.loop import first_attempt, run_loop
from callscope.runs.progress import RunProgress
from callscope.saag.cascade import CASCADE_VERSION
from callscope.saag.groundings import get_grounding
from callscope.store.run_store import RunStore
from callscope.types import LOOP_MODES, MODES, Case, Mode, Style

#: after this many consecutive unreachable-backend errors the run stops (resume later)
MAX_CONSECUTIVE_CONNECTION_ERRORS = 5
_UNREACHABLE = {"connection", "timeout"}
#: the error kinds that mean the backend could not be reached (``calibrate`` stops on them too)
UNREACHABLE_KINDS = frozenset(_UNREACHABLE)


_T = TypeVar("_T")
_R = TypeVar("_R")


def effective_concurrency(model: ChatModel, concurrency: int) -> tuple[int, str | None]:
    """How many requests run at once for ``--concurrency`` ``concurrency``: the number asked
    for, unless the backend can run fewer at once (the embedded model: one; an HTTP backend
    given ``max_concurrency``); then also the sentence saying so, for the user."""
    asked = max(1, int(concurrency))
    used = max(1, min(asked, int(model.max_concurrency)))
    if used == asked:
        return used, None
    return used, (
        f"concurrency {asked} lowered to {used}: {model.spec} runs at most "
        f"{used} request{'s' if used != 1 else ''} at once"
    )


def in_parallel(
    fn: Callable[[_T], _R], items: Iterable[_T], workers: int
) -> Iterator[tuple[_T, _R]]:
    """``(item, fn(item))`` for every item, ``workers`` at a time, in the order they finish
    (with one worker: in order, on the calling thread). Items are submitted only as workers
    free up, so a consumer that stops early (``break``) starts no further item; the ones
    already running are waited for. An exception of ``fn`` is raised to the consumer."""
    if workers <= 1:
        for item in items:
            yield item, fn(item)
        return
    it = iter(items)
    pool = ThreadPoolExecutor(max_workers=workers)
    pending: dict[Future[_R], _T] = {}
    # each future puts itself here when it finishes: O(1) per result, where
    # ``concurrent.futures.wait`` over the pending set takes every pending future's lock
    # on every result
    finished: SimpleQueue[Future[_R]] = SimpleQueue()
    try:
        while True:
            while len(pending) < workers:
                nxt = next(it, _DONE)
                if nxt is _DONE:
                    break
                fut = pool.submit(fn, nxt)
                pending[fut] = nxt
                fut.add_done_callback(finished.put)
            if not pending:
                return
            fut = finished.get()
            yield pending.pop(fut), fut.result()
    finally:
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=True)


_DONE: Any = object()


@dataclass
class RunSummary:
    model: str
    total: int = 0
    ran: int = 0
    skipped: int = 0
    solve_rate: dict[str, float] = field(default_factory=dict)
    mean_attempts: dict[str, float] = field(default_factory=dict)
    n: dict[str, int] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    aborted: str | None = None
    #: requests run at once, and why it is fewer than asked (``None``: as asked)
    concurrency: int = 1
    concurrency_note: str | None = None


def _check_config(store: RunStore, config: dict[str, Any]) -> None:
    """A run directory belongs to one configuration per model, scored by one version of the
    cascade (:data:`~callscope.saag.cascade.CASCADE_VERSION`; a directory that records none
    is version 1); refuse silent mixing."""
    key = f"config:{config['model']}"
    old = store.get_meta(key)
    fixed = ("style", "max_attempts", "decoding", "grounding", "cascade")
    if old is not None:
        old = {"cascade": 1, **old}
        diffs = [k for k in fixed if old.get(k) != config.get(k)]
        if diffs:
            hint = (
                " (this callscope's cascade gives other verdicts than the one its outcomes were"
                " scored with); use a new output directory: the response cache answers every"
                " request already made, so only what the new verdicts change is run again"
                if "cascade" in diffs
                else "; use a new output directory"
            )
            raise ValueError(
                f"run directory {store.run_dir} already holds model {config['model']!r} run with "
                f"different {', '.join(diffs)} ({', '.join(f'{k}={old.get(k)!r}' for k in diffs)})"
                + hint
            )
    store.set_meta(key, config)


def resolve_style(model: ChatModel, style: str | None) -> Style:
    if style in ("native", "prompt"):
        return style  # type: ignore[return-value]
    return "native" if model.supports_native_tools else "prompt"


def run_cases(
    model: ChatModel,
    cases: Sequence[Case],
    store: RunStore,
    *,
    modes: Sequence[Mode] = MODES,
    max_attempts: int = 15,
    style: str | None = None,
    decoding: Decoding | None = None,
    concurrency: int = 1,
    show_progress: bool = True,
    retry_errors: bool = True,
    grounding: str | None = None,
) -> RunSummary:
    """Run every (case, mode) that has no outcome yet for ``model``; return a summary.

    The first attempt is computed once per case and shared by all modes. ``concurrency``
    cases run at once (fewer only when the backend cannot run that many:
    :func:`effective_concurrency`; ``RunSummary.concurrency_note`` then says why).
    Interrupting this function at any point loses at most the (case, mode) units in flight.
    ``grounding`` names the stage-3 mode (:data:`callscope.saag.groundings.GROUNDINGS`),
    recorded in the run's configuration; a run directory holds one mode per model."""
    decoding = decoding or Decoding()
    mode_name = get_grounding(grounding).name
    resolved = resolve_style(model, style)
    for m in modes:
        if m not in LOOP_MODES:
            raise ValueError(f"unknown mode {m!r}; choose from {', '.join(LOOP_MODES)}")
    _check_config(
        store,
        {
            "model": model.spec,
            "style": resolved,
            "max_attempts": max_attempts,
            "decoding": decoding.to_dict(),
            "grounding": mode_name,
            "cascade": CASCADE_VERSION,
        },
    )
    store.add_cases(list(cases))
    done = store.done(model.spec, include_errors=not retry_errors)
    todo = [(c, [m for m in modes if (c.id, m) not in done]) for c in cases]
    todo = [(c, ms) for c, ms in todo if ms]
    summary = RunSummary(model=model.spec, total=len(cases) * len(modes))
    summary.skipped = summary.total - sum(len(ms) for _, ms in todo)
    workers, summary.concurrency_note = effective_concurrency(model, concurrency)
    summary.concurrency = workers
    stop = threading.Event()
    streak = [0]
    lock = threading.Lock()

    def work(case: Case, case_modes: list[Mode]) -> int:
        if stop.is_set():
            return 0
        first = first_attempt(model, case, resolved, decoding, mode_name)
        for mode in case_modes:
            outcome = run_loop(
                model,
                case,
                mode,
                first=first,
                style=resolved,
                max_attempts=max_attempts,
                decoding=decoding,
                grounding=mode_name,
            )
            store.save_outcome(model.spec, case.scale, outcome)
            with lock:
                streak[0] = streak[0] + 1 if outcome.error_kind in _UNREACHABLE else 0
                if streak[0] >= MAX_CONSECUTIVE_CONNECTION_ERRORS:
                    summary.aborted = outcome.error
                    stop.set()
        return len(case_modes)

    with RunProgress(
        model.spec, summary.total, completed=summary.skipped, enabled=show_progress
    ) as progress:
        items = takewhile(lambda _: not stop.is_set(), todo)
        for _, ran in in_parallel(lambda item: work(*item), items, workers):
            summary.ran += ran
            progress.advance(ran)
    _fill_summary(store, model.spec, summary)
    store.export_jsonl()
    return summary


def _fill_summary(store: RunStore, model: str, summary: RunSummary) -> None:
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for o in store.outcomes(model):
        by_mode.setdefault(o["mode"], []).append(o)
        if o["error_kind"]:
            summary.errors[o["error_kind"]] += 1
    for mode, rows in by_mode.items():
        summary.n[mode] = len(rows)
        summary.solve_rate[mode] = fmean(1.0 if r["final"].get("solved") else 0.0 for r in rows)
        summary.mean_attempts[mode] = fmean(r["n_attempts"] for r in rows)
