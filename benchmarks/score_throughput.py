"""How many predictions callscope scores per second on one core (parse + diagnose + message).

Synthetic registries of 5, 15 and 1,000 functions; predictions are raw JSON text of four
kinds: correct (passes all stages), wrong_name (FNEM 0: NCS scans the whole registry),
drifted (a misspelled parameter name: stage 2) and ungrounded (a value absent from the
query: stage 3). Prints one row per registry size with the rate of each kind and of an even
mix. Usage: ``python benchmarks/score_throughput.py [--seconds 1.0] [--sizes 5 15 1000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from callscope.parse import parse_output
from callscope.saag.cascade import diagnose
from callscope.saag.messages import correction_message

VERBS = [
    "get",
    "set",
    "create",
    "delete",
    "update",
    "list",
    "find",
    "search",
    "calculate",
    "convert",
    "book",
    "cancel",
    "send",
    "check",
    "generate",
    "translate",
]
NOUNS = [
    "weather",
    "stock_price",
    "flight",
    "hotel",
    "invoice",
    "user",
    "email",
    "recipe",
    "movie",
    "song",
    "order",
    "payment",
    "route",
    "event",
    "reminder",
    "note",
    "tip",
    "mortgage",
    "temperature",
    "currency",
    "definition",
    "qr_code",
    "news",
    "quote",
]
PARAMS = [
    "city",
    "date",
    "amount",
    "currency",
    "title",
    "query",
    "limit",
    "language",
    "recipient",
    "message",
    "origin",
    "destination",
    "price",
    "category",
    "unit",
]
WORDS = [
    "Paris",
    "Tokyo",
    "Berlin",
    "jazz",
    "pasta",
    "Monday",
    "EUR",
    "invoice",
    "Alice",
    "urgent",
    "vegan",
    "Lisbon",
    "thriller",
    "metric",
    "Oslo",
    "sunrise",
]
KINDS = ("correct", "wrong_name", "drifted", "ungrounded")


@dataclass
class Item:
    text: str
    functions: list[dict[str, Any]]
    query: str


def make_registry(n: int, rng: random.Random) -> list[dict[str, Any]]:
    names: list[str] = []
    seen: set[str] = set()
    i = 0
    while len(names) < n:
        name = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
        if name in seen:
            name = f"{name}_{i}"
        i += 1
        if name not in seen:
            seen.add(name)
            names.append(name)
    fns = []
    for name in names:
        props = rng.sample(PARAMS, rng.randint(2, 4))
        fns.append(
            {
                "name": name,
                "description": f"{name.replace('_', ' ')} for the user",
                "parameters": {
                    "type": "object",
                    "properties": {
                        p: {"type": "number" if p in ("amount", "limit", "price") else "string"}
                        for p in props
                    },
                    "required": props[:2],
                },
            }
        )
    return fns


def make_item(kind: str, fns: list[dict[str, Any]], rng: random.Random) -> Item:
    spec = rng.choice(fns)
    props = spec["parameters"]["properties"]
    args: dict[str, Any] = {}
    words = []
    for p, schema in props.items():
        if schema["type"] == "number":
            v: Any = rng.choice([12, 84.5, 250, 1000, 3])
            words.append(f"{p} {v}")
        else:
            v = rng.choice(WORDS)
            words.append(f"{p} {v}")
        args[p] = v
    query = f"Please {spec['name'].replace('_', ' ')} with " + ", ".join(words) + "."
    name = spec["name"]
    if kind == "wrong_name":
        name = name.replace("_", "") + "_now"
    elif kind == "drifted":
        first = next(iter(args))
        args[first[:-1]] = args.pop(first)  # e.g. "city" -> "cit"
    elif kind == "ungrounded":
        last = list(args)[-1]
        args[last] = 999999 if isinstance(args[last], int | float) else "Zanzibar"
    return Item(json.dumps({"name": name, "arguments": args}), fns, query)


def score(item: Item) -> None:
    call = parse_output(item.text).first
    correction_message(diagnose(call, item.functions, item.query))


def rate(items: list[Item], seconds: float, fn: Callable[[Item], None] = score) -> float:
    """Predictions per second, cycling through ``items`` for at least ``seconds``."""
    done, start = 0, time.perf_counter()
    while True:
        for it in items:
            fn(it)
        done += len(items)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def pin_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 15, 1000])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"callscope score throughput (parse + diagnose + message), {pin_one_core()}")
    header = f"{'registry':>9} | " + " | ".join(f"{k:>11}" for k in (*KINDS, "mix"))
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        rng = random.Random(args.seed)
        fns = make_registry(n, rng)
        per_kind = {k: [make_item(k, fns, rng) for _ in range(50)] for k in KINDS}
        for k, items in per_kind.items():  # sanity: each kind fails where it should
            stages = {diagnose(parse_output(i.text).first, fns, i.query).stage for i in items}
            expected = {"correct": {0}, "wrong_name": {1}, "drifted": {2}, "ungrounded": {3}}[k]
            assert stages == expected, (k, stages)
        mix = [it for group in zip(*per_kind.values(), strict=True) for it in group]
        rates = [rate(per_kind[k], args.seconds) for k in KINDS] + [rate(mix, args.seconds)]
        print(f"{n:>9} | " + " | ".join(f"{r:>9,.0f}/s" for r in rates))


if __name__ == "__main__":
    main()
