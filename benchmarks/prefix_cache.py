"""Kept prompt prefixes on the embedded model (issue 31): the same runs side by side with
llama-cpp-python's own re-use only (``last``: what callscope did before) and with kept prefix
states (``prefix``), and the bound; ``--modes`` also takes ``exact`` (only whole
``n_batch`` chunks re-used: the answers of ``none``) and ``none`` (nothing re-used).

Run:  python benchmarks/prefix_cache.py [--model local:qwen2.5-coder-0.5b] [--n 5]
          [--what calibrate,saag] [--max-attempts 15] [--json out.json]

(a) ``calibrate`` on the first N cases of BFCL multi-turn ``base`` (prompt style, 20 steps);
``calibrate+probe``: the same baseline, then the ``sri`` probe on the same cases in the
same process (as ``calibrate experiment`` runs probes), so each tool set's documentation
comes back after others;
(b) the SAAG loop on N BFCL cases at S = 5, structured mode, ``--max-attempts`` attempts.
Each run starts from an empty engine (no live context, no kept state) and without the
response cache. Printed per run: wall time, prompt tokens sent / computed, generated tokens,
kept-state restores, peak bytes held and the bound, and the greedy answers' equality
between the modes (each against the first).

The bound: the time the run would take if only never-seen prefix tokens and generated tokens
were computed, at this machine's prompt and generation rates measured here (a fresh ~500-token
prompt; 32 generated tokens). A prompt token is never-seen when no earlier request of the run
(prompt and generated tokens) had the same prefix up to it; every request computes at least
one. The machine's load average is printed with the numbers: llama.cpp slows badly when its
cores are shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from callscope.models.base import Decoding
from callscope.models.registry import load_model


class PrefixTrie:
    """Every token prefix seen so far (prompt + generated tokens of earlier requests)."""

    def __init__(self) -> None:
        self.nodes: dict[tuple[int, int], int] = {}

    def novel(self, tokens: list[int]) -> int:
        """Tokens of ``tokens`` past the longest prefix seen."""
        node = 0
        for i, tok in enumerate(tokens):
            nxt = self.nodes.get((node, tok))
            if nxt is None:
                return len(tokens) - i
            node = nxt
        return 0

    def add(self, tokens: list[int]) -> None:
        node = 0
        for tok in tokens:
            key = (node, tok)
            nxt = self.nodes.get(key)
            if nxt is None:
                nxt = self.nodes[key] = len(self.nodes) + 1
            node = nxt


def rates(model: Any, depth: int = 500) -> tuple[float, float]:
    """(prompt tokens/s, generated tokens/s) of the engine on this machine now: a fresh
    prompt of about ``depth`` tokens computed whole, then 32 tokens generated after it (both
    slow down as the context grows: attention reads every earlier token)."""
    engine = model.engine()
    filler = " ".join(f"item{i} is number {i}." for i in range(max(1, depth // 8)))
    msgs = [{"role": "user", "content": f"{filler}\nCount to fifty: 1, 2, 3,"}]
    mode = model.kv_reuse
    try:
        model.kv_reuse = "none"  # the whole prompt computed, one token generated
        t0 = time.perf_counter()
        model.chat(msgs, None, Decoding(max_tokens=1))
        prompt_rate = engine.prompt_len / (time.perf_counter() - t0)
        model.kv_reuse = "last"  # the same prompt is live: one token computed, then 32 made
        t0 = time.perf_counter()
        reply = model.chat(msgs, None, Decoding(max_tokens=33))
        gen_rate = (reply.completion_tokens or 1) / (time.perf_counter() - t0)
    finally:
        model.kv_reuse = mode
    return prompt_rate, gen_rate


def fresh_engine(model: Any) -> None:
    engine = model.engine()
    with engine.lock:
        engine.llm.reset()
        engine.states.clear()
        engine.states.stats.__init__(capacity_bytes=engine.states.capacity_bytes)


def traced(model: Any) -> tuple[Any, list[tuple[list[int], list[int]]]]:
    """The model with every request's (prompt tokens, generated tokens) recorded."""
    engine = model.engine()
    trace: list[tuple[list[int], list[int]]] = []
    inner_chat = model.chat

    def chat(*args: Any, **kwargs: Any) -> Any:
        reply = inner_chat(*args, **kwargs)
        trace.append((list(engine.prompt), list(engine.generated)))
        return reply

    model.chat = chat
    return model, trace


def run_calibrate(model: Any, n: int, probes: tuple[str | None, ...] = (None,)) -> Any:
    """``calibrate`` on the first ``n`` cases of ``base``: a baseline run, then each probe of
    ``probes`` on the same cases in the same directory (``calibrate experiment``'s way)."""
    from callscope.runs.calibrate import calibrate_model, select_cases

    cases = select_cases(["base"], n)
    with tempfile.TemporaryDirectory() as out:
        for probe in probes:
            calibrate_model(model, out, cases, probe=probe, style="prompt", show_progress=False)
        return _stored(Path(out))


def _stored(out: Path) -> list[dict[str, Any]]:
    from callscope.store.run_store import RunStore

    store = RunStore(out)
    try:
        return sorted(
            (
                {"case": c["case_id"], "probe": c["probe"], "passed": c.get("passed")}
                for c in store.conversations(None, None)
            ),
            key=lambda r: (r["probe"], r["case"]),
        )
    finally:
        store.close()


def run_saag(model: Any, n: int, max_attempts: int) -> Any:
    from callscope.benchmarks.sources import build_benchmark
    from callscope.runs.runner import run_cases
    from callscope.store.run_store import RunStore

    cases = build_benchmark("bfcl", scales=(5,), n=n, seed=0).cases
    with tempfile.TemporaryDirectory() as out:
        store = RunStore(Path(out))
        try:
            run_cases(
                model,
                cases,
                store,
                modes=("structured",),
                max_attempts=max_attempts,
                style="prompt",
                show_progress=False,
            )
            return sorted(
                (o["case_id"], o["n_attempts"], bool(o["final"].get("solved")))
                for o in store.outcomes(model.spec)
            )
        finally:
            store.close()


