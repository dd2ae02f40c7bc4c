"""`callscope serve`: the repair proxy (:mod:`callscope.guard.proxy`) in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from callscope.cli.common import GroundingOpt, console, fail, print_error, shown_path
from callscope.errors import CallscopeError
from callscope.guard.repair import DEFAULT_REPAIR_ATTEMPTS, MAX_REPAIR_ATTEMPTS
from callscope.models.registry import DEFAULT_SPEC as DEFAULT_LOCAL_MODEL
from callscope.saag.groundings import DEFAULT_GROUNDING, get_grounding
from callscope.store.run_store import RunStore


def serve(
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream",
            help="the OpenAI-compatible base URL to guard, with its /v1; without it, serve the "
            f"embedded model: {DEFAULT_LOCAL_MODEL}",
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="address to bind (127.0.0.1: this machine only)")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
    out: Annotated[
        Path, typer.Option("-o", "--out", help="run store for every decision (`callscope report`)")
    ] = Path("callscope-proxy"),
    attempts: Annotated[
        int,
        typer.Option(help="re-asks at most per failing response", min=0, max=MAX_REPAIR_ATTEMPTS),
    ] = DEFAULT_REPAIR_ATTEMPTS,
    repair_timeout: Annotated[
        float, typer.Option(help="seconds after the first answer in which re-asks may start")
    ] = 30.0,
    upstream_timeout: Annotated[
        float,
        typer.Option(
            help="seconds an upstream request may take as a whole, from sending it to the last "
            "byte of its answer (a stream included); then 504"
        ),
    ] = 120.0,
    max_body_mb: Annotated[float, typer.Option(help="largest request body accepted, MiB")] = 4.0,
    max_reply_mb: Annotated[
        float, typer.Option(help="largest upstream answer relayed, MiB once decoded; then 502")
    ] = 64.0,
    header_timeout: Annotated[
        float, typer.Option(help="seconds a client has to send a request's headers (then 408)")
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option(help="seconds a client has to send a request's body (then 408)")
    ] = 30.0,
    min_read_rate: Annotated[
        float,
        typer.Option(
            help="slowest average a client may read a reply at, KiB a second: the whole reply "
            "within --body-timeout plus its size at this rate, else the client is let go "
            "(lower it for clients on slow links)"
        ),
    ] = 1024.0,  # proxy.config.MIN_READ_RATE / 1024
    max_concurrent: Annotated[
        int, typer.Option(help="requests in flight at most; beyond it 503 (overloaded)", min=1)
    ] = 2048,  # proxy.MAX_CONCURRENT (not imported here: uvicorn loads only to serve)
    max_memory_mb: Annotated[
        float,
        typer.Option(
            help="request and decoded upstream bodies in flight at most, MiB, for the whole "
            "process; beyond it 503 (over_memory_budget)"
        ),
    ] = 256.0,  # guard.budget.DEFAULT_MEMORY_MB
    grounding: GroundingOpt = DEFAULT_GROUNDING,
) -> None:
    """Serve an OpenAI-compatible /v1/chat/completions that checks and repairs tool calls."""
    from callscope.guard.proxy import ListenError, ProxyConfig, make_server  # lazy: uvicorn
    from callscope.guard.upstream import redacted_url  # lazy: httpx

    if (
        min(repair_timeout, upstream_timeout, max_body_mb, max_reply_mb, header_timeout) <= 0
        or min(body_timeout, max_memory_mb, min_read_rate) <= 0
    ):
        fail(
            "--repair-timeout, --upstream-timeout, --max-body-mb, --max-reply-mb, "
            "--header-timeout, --body-timeout, --max-memory-mb and --min-read-rate must be "
            "positive"
        )
    if out.exists() and not out.is_dir():
        fail(f"--out {out} is a file, not a run directory; pick a folder")
    config = ProxyConfig(
        upstream=upstream,
        host=host,
        port=port,
        run_dir=out,
        attempts=attempts,
        repair_timeout=repair_timeout,
        upstream_timeout=upstream_timeout,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        max_reply_bytes=int(max_reply_mb * 1024 * 1024),
        grounding=get_grounding(grounding).name,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        max_concurrent=max_concurrent,
        max_memory_bytes=int(max_memory_mb * 1024 * 1024),
        min_read_rate=min_read_rate * 1024,
    )
    try:
        server = make_server(config)
    except ListenError as exc:
        fail(f"cannot listen on {host}:{port}: {exc}; pick another --port")
    except (CallscopeError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot open the run store in {out}: {exc.strerror or exc}")
    target = redacted_url(upstream) if upstream else DEFAULT_LOCAL_MODEL
    console.print(
        f"callscope guard on {escape(server.url)} -> {escape(target)}; decisions in "
        f"{shown_path(out)} (`callscope report {shown_path(out)}`); Ctrl-C stops"
    )
    # uvicorn: SIGINT and SIGTERM stop accepting, answer what is in flight, then the lifespan
    # writes every decision; it then raises the signal again (SIGINT: KeyboardInterrupt)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    _print_usage(out)
    health = server.writer.health() if server.writer is not None else None
    if health is not None and not health.ok:  # said on stderr, decision by decision
        print_error(f"{health.lost} decision(s) could not be stored in {out}")
        raise typer.Exit(code=1)
    raise typer.Exit(code=0)


def _print_usage(out: Path) -> None:
    """The run's summary line per model: the prompt tokens sent and computed and the tokens
    generated behind the proxy (from the answers' OpenAI ``usage``, as the report counts
    them)."""
    store = RunStore(out)
    try:
        usage = store.token_usage()
    finally:
        store.close()
    for model, u in usage.items():
        if u.requests:
            console.print(f"model tokens, {escape(model)}: {escape(u.line())}")
