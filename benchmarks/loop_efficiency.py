"""How much the correction loop costs on the embedded model, and what the engine saves.

Runs the embedded model (default: local:qwen2.5-coder-0.5b) over N BFCL-based cases at one
registry scale in structured mode, without the response cache, and reports:

* wall time, attempts, mean attempts per case;
* prompt tokens sent vs prompt tokens actually evaluated (llama.cpp reuses the KV prefix of
  the previous request, so a loop that only appends turns pays for the new tokens only);
* the time saved by computing the first attempt once and sharing it between the three
  feedback modes (direct, binary, structured): 2 x the first attempts' latency.

Usage: python benchmarks/loop_efficiency.py [--n 20] [--scale 5] [--model local:...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from callscope.benchmarks.sources import build_benchmark
from callscope.models.base import Decoding
from callscope.models.registry import load_model
from callscope.runs.runner import run_cases
from callscope.store.run_store import RunStore


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--scale", type=int, default=5)
    ap.add_argument("--max-attempts", type=int, default=15)
    ap.add_argument("--model", default="local:qwen2.5-coder-0.5b")
    args = ap.parse_args()

    cases = build_benchmark("bfcl", scales=[args.scale], n=args.n, seed=0).cases
    model = load_model(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp))
        t0 = time.perf_counter()
        run_cases(
            model,
            cases,
            store,
            modes=["structured"],
            max_attempts=args.max_attempts,
            decoding=Decoding(max_tokens=256),
            show_progress=True,
        )
        wall = time.perf_counter() - t0
        attempts = [
            a
            for o in store.outcomes(model.spec)
            for a in store.attempts(model.spec, o["case_id"], o["mode"])
        ]
        store.close()
    replies = [a["reply"] for a in attempts if a.get("reply")]
    sent = sum(r.get("prompt_tokens") or 0 for r in replies)
    evaluated = sum(r.get("prompt_tokens_evaluated") or 0 for r in replies)
    later = [r for a, r in zip(attempts, replies, strict=False) if a["attempt"] > 1]
    later_sent = sum(r.get("prompt_tokens") or 0 for r in later)
    later_eval = sum(r.get("prompt_tokens_evaluated") or 0 for r in later)
    first_latency = sum(a["latency_s"] for a in attempts if a["attempt"] == 1)
    print(f"model {args.model}; {len(cases)} cases at S={args.scale}; structured mode")
    print(f"wall time                      {wall:8.1f} s")
    print(
        f"attempts                       {len(attempts):8d} ({len(attempts) / len(cases):.2f} per case)"
    )
    print(f"prompt tokens sent             {sent:8d}")
    print(f"prompt tokens evaluated        {evaluated:8d} ({evaluated / max(sent, 1):.1%} of sent)")
    print(
        f"  attempts >= 2: sent {later_sent}, evaluated {later_eval} ({later_eval / max(later_sent, 1):.1%})"
    )
    print(f"first attempts' total latency  {first_latency:8.1f} s")
    print(f"saved by sharing attempt 1 across 3 modes: {2 * first_latency:.1f} s")


if __name__ == "__main__":
    main()