def measure(model: Any, mode: str, job: Any) -> dict[str, Any]:
    model.kv_reuse = mode
    fresh_engine(model)
    model, trace = traced(model)
    before = model.usage.copy()
    t0 = time.perf_counter()
    result = job(model)
    wall = time.perf_counter() - t0
    del model.chat  # the traced wrapper
    usage = model.usage - before
    trie, novel = PrefixTrie(), 0
    for prompt, generated in trace:
        novel += max(1, trie.novel(prompt))
        trie.add(prompt + generated)
    stats = model.prefix_stats()
    return {
        "mode": mode,
        "wall_s": round(wall, 1),
        "requests": usage.requests,
        "prompt_sent": usage.prompt_sent,
        "prompt_computed": usage.prompt_computed,
        "generated": usage.generated,
        "never_seen_prompt": novel,
        "restored": stats.restored,
        "saved": stats.saved,
        "peak_mib": round(stats.peak_bytes / 2**20, 1),
        "bound_mib": round(stats.capacity_bytes / 2**20),
        "save_s": round(stats.save_s, 2),
        "restore_s": round(stats.restore_s, 2),
        "outputs": [g for _, g in trace],
        "result": result,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="local:qwen2.5-coder-0.5b")
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--what", default="calibrate,saag")
    ap.add_argument("--max-attempts", type=int, default=15)
    ap.add_argument("--modes", default="last,prefix")
    ap.add_argument("--threads", type=int, help="llama.cpp threads (default: every core)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    model = load_model(args.model, n_threads=args.threads)
    model.engine()
    load = os.getloadavg()
    prompt_rate, gen_rate = rates(model)
    print(
        f"{args.model}: {model.n_threads} threads, bound {model.prefix_cache_bytes / 2**20:.0f}"
        f" MiB; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; prompt {prompt_rate:.0f} tok/s,"
        f" generation {gen_rate:.1f} tok/s"
    )
    jobs = {
        "calibrate": lambda m: run_calibrate(m, args.n),
        # the baseline, then a probe on the same cases: each tool set's documentation again
        "calibrate+probe": lambda m: run_calibrate(m, args.n, (None, "sri")),
        "saag": lambda m: run_saag(m, args.n, args.max_attempts),
    }
    report: dict[str, Any] = {
        "model": args.model,
        "n": args.n,
        "prompt_rate": prompt_rate,
        "gen_rate": gen_rate,
        "load_before": load,
        "runs": {},
    }
    for what in args.what.split(","):
        rows = []
        for mode in args.modes.split(","):
            row = measure(model, mode, jobs[what])
            row["load_after"] = round(os.getloadavg()[0], 2)
            row["bound_s"] = round(
                row["never_seen_prompt"] / prompt_rate + row["generated"] / gen_rate, 1
            )
            rows.append(row)
        # the rates again at the run's own mean prompt length: its prompts are long, and the
        # tokens it computes and generates sit that deep in the context
        depth = min(
            model.engine().llm.n_ctx() - 64,
            round(sum(r["prompt_sent"] for r in rows) / max(1, sum(r["requests"] for r in rows))),
        )
        deep_prompt, deep_gen = rates(model, depth)
        print(
            f"{what:9} rates at its mean prompt length ({depth:,} tokens): prompt"
            f" {deep_prompt:.0f} tok/s, generation {deep_gen:.1f} tok/s"
        )
        for row in rows:
            row["rates_at_depth"] = {"depth": depth, "prompt": deep_prompt, "gen": deep_gen}
            row["bound_at_depth_s"] = round(
                row["never_seen_prompt"] / deep_prompt + row["generated"] / deep_gen, 1
            )
        for row in rows:
            share = row["prompt_computed"] / max(1, row["prompt_sent"])
            print(
                f"{what:9} {row['mode']:6} wall {row['wall_s']:7.1f} s  bound {row['bound_s']:6.1f} s"
                f" ({row['wall_s'] / max(row['bound_s'], 1e-9):.2f}x; at its depth"
                f" {row['bound_at_depth_s']:.1f} s,"
                f" {row['wall_s'] / max(row['bound_at_depth_s'], 1e-9):.2f}x)"
                f"  requests {row['requests']}"
                f"  prompt sent {row['prompt_sent']:,} computed {row['prompt_computed']:,}"
                f" ({share:.1%}) never-seen {row['never_seen_prompt']:,}"
                f"  generated {row['generated']:,}  restores {row['restored']}"
                f" saves {row['saved']} peak {row['peak_mib']} of {row['bound_mib']} MiB"
                f"  load {row['load_after']}",
                flush=True,
            )
        same = all(r["outputs"] == rows[0]["outputs"] for r in rows)
        same_result = all(r["result"] == rows[0]["result"] for r in rows)
        print(
            f"{what:9} greedy outputs identical across modes: {same}; same results: {same_result}"
        )
        for row in rows[1:]:
            first, diverged = rows[0]["outputs"], row["outputs"]
            differ = sum(a != b for a, b in zip(first, diverged, strict=False))
            differ += abs(len(first) - len(diverged))
            print(
                f"{what:9} {row['mode']} against {rows[0]['mode']}: {differ} of"
                f" {max(len(first), len(diverged))} outputs differ;"
                f" same results: {row['result'] == rows[0]['result']}"
            )
        report["runs"][what] = [{k: v for k, v in r.items() if k != "outputs"} for r in rows]
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
