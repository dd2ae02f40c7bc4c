"""The repair proxy: an OpenAI-compatible ``/v1/chat/completions`` between an agent and its
model server (``callscope serve``).

What it checks, and what it does not:

- A non-streaming ``POST /v1/chat/completions`` (or ``/chat/completions``) whose request has
  ``tools`` (or legacy ``functions``) and whose upstream answer (any ``2xx`` status: a
  ``201`` is checked like a ``200``) has ``tool_calls`` (or a legacy ``function_call``) in
  its first choice:
  every call is diagnosed (:func:`callscope.guard.check.check`) against the request's tools,
  its last user message and, as context, its earlier user messages and tool results. A
  failing call is repaired (:func:`callscope.guard.repair.repair`): upstream is asked again
  with the model's answer and the gated correction appended (the agent never sees
  those turns; a failing call among passing ones is named by position and name, and the
  passing ones are to be kept as they are), at most ``attempts`` times and not after
  ``repair_timeout`` seconds; the best whole answer is kept.
- The agent gets the upstream body byte for byte when the calls pass; the repaired
  completion when a re-ask passed; else the best one seen. A changed body carries one extra
  top-level field, ``callscope``: ``{"guard": "repaired" | "unrepaired", "attempts",
  "best_attempt", "stage", "reasons", "correction", "calls", "first_stages",
  "request_id"}``, where ``calls`` lists each call of the returned answer by position
  (``{"position", "name", "stage", "reasons"}``) and ``first_stages`` each call's stage in
  the first answer. Every checked reply also has the header
  ``X-Callscope-Guard: passed | repaired | unrepaired`` (``unchecked`` for a completion
  without tool calls) and ``X-Callscope-Guard-Calls``: each call's stage in the answer
  returned, by position, comma-separated (``0,3``: the first call passed, the second failed
  at stage 3; only stage digits, so no model text reaches a header). A call whose
  ``function.arguments`` is a JSON object rather than the string the OpenAI format requires
  is read and judged all the same (Ollama writes objects), and said:
  ``X-Callscope-Guard-Note: arguments-not-a-string=0`` (the positions). An answer of several
  choices (``n > 1``) has every choice checked; when one fails it is passed on as it came,
  ``unrepaired``, with ``X-Callscope-Guard-Note: failing-choices=1`` (a re-ask gives one
  answer: repairing would drop the others).
- Not checked, passed through unchanged: answers without tool calls, requests without
  tools, streaming requests on any endpoint (``"stream": true`` in the parsed body, however
  it is spelled; relayed as upstream's server-sent events, decoded, a whole event at a time
  (:mod:`callscope.guard.proxy.events`); an upstream that fails mid-stream ends the stream
  with one last ``data: {"error": ...}`` event, never a second HTTP response; a client that
  goes away ends the upstream request at once and frees its slot, and one that stops reading
  holds it ``upstream_timeout`` and 1 s at most),
  every other endpoint and method, and error statuses (returned with upstream's status and
  body). An upstream that does not finish
  within ``upstream_timeout`` (one deadline for the whole request, not per read) is answered
  504; an unreachable upstream, one that broke off its answer, an answer over
  ``max_reply_bytes`` once decoded (``upstream_too_large``), too deeply nested to read, with
  a status outside 100-599 or in a content coding the proxy did not ask for
  (``upstream_invalid``) 502, each with an OpenAI-style ``error`` object. Upstream's header
  bytes are relayed as sent, less hop-by-hop ones and every ``X-Callscope-*`` header (an
  upstream cannot forge the verdict); a request is sent upstream a second time only when it
  provably never reached it (:mod:`callscope.guard.upstream`).
- Every bad request is answered, with an OpenAI-style ``error`` object, and counted in the
  run store (``guard:decisions``): a garbage request line, a header block over 16 KiB, two
  ``Content-Length`` values, a non-ASCII request target: 400 (the server's HTTP parser, h11);
  both ``Transfer-Encoding`` and ``Content-Length``: 400 and the connection closed (nothing
  after the body is read as a request: no CL.TE smuggling); over 100 header fields or 16 KiB
  of them: 431; request bodies over
  ``max_body_bytes``: 413; a chunked body without ``Content-Length``: 411; a body or header
  block not complete within ``body_timeout`` / ``header_timeout`` seconds: 408; a target that
  would leave the configured upstream or is no URL path (a ``#``, over 8 KiB, ``/..;/``:
  :func:`~callscope.guard.upstream.upstream_url`), a
  body that is not a JSON object, or a chat request whose ``messages``, ``tools`` or a tool's
  ``parameters`` have the wrong JSON type (:func:`request_error`): 400; a request beyond
  ``max_concurrent`` in flight: 503 (``overloaded``). It binds 127.0.0.1 unless told
  otherwise.
- One memory bound for the whole process (``max_memory_bytes``, ``--max-memory-mb``;
  :mod:`callscope.guard.budget`): request bodies (their declared length, before reading)
  and decoded upstream answers in flight; past it a request is answered 503
  (``over_memory_budget``). An upstream that sends more than the answer it declared (a
  second response to one request, a ``Content-Length`` short of its body) is answered 502
  (``upstream_invalid``) and its connection is closed, never reused: a reply is tied to its
  request. A client that goes away before its answer ends the upstream request at once;
  nothing is re-asked or recorded for it (``client_gone``). A method is
  read as upstream is sent it, upper-cased (``trace`` is ``TRACE``): ``TRACE``, ``TRACK``
  and ``CONNECT`` are 405; a chat path with extra slashes (``/v1//chat/completions/``) is
  the chat path. A request with ``NaN``, ``Infinity`` or a number no float can carry
  (``1e999``) is 400, and a ``2xx`` answer to a chat request with tools that the proxy
  cannot read as JSON (the same numbers, a 5,000-digit integer, bytes that are not UTF-8)
  502 (``upstream_invalid``), never relayed unchecked. A reply the client does not take
  (each 1 MiB of it within ``body_timeout``, the whole within ``body_timeout`` plus one
  second a MiB) is dropped with its connection (``slow_client``); a request body in a
  content coding is a 415 (never inflated, never relayed), a chat request that is not UTF-8
  (UTF-16, UTF-32, a byte order mark) a 400; a redirect to upstream's own origin is
  rewritten to the proxy's; a WebSocket upgrade is refused with a JSON 501.
  ``GET /callscope/health``
  is the proxy's own: the run store's state (503 while decisions wait to be stored) and the
  memory bound; while the store fails, every reply carries ``X-Callscope-Store`` and
  stderr says so (docs/proxy-bounds.md).
- A check that fails with an error of its own (a bug, or a value no reader foresaw) passes
  upstream's answer on unchanged with ``X-Callscope-Guard: error``, counted as
  ``guard_error`` and logged on one line: the agent is never left without an answer.

The stack: an ASGI application (:class:`ProxyApp`, no framework: one endpoint and a
pass-through need none) served by uvicorn (its h11 parser, a listen backlog of 2048, one
event loop; a request and answer of up to 4,096 characters together are checked on the loop
(:func:`callscope.guard.inputs.checks_inline`, the project's one rule), up to 1 MiB on a
worker thread, larger in one of two worker processes, since ``json`` holds the interpreter
lock for a whole decode; repairs run on worker threads)
with an ``httpx.AsyncClient`` to upstream. SIGINT and SIGTERM stop it gracefully:
no new connections, every request in flight answered, then every decision written.

Every decision is recorded in a run store (:mod:`callscope.guard.record`) once its reply has
been sent, so ``callscope report RUN_DIR`` shows the stage mix and each repaired request like
a SAAG run, and never an outcome the client did not get.

The package, by job: :mod:`~callscope.guard.proxy.config` (:class:`ProxyConfig`),
:mod:`~callscope.guard.proxy.request` (the request checks),
:mod:`~callscope.guard.proxy.heavy` (reading and checking an answer; the worker processes),
:mod:`~callscope.guard.proxy.decide` (:class:`Guard`: check, repair, record),
:mod:`~callscope.guard.proxy.app` (:class:`ProxyApp`, ASGI),
:mod:`~callscope.guard.proxy.protocol` (:class:`GuardedH11Protocol`) and
:mod:`~callscope.guard.proxy.server` (:class:`ProxyServer`, :func:`serving`: the lifecycle).
"""

