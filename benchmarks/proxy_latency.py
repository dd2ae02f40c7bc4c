"""The repair proxy's cost and value (issue 19).

1. Added latency on calls that pass (goal: < 2 ms at the median): the same good-call request
   sent ``--n`` times straight to a local fake upstream and through the proxy in front of it,
   interleaved, over one keep-alive ``httpx`` client each. Prints the medians and p90s and
   the median of the paired differences.

2. ``--bfcl N``: the embedded 0.5B as upstream on N BFCL single-call queries (sampled with
   seed 0, as the paper experiment samples its queries) at S = 5, in native
   tools mode. For each case one request goes through the proxy; the upstream's first answer
   to it is what a client going direct gets (same request, temperature 0), the proxy's reply
   is what the guarded client gets. Solved = the cascade passes and the name matches gold
   (the SAAG tables' definition). Prints both solve rates with Wilson intervals, the paired
   difference with Newcombe's interval, how many the proxy fixed and how many it broke
   (overcorrection: solved direct, not through the proxy). Each case is appended to
   ``--out`` (JSON lines) as it finishes, and a rerun skips the cases already there.

    python benchmarks/proxy_latency.py [--n 2000]
    nice -n 19 timeout 3000 python benchmarks/proxy_latency.py --n 0 --bfcl 50 \
        --out /tmp/proxy_bfcl.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from callscope.guard.proxy import LocalUpstream, ProxyConfig, UpstreamReply, serving

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
REQUEST = {
    "model": "fake",
    "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
    "tools": TOOLS,
}
GOOD = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
).encode()


class _Fake(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(GOOD)))
        self.end_headers()
        self.wfile.write(GOOD)


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def latency(n: int) -> None:
    fake = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    fake.daemon_threads = True
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    up = f"http://127.0.0.1:{fake.server_address[1]}/v1"
    body = json.dumps(REQUEST).encode()
    headers = {"Content-Type": "application/json"}
    with tempfile.TemporaryDirectory() as tmp:
        config = ProxyConfig(upstream=up, port=0, run_dir=Path(tmp) / "run")
        with serving(config) as proxy, httpx.Client() as direct_c, httpx.Client() as proxy_c:
            direct_url, proxy_url = up + "/chat/completions", proxy.url + "/chat/completions"
            for _ in range(50):  # warm both paths
                direct_c.post(direct_url, content=body, headers=headers)
                proxy_c.post(proxy_url, content=body, headers=headers)
            direct, proxied = [], []
            for _ in range(n):
                t0 = time.perf_counter()
                r = direct_c.post(direct_url, content=body, headers=headers)
                t1 = time.perf_counter()
                p = proxy_c.post(proxy_url, content=body, headers=headers)
                t2 = time.perf_counter()
                assert r.content == p.content == GOOD and p.headers["X-Callscope-Guard"] == "passed"
                direct.append((t1 - t0) * 1e3)
                proxied.append((t2 - t1) * 1e3)
    fake.shutdown()
    diffs = [b - a for a, b in zip(direct, proxied, strict=True)]
    print(f"passing calls, n={n} each, ms:")
    print(f"  direct   median {statistics.median(direct):.3f}  p90 {_pct(direct, 0.9):.3f}")
    print(f"  proxied  median {statistics.median(proxied):.3f}  p90 {_pct(proxied, 0.9):.3f}")
    med = statistics.median(diffs)
    print(f"  added    median {med:.3f}  p90 {_pct(diffs, 0.9):.3f}  (goal < 2 ms: {med < 2})")


class _Recording:
    """An upstream that remembers its answers (the first one is the direct client's)."""

    def __init__(self, inner: LocalUpstream) -> None:
        self.inner = inner
        self.answers: list[bytes] = []

    def chat(self, body: bytes, headers: dict[str, str], timeout: float) -> UpstreamReply:
        reply = self.inner.chat(body, headers, timeout)
        self.answers.append(reply.content)
        return reply

    def forward(self, *args: Any) -> UpstreamReply:
        return self.inner.forward(*args)

    def stream(self, *args: Any) -> Any:
        return self.inner.stream(*args)

    def close(self) -> None:
        self.inner.close()


def bfcl(n: int, out: Path, attempts: int, max_tokens: int) -> None:
    from callscope.benchmarks.sources import build_benchmark
    from callscope.core.stats import newcombe_paired, wilson
    from callscope.models.prompting import NATIVE_SYSTEM, as_tools
    from callscope.models.registry import load_model
    from callscope.parse import parse_output
    from callscope.saag.score import score_parsed

    cases = list(build_benchmark("bfcl", scales=[5], n=n, seed=0).cases)  # n sampled, seed 0
    done = {}
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done[row["id"]] = row
    todo = [c for c in cases if c.id not in done]
    print(f"BFCL S=5: {len(cases)} cases, {len(done)} already in {out}, {len(todo)} to run")
    if todo:
        rec = _Recording(LocalUpstream(load_model("local:qwen2.5-coder-0.5b")))
        with tempfile.TemporaryDirectory() as tmp:
            config = ProxyConfig(
                port=0, run_dir=Path(tmp) / "run", attempts=attempts, repair_timeout=600
            )
            with serving(config, rec) as proxy, httpx.Client(timeout=900) as client:
                for i, case in enumerate(todo, 1):
                    rec.answers.clear()
                    body = {
                        "model": "local",
                        "messages": [
                            {"role": "system", "content": NATIVE_SYSTEM},
                            {"role": "user", "content": case.query},
                        ],
                        "tools": as_tools(case.functions),
                        "temperature": 0,
                        "max_tokens": max_tokens,
                    }
                    t0 = time.perf_counter()
                    reply = client.post(proxy.url + "/chat/completions", json=body).json()
                    row: dict[str, Any] = {"id": case.id, "asks": len(rec.answers)}
                    for key, data in (("direct", json.loads(rec.answers[0])), ("proxy", reply)):
                        msg = data["choices"][0]["message"]
                        _, scored = score_parsed(parse_output(msg), case)
                        row[key] = bool(scored.get("solved"))
                        row[key + "_stage"] = scored["stage"]
                    row["guard"] = (reply.get("callscope") or {}).get("guard", "passed/unchecked")
                    row["seconds"] = round(time.perf_counter() - t0, 2)
                    with out.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(row) + "\n")
                    done[case.id] = row
                    print(f"  {i}/{len(todo)} {case.id}: {row}", flush=True)
    rows = [done[c.id] for c in cases if c.id in done]
    k = len(rows)
    d = sum(r["direct"] for r in rows)
    p = sum(r["proxy"] for r in rows)
    both = sum(r["direct"] and r["proxy"] for r in rows)
    only_d = sum(r["direct"] and not r["proxy"] for r in rows)
    only_p = sum(r["proxy"] and not r["direct"] for r in rows)
    theta, lo, hi = newcombe_paired(both, only_p, only_d, k - both - only_p - only_d)
    wd, wp = wilson(d, k), wilson(p, k)
    print(f"solve rate over {k} cases (stage 0 and gold name):")
    print(f"  direct      {d}/{k} = {d / k:.3f}  [{wd[0]:.3f}, {wd[1]:.3f}]")
    print(f"  via proxy   {p}/{k} = {p / k:.3f}  [{wp[0]:.3f}, {wp[1]:.3f}]")
    print(f"  difference  {theta:+.3f}  [{lo:+.3f}, {hi:+.3f}] (Newcombe, paired)")
    print(f"  fixed by the proxy {only_p}; overcorrected (solved direct, not via proxy) {only_d}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000, help="latency requests per path (0: skip)")
    ap.add_argument("--bfcl", type=int, default=0, help="BFCL S=5 cases through the 0.5B")
    ap.add_argument("--out", type=Path, default=Path("proxy_bfcl.jsonl"))
    ap.add_argument("--attempts", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=160)
    args = ap.parse_args()
    if args.n:
        latency(args.n)
    if args.bfcl:
        bfcl(args.bfcl, args.out, args.attempts, args.max_tokens)


if __name__ == "__main__":
    main()
