"""`callscope serve` under load, side by side with going direct to the same upstream (issue 29
goals). Run: ``python benchmarks/proxy_load.py``.

Both servers run as users run them, each its own process: a fast local upstream (a tiny ASGI
app on uvicorn answering a passing tool call, or a 20 MB completion for ``model: big``) and
``callscope serve --upstream`` in front of it. One client process (``httpx.AsyncClient``)
measures, in one run:

1. a burst of 500 requests at concurrency 200, direct and through the proxy: unanswered
   count, p50 and p99 (goal: 0 unanswered, proxy p99 within 3x of direct);
2. the proxy's resident memory after each of 10 such bursts (goal: flat);
3. added latency on passing answers at concurrency 1 (goal: p50 <= 1 ms, p99 <= 5 ms);

Beside them, in 1 and 3, the floor of the stack: a bare pass-through ASGI app on the same
uvicorn and httpx (no check, no record), so what callscope itself adds is visible.
4. a 20 MB completion through the proxy, while small requests run one after another beside
   it (goal: under 2 s; the small requests' p50 within 2x of their p50 alone);
5. ``GET /callscope/health`` every 20 ms from another process, alone and while three answers
   with 60 MB of arguments each go through the proxy at once (issue 47 point 6: the wait of
   unrelated requests while large answers are read and checked).

Timings depend on the machine and its load (printed with ``uptime``); nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

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
BIG_CHARS = 20_000_000
#: the arguments of the ``model: huge`` answer (issue 47 point 6: 60 MB of arguments)
HUGE_CHARS = 60 * 1024 * 1024


def _completion(content: str | None, arguments: str = '{"city": "Paris"}') -> bytes:
    call = {
        "id": "c0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }
    message = {"role": "assistant", "content": content, "tool_calls": [call]}
    return json.dumps(
        {
            "id": "chatcmpl-load",
            "object": "chat.completion",
            "created": 0,
            "model": "load",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        }
    ).encode()


def _request(model: str = "small") -> bytes:
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]
    return json.dumps({"model": model, "messages": messages, "tools": TOOLS}).encode()


async def _body(receive):  # type: ignore[no-untyped-def]
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            return body


def upstream_main(port: int) -> None:
    """The fast upstream: a bare ASGI app on uvicorn."""
    import uvicorn

    small = _completion(None)
    big = _completion("It is sunny. " * (BIG_CHARS // 13))
    huge = _completion(None, json.dumps({"city": "x" * HUGE_CHARS}))

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        body = await _body(receive)
        out = big if b'"big"' in body else huge if b'"huge"' in body else small
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(out))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": out})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", backlog=2048)


def floor_main(up_port: int, port: int, http: str = "h11", loop: str = "asyncio") -> None:
    """The floor of the stack: a bare pass-through ASGI app on uvicorn (h11 on asyncio's loop,
    as the proxy, unless told otherwise) forwarding each request with an
    ``httpx.AsyncClient`` and nothing else: no check, no record. What the proxy adds beyond
    this is callscope's own cost."""
    import uvicorn

    from callscope.guard import upstream

    # the proxy's own pool layout (pools taken in turn), so the floor differs only by callscope
    # (read from the code under test: an earlier commit had other values, or none)
    pools = upstream.UPSTREAM_POOLS
    per_pool = upstream.UPSTREAM_CONNECTIONS // pools
    limits = httpx.Limits(
        max_connections=per_pool,
        max_keepalive_connections=per_pool,
        keepalive_expiry=getattr(upstream, "UPSTREAM_KEEPALIVE_S", 5.0),
    )
    clients = [
        httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{up_port}", timeout=60, limits=limits, verify=False
        )
        for _ in range(pools)
    ]
    turn = itertools.count()

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        body = await _body(receive)
        client = clients[next(turn) % len(clients)]
        r = await client.post(scope["path"], content=body)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(r.content)),
        ]
        await send({"type": "http.response.start", "status": r.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": r.content})

    uvicorn.run(
        app, host="127.0.0.1", port=port, log_level="warning", backlog=2048, http=http, loop=loop
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listening on {port}")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


FAILURES: collections.Counter[str] = collections.Counter()


async def _burst(url: str, n: int, concurrency: int) -> tuple[int, list[float]]:
    """``n`` requests, ``concurrency`` at a time, each on its own connection; the unanswered
    count (their kinds in :data:`FAILURES`) and each answered request's seconds."""
    sem = asyncio.Semaphore(concurrency)
    times: list[float] = []
    failed = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def one() -> None:
            nonlocal failed
            async with sem:
                t = time.perf_counter()
                try:
                    r = await client.post(url + "/chat/completions", content=_request())
                    if r.status_code != 200:
                        failed += 1
                        FAILURES[f"{r.status_code} {r.text[:120]}"] += 1
                        return
                except httpx.HTTPError as exc:
                    failed += 1
                    FAILURES[f"{type(exc).__name__}: {exc}"[:160]] += 1
                    return
                times.append(time.perf_counter() - t)

        await asyncio.gather(*(one() for _ in range(n)))
    return failed, times


async def _sequential(url: str, n: int) -> list[float]:
    times = []
    async with httpx.AsyncClient(timeout=30) as client:
        for _ in range(n):
            t = time.perf_counter()
            r = await client.post(url + "/chat/completions", content=_request())
            r.raise_for_status()
            times.append(time.perf_counter() - t)
    return times


async def _big_beside_small(url: str) -> tuple[float, list[float]]:
    async with httpx.AsyncClient(timeout=120) as client:
        done = asyncio.Event()
        small: list[float] = []

        async def smalls() -> None:
            while not done.is_set():
                t = time.perf_counter()
                await client.post(url + "/chat/completions", content=_request())
                small.append(time.perf_counter() - t)

        task = asyncio.create_task(smalls())
        await asyncio.sleep(0.2)
        t = time.perf_counter()
        r = await client.post(url + "/chat/completions", content=_request("big"))
        big_s = time.perf_counter() - t
        done.set()
        await task
        assert r.status_code == 200 and len(r.content) > BIG_CHARS, r.status_code
        return big_s, small


async def _gets(url: str, seconds: float, done: asyncio.Event | None = None) -> list[float]:
    """GET ``url`` every 20 ms for ``seconds`` (or until ``done``): each one's seconds."""
    times: list[float] = []
    end = time.perf_counter() + seconds
    async with httpx.AsyncClient(timeout=120) as client:
        while time.perf_counter() < end and not (done is not None and done.is_set()):
            t = time.perf_counter()
            (await client.get(url)).raise_for_status()
            times.append(time.perf_counter() - t)
            await asyncio.sleep(0.02)
    return times


async def _gets_beside_huge(health: str, url: str) -> list[float]:
    """:func:`_gets` while three answers with 60 MB of arguments go through the proxy. The
    GETs run in another process: this one's event loop is busy reading 180 MB."""
    probe = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "_gets", health, stdout=asyncio.subprocess.PIPE
    )
    await asyncio.sleep(1.0)
    async with httpx.AsyncClient(timeout=300) as client:
        posts = [client.post(url + "/chat/completions", content=_request("huge")) for _ in range(3)]
        replies = await asyncio.gather(*posts)
    assert all(r.status_code == 200 for r in replies), [r.status_code for r in replies]
    probe.send_signal(signal.SIGTERM)
    out, _ = await probe.communicate()
    return json.loads(out)


def _workers_up(health: str, seconds: float = 60.0) -> None:
    """Wait until the proxy's check workers are up (a proxy without them: at once)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if httpx.get(health, timeout=30).json().get("check_workers", "ready") == "ready":
            return
        time.sleep(0.1)


def gets_main(url: str) -> None:
    """The GET process of :func:`_gets_beside_huge`: GETs until SIGTERM, then their times."""
    done = asyncio.Event()

    async def run() -> list[float]:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
        return await _gets(url, 600.0, done)

    print(json.dumps(asyncio.run(run())))


def _ms(x: float) -> str:
    return f"{x * 1000:8.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=500, help="requests per burst")
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--bursts", type=int, default=10, help="bursts for the memory check")
    ap.add_argument("--sequential", type=int, default=500, help="requests at concurrency 1")
    args = ap.parse_args()

    up_port, px_port, fl_port = _free_port(), _free_port(), _free_port()
    me = str(Path(__file__).resolve())
    up = subprocess.Popen([sys.executable, me, "_upstream", str(up_port)])
    fl = subprocess.Popen([sys.executable, me, "_floor", str(up_port), str(fl_port)])
    run_dir = Path(tempfile.mkdtemp(prefix="proxy-load-")) / "run"
    cmd = [sys.executable, "-c", "from callscope.cli.main import main; main()", "serve"]
    cmd += ["--upstream", f"http://127.0.0.1:{up_port}/v1", "--port", str(px_port)]
    cmd += ["--out", str(run_dir)]
    px = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    try:
        _wait(up_port)
        _wait(px_port)
        _wait(fl_port)
        direct, proxy = f"http://127.0.0.1:{up_port}/v1", f"http://127.0.0.1:{px_port}/v1"
        floor = f"http://127.0.0.1:{fl_port}/v1"
        print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
        print(f"cpus: {os.cpu_count()}")
        asyncio.run(_sequential(direct, 50))  # warm both
        asyncio.run(_sequential(proxy, 50))
        asyncio.run(_sequential(floor, 50))

        print(f"\n1. burst: {args.n} requests at concurrency {args.concurrency}")
        print(f"{'':10}{'unanswered':>12}{'p50 ms':>10}{'p99 ms':>10}")
        results = {}
        for name, url in (("direct", direct), ("floor", floor), ("proxy", proxy)):
            failed, times = asyncio.run(_burst(url, args.n, args.concurrency))
            results[name] = _pct(times, 0.99)
            print(f"{name:10}{failed:12d}{_ms(_pct(times, 0.5)):>10}{_ms(_pct(times, 0.99)):>10}")
        print(f"proxy p99 / direct p99: {results['proxy'] / results['direct']:.2f} (goal <= 3)")
        print(
            f"floor p99 / direct p99: {results['floor'] / results['direct']:.2f} (the stack alone)"
        )

        print(f"\n2. proxy memory across {args.bursts} bursts (RSS MiB)")
        rss = [_rss_mb(px.pid)]
        unanswered = 0
        for _ in range(args.bursts):
            failed, _times = asyncio.run(_burst(proxy, args.n, args.concurrency))
            unanswered += failed
            rss.append(_rss_mb(px.pid))
        print("before, then after each: " + " ".join(f"{r:.0f}" for r in rss))
        print(f"unanswered over the {args.bursts} bursts: {unanswered}")
        print(f"growth from burst 2 to burst {args.bursts}: {rss[-1] - rss[2]:+.1f} MiB")
        for kind, n in FAILURES.items():
            print(f"  unanswered: {n} x {kind}")

        print(f"\n3. concurrency 1, {args.sequential} passing answers each")
        d = asyncio.run(_sequential(direct, args.sequential))
        f = asyncio.run(_sequential(floor, args.sequential))
        p = asyncio.run(_sequential(proxy, args.sequential))
        print(f"{'':10}{'p50 ms':>10}{'p99 ms':>10}")
        for name, t in (("direct", d), ("floor", f), ("proxy", p)):
            print(f"{name:10}{_ms(_pct(t, 0.5)):>10}{_ms(_pct(t, 0.99)):>10}")
        for name, t, goal in (("proxy", p, " (goal: p50 <= 1, p99 <= 5)"), ("floor", f, "")):
            print(
                f"{name} adds: p50 {_ms(_pct(t, 0.5) - _pct(d, 0.5)).strip()} ms, "
                f"p99 {_ms(_pct(t, 0.99) - _pct(d, 0.99)).strip()} ms{goal}"
            )

        print("\n4. a 20 MB completion beside small requests at concurrency 1")
        alone = asyncio.run(_sequential(proxy, 100))
        health = proxy.removesuffix("/v1") + "/callscope/health"
        # the 1st starts the proxy's check workers (checked on a thread while they start);
        # the 2nd, once they are up, is checked in one of them
        for which in ("1st", "2nd"):
            if which == "2nd":
                _workers_up(health)
            workers = httpx.get(health, timeout=30).json().get("check_workers", "none")
            big_s, beside = asyncio.run(_big_beside_small(proxy))
            print(
                f"20 MB completion through the proxy, {which} (check workers {workers}): "
                f"{big_s:.2f} s (goal < 2)"
            )
            a50, b50 = statistics.median(alone), statistics.median(beside)
            print(
                f"  small requests: p50 alone {_ms(a50).strip()} ms, beside it "
                f"{_ms(b50).strip()} ms (x{b50 / a50:.2f}, goal <= 2; max beside "
                f"{_ms(max(beside)).strip()} ms, {len(beside)} requests)"
            )

        print("\n5. GET /callscope/health every 20 ms, alone and beside three 60 MB answers")
        workers = httpx.get(health, timeout=30).json().get("check_workers", "none")
        print(f"(check workers {workers})")
        rows = [("alone", asyncio.run(_gets(health, 2.0)))]
        # twice: the first answer over 1 MiB (section 4) has started the proxy's workers
        rows.append(("beside 1st", asyncio.run(_gets_beside_huge(health, proxy))))
        rows.append(("beside 2nd", asyncio.run(_gets_beside_huge(health, proxy))))
        print(f"{'':12}{'n':>6}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
        for name, t in rows:
            print(f"{name:12}{len(t):6d}{_ms(_pct(t, 0.5))}{_ms(_pct(t, 0.99))}{_ms(max(t))}")
        print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    finally:
        px.send_signal(signal.SIGTERM)
        up.send_signal(signal.SIGTERM)
        fl.send_signal(signal.SIGTERM)
        px.wait(60)
        up.wait(30)
        fl.wait(30)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "_upstream":
        upstream_main(int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "_gets":
        gets_main(sys.argv[2])
    elif len(sys.argv) in (4, 6) and sys.argv[1] == "_floor":
        floor_main(int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:6])
    else:
        main()
