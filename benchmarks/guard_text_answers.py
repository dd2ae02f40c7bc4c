"""The guard's rule for text answers as a detector (2026-12-07): which text without a
readable call is a broken call attempt (blocked, re-asked) and which is an answer the guard
lets through.

``callscope.guard.check.check`` counts a text answer in which no call was read as a broken
call attempt only when it is written as one (:func:`callscope.parse.no_call.written_as_call`);
before, every text the parser did not read as prose was one (:func:`~callscope.saag.answer.no_call_kind`
"broken": ``42``, ``[2, 3, 5]``, ``{"answer": 42}`` were blocked). Both rules are measured
here, in one run, on the same texts:

* **false alarms** on answers that are not call attempts: every assistant text message
  without tool calls in the τ²-bench runs of ``../shared/external/tau2`` (real agents'
  replies; skipped when the folder is absent), and answers written as data (numbers, JSON
  values, lists, symbols: this file's own, which prove only the rule's intent);
* **detection** of broken call attempts: every BFCL single-call gold call
  (:func:`~callscope.benchmarks.bfcl.single.load_bfcl_single`) written six ways (a JSON call
  object, a list of one, a Python call, a ``<tool_call>`` block, BFCL's ``{name: arguments}``,
  a call object after a sentence) and cut off at a quarter, half and three quarters of its
  length: each must be flagged a broken call (stage 1).

Run: ``python benchmarks/guard_text_answers.py``. Prints each set's count and the share each
rule flags.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from callscope.benchmarks.bfcl.agreement import gold_call
from callscope.benchmarks.bfcl.single import load_bfcl_single
from callscope.guard.check import check
from callscope.parse import parse_output
from callscope.saag.answer import no_call_kind

TAU2 = Path(__file__).resolve().parents[2] / "shared" / "external" / "tau2"

#: answers written as data: what a user asking for a number, a list or JSON gets back
DATA_ANSWERS = [
    "42", "3.14159", "-7", "1,024", "2+2=4", "x = 5", "[2, 3, 5, 7]", "[1.5, 2.5]",
    '{"answer": 42}', '{"total": 12.5, "currency": "EUR"}', '["Paris", "Lyon"]', "{}",
    '```json\n{"result": [1, 2, 3]}\n```', "2 3 5 7 11 13", "-", "...", "👍", "✓", "0",
    '{"city": "Paris"}', "[[1, 2], [3, 4]]", "1e-9", "100%", "$19.99", "12:30", "2024-03-05",
    '{"items": [{"id": 1}, {"id": 2}]}', "| a | b |\n|---|---|\n| 1 | 2 |", "}}}{{", "#",
]  # fmt: skip


def _writings(name: str, args: dict) -> list[tuple[str, str]]:
    call = {"name": name, "arguments": args}
    py = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return [
        ("json", json.dumps(call)),
        ("json list", json.dumps([call])),
        ("python", f"{name}({py})"),
        ("tool_call tag", f"<tool_call>{json.dumps(call)}</tool_call>"),
        ("bfcl dict", json.dumps({name: args})),
        ("after a sentence", f"I will call the tool now: {json.dumps(call)}"),
    ]


def _flags(text: str, tools: list, messages: list) -> tuple[bool, bool]:
    """(flagged by the rule before, flagged by the guard now)."""
    now = check(text, tools, messages)
    flagged = not now.passed
    names = [t["function"]["name"] for t in tools]
    before = flagged or no_call_kind(parse_output(text), names) == "broken"
    return before, flagged


def _tau2_texts() -> list[str]:
    out = []
    for path in sorted(TAU2.glob("*.json")) if TAU2.is_dir() else []:
        data = json.loads(path.read_text(encoding="utf-8"))
        for sim in data.get("simulations") or []:
            for m in sim.get("messages") or []:
                text = m.get("content")
                if m.get("role") == "assistant" and not m.get("tool_calls") and text:
                    out.append(text)
    return out


def main() -> None:
    weather = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    ask = [{"role": "user", "content": "What should I know?"}]
    print("false alarms (answers that are not call attempts), flagged before -> now")
    for label, texts in (("tau2 assistant texts", _tau2_texts()), ("data answers", DATA_ANSWERS)):
        if not texts:
            print(f"  {label}: none (folder absent)")
            continue
        counts = Counter(_flags(t, weather, ask) for t in texts)
        before = sum(n for (b, _), n in counts.items() if b)
        now = sum(n for (_, a), n in counts.items() if a)
        print(
            f"  {label:22s} {len(texts):6d} texts: {before / len(texts):7.2%} -> {now / len(texts):7.2%}"
        )
    print(
        "detection (BFCL gold calls written six ways, cut at 1/4, 1/2, 3/4), flagged before -> now"
    )
    by_way: dict[str, Counter] = {}
    for case in load_bfcl_single():
        gold = gold_call(case)
        tools = [{"type": "function", "function": f} for f in case.functions]
        messages = [{"role": "user", "content": case.query}]
        for way, text in _writings(gold["name"], gold["arguments"]):
            for cut in (len(text) // 4, len(text) // 2, 3 * len(text) // 4):
                by_way.setdefault(way, Counter())[_flags(text[:cut], tools, messages)] += 1
    for way, counts in by_way.items():
        total = sum(counts.values())
        before = sum(n for (b, _), n in counts.items() if b)
        now = sum(n for (_, a), n in counts.items() if a)
        print(f"  {way:22s} {total:6d} texts: {before / total:7.2%} -> {now / total:7.2%}")


if __name__ == "__main__":
    main()