from __future__ import annotations

from callscope.guard.proxy.app import ProxyApp, send_reply
from callscope.guard.proxy.config import MAX_CONCURRENT, ProxyConfig
from callscope.guard.proxy.decide import (
    CALLS_HEADER,
    EXTRA_FIELD,
    GUARD_HEADER,
    NOTE_HEADER,
    UPSTREAM_FAILURES,
    Guard,
    call_list,
    calls_header,
)
from callscope.guard.proxy.protocol import GuardedH11Protocol
from callscope.guard.proxy.request import (
    CHAT_PATHS,
    MAX_HEADER_BYTES,
    MAX_HEADERS,
    request_error,
)
from callscope.guard.proxy.server import (
    BACKLOG,
    KEEP_ALIVE_S,
    MAX_CONNECTIONS,
    SWITCH_INTERVAL_S,
    ListenError,
    ProxyServer,
    make_server,
    make_upstream,
    serving,
)
from callscope.guard.upstream import LocalUpstream, UpstreamReply

__all__ = [
    "BACKLOG",
    "CALLS_HEADER",
    "NOTE_HEADER",
    "CHAT_PATHS",
    "EXTRA_FIELD",
    "GUARD_HEADER",
    "KEEP_ALIVE_S",
    "MAX_CONCURRENT",
    "MAX_CONNECTIONS",
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "SWITCH_INTERVAL_S",
    "UPSTREAM_FAILURES",
    "Guard",
    "GuardedH11Protocol",
    "ListenError",
    "LocalUpstream",
    "ProxyApp",
    "ProxyConfig",
    "ProxyServer",
    "UpstreamReply",
    "call_list",
    "calls_header",
    "make_server",
    "make_upstream",
    "request_error",
    "send_reply",
    "serving",
]
