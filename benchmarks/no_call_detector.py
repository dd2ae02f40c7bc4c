"""What an answer without a readable call is, measured as a detector (issue 36).

The rule (:func:`callscope.saag.answer.no_call_kind` over :mod:`callscope.parse.no_call`)
sorts an answer without a readable call into ``abstained`` (prose), ``broken`` (call syntax
or data the parser refused, garbage) and ``empty``. Measured on both sides, in one run:

* **known prose** (a ``broken`` here is a false alarm): every assistant message with text and
  no tool call in the τ²-bench runs of ``../shared/external/tau2`` (messages to a user), and
  the relevance answers of the BFCL leaderboard snapshot
  (``../shared/external/bfcl-leaderboard-2024-08``, 63 models x 240) that hold no call. The
  leaderboard answers were written by models told to call a function or say none fits, so
  some are not prose; every one the rule calls ``broken`` is printed with its reason, to be
  read by hand (``--show``), and the count is reported as an upper bound of false alarms;
* **made broken** (an ``abstained`` or ``empty`` here is a miss): every BFCL gold call of the
  installed bfcl-eval (simple_python, multiple, parallel, parallel_multiple, live_simple,
  live_multiple), written as JSON and as Python call syntax, cut at every length from 1 to
  its length - 1; runs of brackets and braces; call objects with wrong-typed fields. A cut
  that still holds a readable call (``[f(a=1), g(`` keeps ``f``) is counted apart: it is a
  call answer with an unreadable call beside it, not a no-call answer.

Run: ``python benchmarks/no_call_detector.py [--show N]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from callscope.benchmarks.bfcl.single import load_bfcl_detailed
from callscope.core.jsonl import loads_bounded
from callscope.core.stats import wilson
from callscope.parse import parse_output
from callscope.saag.answer import no_call_kind

EXTERNAL = Path(__file__).resolve().parents[1].parent / "shared" / "external"
GOLD_CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
)


def tau2_prose() -> Iterator[tuple[str, str, list[str]]]:
    """``(source, text, [])`` of every assistant message with text and no tool call."""
    for path in sorted((EXTERNAL / "tau2").glob("*.json")):
        data = loads_bounded(path.read_text(encoding="utf-8"))
        for sim in data.get("simulations", []):
            for m in sim.get("messages", []):
                text = m.get("content")
                prose = isinstance(text, str) and bool(text.strip()) and not m.get("tool_calls")
                if m.get("role") == "assistant" and prose:
                    yield path.name, text, []


def leaderboard_relevance() -> Iterator[tuple[str, str, list[str]]]:
    """``(model, answer, registry names)`` of every relevance answer written as text; the
    registry is the installed bfcl-eval's ``irrelevance_N`` for the snapshot's ``relevance_N``
    (the same ids, README.txt of the snapshot)."""
    registry = {
        c.id.rsplit("_", 1)[-1]: [f["name"] for f in c.functions]
        for c in load_bfcl_detailed(("irrelevance",)).cases
    }
    root = EXTERNAL / "bfcl-leaderboard-2024-08" / "result"
    for path in sorted(root.glob("*/gorilla_openfunctions_v1_test_relevance_result.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                row = loads_bounded(line)
                if isinstance(row.get("result"), str):
                    number = str(row.get("id", "")).rsplit("_", 1)[-1]
                    yield path.parent.name, row["result"], registry.get(number, [])


def _value(v: Any) -> str:
    return json.dumps(v) if not isinstance(v, str) else json.dumps(v)


def gold_texts() -> Iterator[tuple[str, list[str], str]]:
    """``(case id, registry names, text)``: every gold answer as JSON and as Python."""
    load = load_bfcl_detailed(GOLD_CATEGORIES)
    for case in load.cases:
        calls = case.gold_calls or []
        if not calls:
            continue
        names = [f["name"] for f in case.functions]
        objs = [{"name": c["name"], "arguments": c["arguments"]} for c in calls]
        yield case.id, names, json.dumps(objs if len(objs) > 1 else objs[0])
        py = [f"{c['name']}({', '.join(f'{k}={_value(v)}' for k, v in c['arguments'].items())})"
              for c in calls]  # fmt: skip
        yield case.id, names, f"[{', '.join(py)}]" if len(py) > 1 else py[0]


def wrong_typed() -> list[str]:
    return [
        '{"name": ["get_weather"], "arguments": {}}',
        '{"name": 5, "arguments": {"city": "Paris"}}',
        '{"name": null, "arguments": {}}',
        '{"name": "get_weather", "arguments": []}',
        '{"name": "get_weather", "arguments": "city=Paris"}',
        '{"name": "get_weather", "arguments": 7}',
        '{"function": {"name": {"x": 1}, "arguments": "{}"}}',
        '[{"name": "get_weather", "arguments": [1, 2]}]',
        '{"name": "", "arguments": {}}',
        '{"tool": "get_weather", "args": {"city": "Paris"}}',
    ]


def bracket_runs() -> list[str]:
    out = []
    for ch in "[{(<":
        for n in (1, 2, 20, 400, 5000):
            out.append(ch * n)
    out += ["[{" * 50, "{[" * 50, "[[[]]", "{{}}", "((((", "]]]]", "}}}}", "[{(" * 100]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--show", type=int, default=40, help="print this many prose answers read as broken"
    )
    ap.add_argument("--prose-only", action="store_true", help="skip the made-broken side")
    args = ap.parse_args()
    t0 = time.perf_counter()
    names_any = ["get_weather"]

    print("== known prose: a 'broken' is a false alarm ==")
    for label, source in (("tau2 assistant messages", tau2_prose()),
                          ("BFCL leaderboard relevance answers", leaderboard_relevance())):  # fmt: skip
        kinds: Counter[str] = Counter()
        shown: list[tuple[str, str, str]] = []
        for src, text, names in source:
            parsed = parse_output(text)
            kind = no_call_kind(parsed, names) or "calls"
            kinds[kind] += 1
            if kind == "broken" and len(shown) < args.show:
                shown.append((src, text, parsed.error or ""))
        no_call = kinds["abstained"] + kinds["broken"] + kinds["empty"]
        lo, hi = wilson(kinds["broken"], no_call)
        print(f"{label}: {sum(kinds.values())} answers, {kinds['calls']} with calls, "
              f"{no_call} without: abstained {kinds['abstained']}, broken {kinds['broken']} "
              f"({kinds['broken'] / max(no_call, 1):.2%} [{lo:.2%}, {hi:.2%}]), empty {kinds['empty']}")  # fmt: skip
        for src, text, err in shown:
            print(f"   broken  {src}: {text[:110]!r}  <- {err[:90]}")

    if args.prose_only:
        return
    print("\n== made broken: an 'abstained' or 'empty' is a miss ==")
    tally: Counter[str] = Counter()
    missed: list[tuple[str, str]] = []
    n_gold = 0
    for cid, names, text in gold_texts():
        n_gold += 1
        for cut in range(1, len(text)):
            piece = text[:cut]
            parsed = parse_output(piece)
            kind = no_call_kind(parsed, names)
            if kind is None:
                tally["cut holds a readable call"] += 1
                continue
            tally[kind] += 1
            if kind != "broken" and len(missed) < args.show:
                missed.append((cid, piece))
    n = sum(tally.values())
    misses = tally["abstained"] + tally["empty"]
    no_call = n - tally["cut holds a readable call"]
    print(f"truncations of {n_gold} gold answers (JSON and Python) at every length: {n} texts; "
          f"{tally['cut holds a readable call']} still hold a readable call; of the {no_call} "
          f"without one: broken {tally['broken']}, false abstained {tally['abstained']}, "
          f"false empty {tally['empty']} ({misses / max(no_call, 1):.3%})")  # fmt: skip
    for cid, piece in missed:
        print(f"   missed {cid}: {piece[:100]!r}")
    for label, texts in (
        ("bracket runs", bracket_runs()),
        ("wrong-typed call fields", wrong_typed()),
    ):
        kinds = Counter(no_call_kind(parse_output(t), names_any) or "calls" for t in texts)
        print(f"{label}: {len(texts)} texts: {dict(kinds)}")
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
