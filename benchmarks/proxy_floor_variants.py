"""The floor of `callscope serve`'s stack per server core: the latency a bare uvicorn + httpx
pass-through (no check, no record; ``proxy_load.floor_main``) adds at concurrency 1 with
uvicorn's h11 or httptools parser on asyncio's or uvloop's event loop, side by side against
going direct to the same upstream (issue 29: would another server core reach the proxy's
added-latency goal, p50 <= 1 ms?).

    python benchmarks/proxy_floor_variants.py [--n 1000] [--rounds 4]

httptools and uvloop are not callscope's dependencies (uvloop comes with the integrations
extra): a variant whose module is not installed is left out. Timings depend on the machine and
its load; nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import signal
import subprocess
import sys
from pathlib import Path

from proxy_load import _free_port, _pct, _sequential, _wait


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="requests per target and round")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    load = str(Path(__file__).with_name("proxy_load.py"))
    up_port = _free_port()
    procs = [subprocess.Popen([sys.executable, load, "_upstream", str(up_port)])]
    floors: dict[tuple[str, str], int] = {}
    for http in ("h11", "httptools"):
        for loop in ("asyncio", "uvloop"):
            if any(importlib.util.find_spec(m) is None for m in {http, loop} - {"asyncio"}):
                print(f"left out: {http} on {loop} (not installed)")
                continue
            port = floors[(http, loop)] = _free_port()
            cmd = [sys.executable, load, "_floor", str(up_port), str(port), http, loop]
            procs.append(subprocess.Popen(cmd))
    try:
        for port in [up_port, *floors.values()]:
            _wait(port)
        direct = f"http://127.0.0.1:{up_port}/v1"
        for r in range(args.rounds):
            d = asyncio.run(_sequential(direct, args.n))
            d50, d99 = _pct(d, 0.5), _pct(d, 0.99)
            print(f"round {r}: direct p50 {d50 * 1e3:.2f} ms, p99 {d99 * 1e3:.2f} ms")
            for (http, loop), port in floors.items():
                t = asyncio.run(_sequential(f"http://127.0.0.1:{port}/v1", args.n))
                print(
                    f"  floor {http:9} on {loop:7} adds p50 {(_pct(t, 0.5) - d50) * 1e3:.2f} ms,"
                    f" p99 {(_pct(t, 0.99) - d99) * 1e3:.2f} ms"
                )
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(30)


if __name__ == "__main__":
    main()
