"""Two versions of `callscope serve` side by side in one run (issue 39): the same upstream, the
same client, requests interleaved, so that a loaded machine slows both alike. Run:
``python benchmarks/proxy_ab.py BEFORE_SRC AFTER_SRC`` (each a ``src`` folder, e.g. of a
``git archive`` of the old commit and of this tree).

1. concurrency 1: ``before, after, direct`` in turn, ``--n`` requests each; p50 and p99;
2. three bursts of 500 at concurrency 200 to each, the order alternating; unanswered, p50, p99;
3. the 20 MB completion beside small requests, twice each, the order alternating.

It reuses :mod:`proxy_load`'s upstream, requests and measures. Timings are not tests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import proxy_load as pl  # noqa: E402


def _serve(src: str, up_port: int, port: int) -> subprocess.Popen[bytes]:
    run = Path(tempfile.mkdtemp(prefix="proxy-ab-")) / "run"
    cmd = [sys.executable, "-c", "from callscope.cli.main import main; main()", "serve"]
    cmd += ["--upstream", f"http://127.0.0.1:{up_port}/v1", "--port", str(port)]
    cmd += ["--out", str(run)]
    env = {**os.environ, "PYTHONPATH": src}
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


async def _interleaved(urls: list[str], n: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {u: [] for u in urls}
    clients = {u: httpx.AsyncClient(timeout=30) for u in urls}
    try:
        for _ in range(n):
            for u in urls:
                t = time.perf_counter()
                r = await clients[u].post(u + "/chat/completions", content=pl._request())
                r.raise_for_status()
                times[u].append(time.perf_counter() - t)
    finally:
        for c in clients.values():
            await c.aclose()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="the src folder of the first version")
    ap.add_argument("after", help="the src folder of the second version")
    ap.add_argument("--n", type=int, default=600, help="requests each at concurrency 1")
    args = ap.parse_args()
    up_port, a_port, b_port = pl._free_port(), pl._free_port(), pl._free_port()
    me = str(Path(pl.__file__).resolve())
    procs = [subprocess.Popen([sys.executable, me, "_upstream", str(up_port)])]
    procs += [_serve(args.before, up_port, a_port), _serve(args.after, up_port, b_port)]
    try:
        for port in (up_port, a_port, b_port):
            pl._wait(port)
        a, b = f"http://127.0.0.1:{a_port}/v1", f"http://127.0.0.1:{b_port}/v1"
        d = f"http://127.0.0.1:{up_port}/v1"
        print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
        asyncio.run(_interleaved([a, b, d], 50))  # warm all three
        t = asyncio.run(_interleaved([a, b, d], args.n))
        print(f"1. concurrency 1, interleaved, {args.n} each")
        for name, u in (("before", a), ("after", b), ("direct", d)):
            p50, p99 = pl._pct(t[u], 0.5), pl._pct(t[u], 0.99)
            print(f"  {name:7} p50 {p50 * 1000:7.2f} ms  p99 {p99 * 1000:7.2f} ms")
        pairs = [("before", a), ("after", b)]
        print("2. bursts of 500 at concurrency 200, alternating")
        for rnd in range(3):
            for name, u in pairs if rnd % 2 == 0 else pairs[::-1]:
                failed, times = asyncio.run(pl._burst(u, 500, 200))
                p50, p99 = pl._pct(times, 0.5), pl._pct(times, 0.99)
                print(f"  {rnd} {name:7} unanswered {failed}  p50 {p50:.2f} s  p99 {p99:.2f} s")
        print("3. the 20 MB completion beside small requests, alternating")
        for rnd in range(2):
            for name, u in pairs if rnd % 2 == 0 else pairs[::-1]:
                big_s, small = asyncio.run(pl._big_beside_small(u))
                beside = statistics.median(small) * 1000
                print(f"  {rnd} {name:7} {big_s:.2f} s, small p50 beside {beside:.1f} ms")
        print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(60)


if __name__ == "__main__":
    main()
