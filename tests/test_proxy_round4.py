"""``callscope serve`` under attack, round four: a client that never reads its answer, numbers
no float can carry, upstream answers the proxy cannot read, methods in lower case, chat paths
with extra slashes and redirects to upstream, WebSocket upgrades, and where a check runs.
Each test starts the real server as users start it (``--port 0``, the port read from its
banner), drives it with real clients (``httpx``, raw sockets for what no library sends) and
a raw-socket upstream (:mod:`rawupstream`, with behaviours of this module); everything stays
on 127.0.0.1, bounded in count and time, and waits on events, never on a clock."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import rawupstream
from proxyserve import callscope_serve, raw_exchange
from rawupstream import QUERY, TOOLS, RawUpstream, Request, chat, completion, head, raw_upstream
from test_attack_round3 import wait_until
from test_proxy_attacks import decisions, post, status_line

from callscope.guard.proxy import GUARD_HEADER

#: the size of the answers a client leaves unread (over what the kernel's buffers hold)
UNREAD_MB = 10


def _call(name: str, arguments: str = "{}") -> bytes:
    """A completion whose one call is ``name(arguments)``, as JSON text with ``%s`` where a
    member of the caller's choosing goes (``"usage": ...``)."""
    call = {"id": "c0", "type": "function", "function": {"name": name, "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    return json.dumps({"id": "chatcmpl-r4", "choices": [choice], "usage": "USAGE"}).encode()


#: answers the proxy cannot read as JSON, each calling a tool the request never named
UNREADABLE = {
    "huge_int": _call("delete_account").replace(b'"USAGE"', b"9" * 5000),
    "not_utf8": _call("delete_account").replace(b'"USAGE"', b'"\xff\xfe"'),
    "too_big_float": _call("delete_account").replace(b'"USAGE"', b"1e999"),
    "nan": _call("delete_account").replace(b'"USAGE"', b"NaN"),
}
#: a call larger than callscope reads (its limit, not the model's error): passed on, marked
OVER_LIMIT = _call("get_weather", json.dumps({"city": "Paris " * 40_000})).replace(
    b'"USAGE"', b"null"
)


def _choices(*cities: str) -> bytes:
    """An answer of one ``get_weather`` call per choice (``n = len(cities)``)."""
    choices = []
    for i, city in enumerate(cities):
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}  # fmt: skip
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        choices.append({"index": i, "message": message, "finish_reason": "tool_calls"})
    return json.dumps(
        {"id": "chatcmpl-n", "object": "chat.completion", "choices": choices}
    ).encode()


#: answers of two choices (``n = 2``), by model
SEVERAL = {
    "n2_later_fails": _choices("Paris", "Berlin"),
    "n2_first_fails": _choices("Berlin", "Paris"),
    "n2_pass": _choices("Paris", "Paris"),
}
#: answers with nothing to check: passed on as upstream sent them
NOTHING_TO_CHECK = {
    "no_choices": b'{"object": "list", "data": [], "usage": 1e300}',
    "no_calls": json.dumps(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}]}
    ).encode(),
}


async def fixed(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """The answer of :data:`UNREADABLE` or :data:`NOTHING_TO_CHECK` named by the model, or
    :data:`OVER_LIMIT`."""
    answers = {**UNREADABLE, **NOTHING_TO_CHECK, **SEVERAL, "over_limit": OVER_LIMIT}
    await rawupstream.answer(w, answers[req.model])


async def big_passing(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A passing call (Paris) beside :data:`UNREAD_MB` MB of text."""
    body = json.loads(completion())
    body["choices"][0]["message"]["content"] = "x" * (UNREAD_MB * 1024 * 1024)
    await rawupstream.answer(w, json.dumps(body).encode())


async def redirecting(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """Routed like a Starlette server (vLLM's) with ``redirect_slashes``: a path with a
    trailing slash is redirected to upstream's own origin without it; ``/v1/elsewhere`` to
    upstream's ``/admin``; the chat path answers a call to ``delete_account`` (no such tool),
    and ``GET /v1/models`` a list."""
    path = req.target.split("?", 1)[0]
    moved = {"/v1/elsewhere": "/admin"}.get(path, path.rstrip("/"))
    if moved != path:
        location = f"http://127.0.0.1:{up.port}{moved}"
        w.write(head("307 Temporary Redirect", [("location", location), ("content-length", "0")]))
        await w.drain()
    elif req.method == "GET":
        await rawupstream.answer(w, b'{"object": "list", "data": []}')
    else:
        await rawupstream.answer(w, _call("delete_account").replace(b'"USAGE"', b"null"))


@pytest.fixture
def up(monkeypatch: pytest.MonkeyPatch) -> Iterator[RawUpstream]:
    """The raw upstream with this module's behaviours (by model; ``""``, ``elsewhere`` and
    ``models`` by the target's last segment)."""
    for model in {**UNREADABLE, **NOTHING_TO_CHECK, **SEVERAL, "over_limit": None}:
        monkeypatch.setitem(rawupstream.BEHAVIOURS, model, fixed)
    monkeypatch.setitem(rawupstream.BEHAVIOURS, "big_passing", big_passing)
    for name in ("redirecting", "", "elsewhere", "models"):
        monkeypatch.setitem(rawupstream.BEHAVIOURS, name, redirecting)
    with raw_upstream() as upstream:
        yield upstream


def health(url: str) -> dict[str, object]:
    reply: dict[str, object] = httpx.get(url, timeout=10).json()
    return reply


# --------------------------------------------------------------------------- finding 1


def test_clients_that_never_read_their_answer_are_let_go_and_free_what_they_held(
    up: RawUpstream, tmp_path: Path
) -> None:
    """Three clients (a receive buffer of 4 KiB) ask for a 10 MB answer and never read it,
    under a memory bound of 32 MiB: they are let go after --body-timeout for a piece, their
    memory and slots given back (before, they held 30 of 32 MiB and every other request got
    a 503 for as long as they stayed connected), counted slow_client, and not recorded."""
    options = ("--max-memory-mb", "32", "--body-timeout", "2", "--upstream-timeout", "60")
    with callscope_serve(up.url, tmp_path / "run", *options) as served:
        root = f"http://127.0.0.1:{served.port}"
        stuck = []
        for _ in range(3):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", served.port))
            s.sendall(post(served.port, chat("big_passing")))
            stuck.append(s)
        try:
            assert wait_until(lambda: len(up.requests) == 3, 60)
            freed = wait_until(
                lambda: (
                    health(root + "/callscope/health")["in_flight"] == 1
                    and health(root + "/callscope/health")["memory_used"] == 0
                ),
                90,
            )
            state = health(root + "/callscope/health")
            beside = httpx.post(
                served.url + "/chat/completions",
                content=chat("ok", user=" " * 300_000),
                timeout=30,
            )
        finally:
            for s in stuck:
                s.close()
    assert freed, state
    assert beside.status_code == 200, beside.text[:300]
    counted = decisions(tmp_path / "run")
    assert counted.get("slow_client") == 3, counted
    assert counted.get("passed") == 1, counted  # the one beside them: theirs never sent


# --------------------------------------------------------------------------- finding 2


def test_a_number_no_float_can_carry_is_refused_and_never_written_as_infinity(
    up: RawUpstream, tmp_path: Path
) -> None:
    """``1e999`` is valid JSON, but no float carries it: a request holding one is a clear
    400, like NaN, and nothing reaches upstream (before, it was read as inf, and the re-ask
    of a failing call sent upstream ``"temperature": Infinity``, which is no JSON)."""
    body = chat("redirecting", temperature=1)
    body = body.replace(b'"temperature": 1', b'"temperature": 1e999')
    with callscope_serve(up.url, tmp_path / "run", "--attempts", "1") as served:
        r = httpx.post(served.url + "/chat/completions", content=body, timeout=30)
    assert not any(b"Infinity" in seen.body for seen in up.requests)
    assert r.status_code == 400, r.text[:300]
    assert "1e999" in r.json()["error"]["message"]
    assert up.requests == []


# --------------------------------------------------------------------------- finding 3


def test_an_answer_the_proxy_cannot_read_is_refused_not_relayed_unchecked(
    up: RawUpstream, tmp_path: Path
) -> None:
    """A 2xx answer to a chat request with tools holding a 5,000-digit integer, bytes that
    are not UTF-8, ``1e999`` or ``NaN`` calls ``delete_account``, a tool the request never
    named (Node's ``JSON.parse`` reads the first three): a 502 ``upstream_invalid`` saying
    why, never the call (before: relayed unchecked, without ``X-Callscope-Guard``). An
    answer with nothing to check still passes byte for byte."""
    with (
        callscope_serve(up.url, tmp_path / "run") as served,
        httpx.Client(timeout=30) as client,
    ):
        refused = {
            m: client.post(served.url + "/chat/completions", content=chat(m)) for m in UNREADABLE
        }
        passed = {
            m: client.post(served.url + "/chat/completions", content=chat(m))
            for m in NOTHING_TO_CHECK
        }
    for model, r in refused.items():
        assert r.status_code == 502, (model, r.status_code, r.content[:200])
        assert r.json()["error"]["type"] == "upstream_invalid", model
        assert "cannot be checked" in r.json()["error"]["message"], model
        assert b"delete_account" not in r.content, model
    for model, r in passed.items():
        assert (r.status_code, r.content) == (200, NOTHING_TO_CHECK[model]), model
    assert decisions(tmp_path / "run").get("upstream_invalid") == len(UNREADABLE)


def test_calls_larger_than_callscope_reads_are_passed_on_marked_unchecked(
    up: RawUpstream, tmp_path: Path
) -> None:
    """A call of 240,000 characters (over the 200,000 callscope reads) is passed on as
    upstream sent it, ``X-Callscope-Guard: unchecked``, and never re-asked: the limit is
    callscope's, not the model's error (before, the model was told its valid call "could
    not be read" and re-asked)."""
    with (
        callscope_serve(up.url, tmp_path / "run") as served,
        httpx.Client(timeout=60) as client,
    ):
        r = client.post(served.url + "/chat/completions", content=chat("over_limit"))
    assert (r.status_code, r.headers[GUARD_HEADER], r.content) == (200, "unchecked", OVER_LIMIT)
    assert sum(1 for q in up.requests if q.model == "over_limit") == 1  # no re-ask


# --------------------------------------------------------------------------- finding 4


def test_a_method_in_lower_case_is_read_as_upstream_would_be_sent_it(
    up: RawUpstream, tmp_path: Path
) -> None:
    """httpx upper-cases the method it sends: ``trace`` is refused as TRACE is (before, it
    reached upstream as TRACE), and ``post`` to the chat path is checked (before, relayed
    unchecked: a call to a tool the request never named, without ``X-Callscope-Guard``)."""
    with callscope_serve(up.url, tmp_path / "run", "--attempts", "1") as served:
        traced = raw_exchange(
            served.port, b"trace /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        lower = post(served.port, chat("redirecting")).replace(b"POST ", b"post ", 1)
        posted = raw_exchange(served.port, lower)
    assert status_line(traced) == b"HTTP/1.1 405 Method Not Allowed", traced[:200]
    assert all(r.method != "TRACE" for r in up.requests)
    assert status_line(posted) == b"HTTP/1.1 200 OK", posted[:300]
    assert b"x-callscope-guard: unrepaired" in posted.lower()


# --------------------------------------------------------------------------- finding 5


def test_near_miss_chat_paths_are_checked_and_redirects_stay_on_the_proxy(
    up: RawUpstream, tmp_path: Path
) -> None:
    """``/v1/chat/completions/`` and ``/v1//chat/completions`` are the chat endpoint to a
    Starlette upstream: checked (before, relayed unchecked, and the first's redirect to
    upstream's own origin led a client that follows redirects past the proxy). A redirect to
    upstream's origin is rewritten to the proxy's; one outside --upstream's path is a 502."""
    with (
        callscope_serve(up.url, tmp_path / "run", "--attempts", "1") as served,
        httpx.Client(timeout=30, follow_redirects=True) as client,
    ):
        root = f"http://127.0.0.1:{served.port}"
        chats = [
            client.post(root + path, content=chat("redirecting"))
            for path in ("/v1/chat/completions/", "/v1//chat/completions")
        ]
        models = client.get(root + "/v1/models/")
        elsewhere = client.get(root + "/v1/elsewhere")
    for r in chats:
        assert r.url.port == served.port, r.url
        assert r.headers.get(GUARD_HEADER) == "unrepaired", r.headers
    assert models.status_code == 200
    assert models.url.port == served.port, models.url
    assert [h.headers["location"] for h in models.history] == ["/v1/models"]
    assert elsewhere.status_code == 502
    assert elsewhere.json()["error"]["type"] == "upstream_invalid"


# --------------------------------------------------------------------------- finding 6


def test_a_websocket_upgrade_is_refused_cleanly(up: RawUpstream, tmp_path: Path) -> None:
    """An upgrade to WebSocket (the Realtime API's way) is refused before the handshake with
    a JSON error, and the server logs no error (before: a plain-text 500 and "ASGI callable
    returned without completing handshake")."""
    upgrade = (
        b"GET /v1/realtime HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Version: 13\r\n\r\n"
    )
    with callscope_serve(up.url, tmp_path / "run") as served:
        answered = raw_exchange(served.port, upgrade)
        code, stderr = served.stop()
    assert status_line(answered).startswith(b"HTTP/1.1 501"), answered[:300]
    body = answered.split(b"\r\n\r\n", 1)[1]
    assert json.loads(body)["error"]["type"] == "not_relayed"
    assert "ASGI callable" not in stderr and "Traceback" not in stderr, stderr
    assert up.requests == []


# --------------------------------------------------------------------------- finding 7

#: what ``callscope serve`` runs under in the next test: the console script's ``main`` with
#: the check reporting, on stderr, whether it ran on the event loop's thread (the main one)
WHERE_SHIM = """
import sys, threading
import callscope.guard.proxy.decide as decide
judge = decide.judge
def reporting(*args, **kwargs):
    main = threading.current_thread() is threading.main_thread()
    print("round4-check-ran-on:", "loop" if main else "thread", file=sys.stderr, flush=True)
    return judge(*args, **kwargs)
decide.judge = reporting
sys.argv = ["callscope", *sys.argv[4:]]
from callscope.cli.main import main
main()
"""


def test_a_check_of_more_than_a_few_thousand_characters_runs_off_the_event_loop(
    up: RawUpstream, tmp_path: Path
) -> None:
    """The proxy follows the project's one rule (``checks_inline``, 4,096 characters of
    request and answer together): a short request is checked on the event loop, one of
    12,000 characters dense with numbers on a thread (before, everything up to 64 KiB ran on
    the loop: a 60 KB request of numbers held every other client 100-260 ms)."""
    shim = tmp_path / "where.py"
    shim.write_text(WHERE_SHIM)
    numbers = " ".join(f"{i}.5 km on 2024-01-{i % 28 + 1:02d}" for i in range(600))[:12_000]
    long_query = [{"role": "user", "content": QUERY[0]["content"] + " " + numbers}]
    long_body = json.dumps({"model": "ok", "messages": long_query, "tools": TOOLS}).encode()
    with callscope_serve(up.url, tmp_path / "run", wrap=[sys.executable, str(shim)]) as served:
        short = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=30)
        assert wait_until(lambda: "round4-check-ran-on" in served.stderr, 30)
        long = httpx.post(served.url + "/chat/completions", content=long_body, timeout=30)
        assert wait_until(lambda: served.stderr.count("round4-check-ran-on") == 2, 30)
    assert (short.status_code, long.status_code) == (200, 200)
    where = [line.split()[-1] for line in served.err if line.startswith("round4-check-ran-on")]
    assert where == ["loop", "thread"], served.stderr


def test_the_health_endpoint_is_the_proxys_own_for_every_method(
    up: RawUpstream, tmp_path: Path
) -> None:
    """``HEAD /callscope/health`` is answered by the proxy (its status and headers, no body)
    and any other method but GET is a 405 naming the two it takes; none reaches upstream
    (before, HEAD and POST were relayed to it)."""
    with (
        callscope_serve(up.url, tmp_path / "run") as served,
        httpx.Client(timeout=30) as client,
    ):
        url = served.url.removesuffix("/v1") + "/callscope/health"
        got = client.get(url)
        head = client.head(url)
        post = client.post(url, content=b"{}")
        put = client.put(url, content=b"{}")
    assert got.status_code == 200 and got.json()["status"] == "ok"
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-type"] == got.headers["content-type"]
    for refused in (post, put):
        assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD"
        assert refused.json()["error"]["type"] == "method_not_allowed"
    assert not [r for r in up.requests if "health" in r.target]


def test_every_choice_of_an_answer_with_several_is_checked(up: RawUpstream, tmp_path: Path) -> None:
    """An answer of two choices (``n = 2``) with Berlin, not stated, in either: passed on as
    upstream sent it, ``unrepaired``, the failing choice named in the note header, and not
    re-asked (a re-ask gives one answer: repairing the first choice dropped the second, and a
    failing second choice was passed as ``passed``). Two passing choices pass."""
    with (
        callscope_serve(up.url, tmp_path / "run") as served,
        httpx.Client(timeout=30) as client,
    ):
        replies = {
            m: client.post(served.url + "/chat/completions", content=chat(m)) for m in SEVERAL
        }
    for model, failing in (("n2_later_fails", "1"), ("n2_first_fails", "0")):
        r = replies[model]
        assert (r.status_code, r.headers[GUARD_HEADER], r.content) == (
            200, "unrepaired", SEVERAL[model],
        )  # fmt: skip
        assert r.headers["x-callscope-guard-note"] == f"failing-choices={failing}"
    assert replies["n2_pass"].headers[GUARD_HEADER] == "passed"
    assert sum(1 for q in up.requests if q.model in SEVERAL) == 3  # none re-asked
