"""The proxy's decisions, independent of HTTP (:class:`Guard`): a chat request's upstream
answer checked, repaired when a call fails, recorded once the reply is sent, and the
headers that say what was decided."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import anyio.from_thread
import anyio.to_thread

from callscope.guard.check import TurnVerdict, check, message_of
from callscope.guard.inputs import checks_inline
from callscope.guard.proxy.config import ProxyConfig, log
from callscope.guard.proxy.heavy import (
    THREAD_CHECK_BYTES,
    HeavyChecks,
    Judged,
    judge,
    legacy_as_tool_calls,
)
from callscope.guard.proxy.request import (
    json_bytes,
    loads_answer,
    loads_request,
    request_error,
)
from callscope.guard.record import StoreWriter
from callscope.guard.repair import RepairAttempt, RepairResult, repair
from callscope.guard.upstream import (
    Headers,
    Upstream,
    UpstreamInvalid,
    UpstreamOverrun,
    UpstreamReply,
    UpstreamTimeout,
    UpstreamTooLarge,
    UpstreamUnreachable,
    as_async,
    error_reply,
)
from callscope.records.wire import (
    CallRow,
    ChatCompletion,
    ChatMessage,
    ChatRequest,
    JsonObject,
)

#: the extra top-level field of a completion the proxy changed (the package docstring)
EXTRA_FIELD = "callscope"
#: the response header naming the proxy's decision
GUARD_HEADER = "X-Callscope-Guard"
#: the response header listing each call's stage (0 = passed) by position
CALLS_HEADER = "X-Callscope-Guard-Calls"
#: the response header naming what the guard noticed beside its verdict: the positions of
#: calls whose arguments are an object, not the JSON string the OpenAI format requires
#: (``arguments-not-a-string=0,2``; only fixed words and digits reach it)
NOTE_HEADER = "X-Callscope-Guard-Note"
#: white space before an answer's closing brace read back at most (more: encoded again)
_MAX_CLOSING_SPACE = 64
#: how each upstream failure is answered: its decision (and error type), status, wording
UPSTREAM_FAILURES: dict[type[Exception], tuple[str, int, str]] = {
    UpstreamTimeout: ("upstream_timeout", 504, "timed out"),
    UpstreamUnreachable: ("upstream_unreachable", 502, "unreachable"),
    UpstreamTooLarge: ("upstream_too_large", 502, "answer too large"),
    UpstreamInvalid: ("upstream_invalid", 502, "answer not usable"),
    UpstreamOverrun: ("upstream_invalid", 502, "answer not trusted"),
}
#: repairs run at once, on worker threads of their own: a repair's thread waits on each
#: re-ask, and a blocking upstream (the embedded model) answers on anyio's default worker
#: threads (40). On those threads too, 40 repairs at once took every one, and each re-ask
#: then waited forever for a thread. More repairs than this wait their turn.
REPAIR_THREADS = 32
#: ``Guard.chat``'s default: the request body is still to be parsed
UNREAD: Any = object()


class ClientGone(Exception):
    """The client left before its answer: nothing more is asked of upstream for it."""


class ClientWatch:
    """Whether a request's client has left (:meth:`is_set`, from any thread), and the
    re-asks waiting on upstream for it, ended by :meth:`left` (called in the event loop)."""

    def __init__(self) -> None:
        self._gone = threading.Event()
        self._tasks: set[asyncio.Task[Any]] = set()

    def is_set(self) -> bool:
        return self._gone.is_set()

    def left(self) -> None:
        self._gone.set()
        for task in list(self._tasks):
            task.cancel()

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """The current task, ended by :meth:`left` while inside the block."""
        task = asyncio.current_task()
        if task is None:
            yield
            return
        self._tasks.add(task)
        try:
            if self.is_set():
                raise ClientGone("the client went away")
            yield
        finally:
            self._tasks.discard(task)


def tools_of(request: ChatRequest) -> list[Any]:
    """The request's ``tools``, or its legacy ``functions`` as tools (``[]`` for neither)."""
    tools = request.get("tools")
    if tools:
        return list(tools)
    functions = request.get("functions")
    if isinstance(functions, list):
        return [{"type": "function", "function": f} for f in functions if isinstance(f, dict)]
    return []


def _checked_form(data: ChatCompletion) -> ChatCompletion | ChatMessage:
    """The answer as the repair reads it: a legacy ``function_call`` as ``tool_calls``."""
    try:
        message = message_of(data)
    except (TypeError, ValueError):
        return data
    legacy = message.get("function_call")
    if not message.get("tool_calls") and isinstance(legacy, dict):
        return legacy_as_tool_calls(data, message, legacy)
    return data


class Guard:
    """The proxy's decisions, independent of HTTP: :meth:`chat` takes the agent's request body
    and returns the reply to send back. The checks and repairs run on worker threads."""

    def __init__(
        self, upstream: Any, config: ProxyConfig, writer: StoreWriter | None = None
    ) -> None:
        self.upstream: Upstream = as_async(upstream)
        self.config = config
        self.writer = writer
        self._ids = itertools.count(1)
        self._prefix = uuid.uuid4().hex[:8]
        #: large answers are read and checked in worker processes (issue 47 point 6)
        self.heavy = HeavyChecks()
        #: the repairs' own worker threads (:data:`REPAIR_THREADS`)
        self._repairs: anyio.CapacityLimiter | None = None

    def count(self, decision: str) -> None:
        if self.writer is not None:
            self.writer.count(decision)

    _count = count

    def bad_request(
        self, status: int, message: str, kind: str = "invalid_request_error"
    ) -> UpstreamReply:
        """An answered, counted refusal (``guard:decisions``: ``bad_request``)."""
        self.count("bad_request")
        return error_reply(status, message, kind)

    def upstream_failed(self, exc: Exception) -> UpstreamReply:
        """The counted answer to an upstream that failed: 504 when it timed out, 502 when it
        was unreachable, broke off or sent an answer over ``max_reply_bytes``."""
        kind, status, what = UPSTREAM_FAILURES[type(exc)]
        self.count(kind)
        return error_reply(status, f"upstream {what}: {exc}", kind)

    async def chat(
        self,
        body: bytes,
        headers: Headers,
        request: Any = UNREAD,
        gone: ClientWatch | None = None,
    ) -> UpstreamReply:
        """The reply to the chat request ``body`` (``request``: the body already parsed).
        ``gone``: told when the client has left; a re-ask in flight is then ended and no
        other starts."""
        if request is UNREAD:
            try:
                request = loads_request(body)
            except ValueError as exc:
                return self.bad_request(400, f"request body is not valid JSON ({exc})")
        problem = request_error(request)
        if problem is not None:
            return self.bad_request(400, problem)
        cfg = self.config
        try:
            first = await self.upstream.chat(body, headers, cfg.upstream_timeout)
        except (UpstreamTimeout, UpstreamUnreachable, UpstreamTooLarge) as exc:
            return self.upstream_failed(exc)
        tools = tools_of(request)
        if not 200 <= first.status < 300 or not tools:
            # every 2xx is an answer (a 201 carries calls as well as a 200): only errors pass
            self.count("upstream_error" if not 200 <= first.status < 300 else "unchecked")
            return first
        messages = request.get("messages") or []
        try:
            # the check reads the answer and, in stage 3, the request's conversation: a small
            # answer to a 4 MiB conversation held the event loop 1.5 s when checked inline,
            # and stage 3's cost grows with the text (a 60 KB request dense with numbers:
            # 100-260 ms), so the project's one rule decides what runs on the loop
            size = len(first.content) + len(body)
            if checks_inline(len(body), len(first.content)):  # a few ms at most: no hop
                judged = judge(first.content, tools, messages, cfg.grounding)
            elif size <= THREAD_CHECK_BYTES:  # a few ms of the lock at most: a thread
                judged = await anyio.to_thread.run_sync(
                    judge, first.content, tools, messages, cfg.grounding
                )
            else:  # read and checked in a worker process: json holds the lock meanwhile
                judged = await self.heavy.judge(first.content, tools, messages, cfg.grounding)
            if judged.outcome != "checked":
                return self._unchecked(first, judged)
            data, verdict = judged.data, judged.verdict
            assert verdict is not None
            if verdict.unchecked is not None:  # calls over callscope's reading limit
                self.count("unchecked")
                return with_header(first, "unchecked")
            if judged.failing_choices:  # n > 1: a re-ask gives one answer, not n
                return self._unrepaired_choices(request, data, first, verdict, judged)
            if verdict.passed:
                return self._passed(request, data, first, verdict)
            if self._repairs is None:  # made inside the event loop, on first use
                self._repairs = anyio.CapacityLimiter(REPAIR_THREADS)
            return await anyio.to_thread.run_sync(
                self._decide,
                request,
                headers,
                data,
                first,
                messages,
                tools,
                verdict,
                gone,
                size,
                limiter=self._repairs,
            )
        except Exception as exc:  # noqa: BLE001 - the agent gets upstream's answer, marked
            self.count("guard_error")
            log(f"check failed, answer passed on unchecked: {type(exc).__name__}: {exc}")
            return with_header(first, "error")

    def _unchecked(self, first: UpstreamReply, judged: Judged) -> UpstreamReply:
        """The counted reply to an answer :func:`judge` could not check. One it cannot read
        (too deep, or not JSON it can read) is a 502 ``upstream_invalid``: its calls, if
        any, would reach the client unchecked (a call to a tool the request does not name,
        in an answer with a 5,000-digit number that Node's ``JSON.parse`` reads). One with
        nothing to check (no first choice's message, a message without calls) passes."""
        outcome = judged.outcome
        if outcome in ("too_deep", "not_json"):
            self.count("upstream_invalid")
            if outcome == "too_deep":
                message = "upstream answer is nested too deeply to read"
            else:
                message = (
                    "upstream answer is not JSON the proxy can read, so its tool calls "
                    f"cannot be checked ({judged.reason})"
                )
            return error_reply(502, message, "upstream_invalid")
        self.count("unchecked")
        return first if outcome == "unreadable" else with_header(first, "unchecked")

    def _decide(
        self,
        request: ChatRequest,
        headers: Headers,
        data: ChatCompletion,
        first: UpstreamReply,
        messages: list[Any],
        tools: Any,
        verdict: TurnVerdict,
        gone: ClientWatch | None = None,
        size: int = 0,
    ) -> UpstreamReply:
        """On a worker thread: repair an answer whose ``verdict`` failed (re-asks go to
        upstream through the event loop; none starts once the client is ``gone``). ``size``:
        the first answer's and the request's bytes; past ``THREAD_CHECK_BYTES`` each re-ask's
        answer is checked in a worker process, as the first was (the check reads the whole
        conversation, and its scans hold the interpreter lock)."""
        cfg = self.config
        deadline = time.monotonic() + cfg.repair_timeout

        def checked(reply: Any, tools_: Any, base: Any, grounding: Any) -> TurnVerdict:
            if size <= THREAD_CHECK_BYTES:
                return check(reply, tools_, base, grounding)
            elsewhere: TurnVerdict = anyio.from_thread.run(
                self.heavy.run, check, reply, tools_, base, grounding
            )
            return elsewhere

        def ask(convo: list[ChatMessage], _tools: Any) -> ChatCompletion:
            if gone is not None and gone.is_set():
                raise ClientGone("the client went away: nothing more is asked")
            left = deadline - time.monotonic()
            if left <= 0:
                raise UpstreamTimeout("repair time spent")
            reply = anyio.from_thread.run(
                self._reask,
                json_bytes({**request, "messages": convo}),
                headers,
                min(cfg.upstream_timeout, left),
                gone,
            )
            if not 200 <= reply.status < 300:
                raise RuntimeError(f"upstream answered {reply.status}")
            if len(reply.content) > THREAD_CHECK_BYTES:  # decoded in a worker, as the first
                return anyio.from_thread.run(self.heavy.run, loads_answer, reply.content)
            return loads_answer(reply.content)

        result = repair(
            ask,
            messages,
            tools,
            k=cfg.attempts,
            grounding=cfg.grounding,
            first=_checked_form(data),
            first_verdict=verdict,  # checked already (in a worker process when large)
            deadline=deadline,
            checker=checked,
        )
        decision = "repaired" if result.passed else "unrepaired"
        request_id, record = self._record(request, result, decision)
        extra = {
            "guard": decision,
            "attempts": len(result.attempts),
            "best_attempt": result.best_attempt,
            "stage": result.verdict.stage,
            "reasons": [r for c in result.verdict.calls for r in c.reasons],
            "correction": result.verdict.correction,
            "calls": call_list(result.verdict),
            "first_stages": [c.stage for c in verdict.calls],
            "request_id": request_id,
        }
        content = None
        if result.best_attempt == 1 and EXTRA_FIELD not in data:
            # the first answer kept: its own bytes with the extra field appended, never
            # encoded again (a 60 MB answer costs 0.2 s of GIL to encode: issue 47 point 6)
            content = _appended(first.content, extra)
        if content is None:
            best = dict(result.response)
            best[EXTRA_FIELD] = extra
            content = json_bytes(best)
        headers_out = [(k, v) for k, v in first.headers if k.lower() != "content-type"]
        headers_out.append(("content-type", "application/json"))
        reply = UpstreamReply(200, headers_out, content, record)
        return with_header(reply, decision, result.verdict)

    async def _reask(
        self, body: bytes, headers: Headers, timeout: float, gone: ClientWatch | None
    ) -> UpstreamReply:
        """A re-ask, in the event loop, ended at once (:class:`ClientGone`) when the client
        leaves while it waits on upstream."""
        if gone is None:
            return await self.upstream.chat(body, headers, timeout)
        with gone.holding():
            try:
                return await self.upstream.chat(body, headers, timeout)
            except asyncio.CancelledError:
                if not gone.is_set():
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                raise ClientGone("the client went away during a re-ask") from None

    def _passed(
        self, request: ChatRequest, data: Any, first: UpstreamReply, verdict: TurnVerdict
    ) -> UpstreamReply:
        _, record = self._record(request, _single(data, verdict), "passed")
        reply = UpstreamReply(first.status, first.headers, first.content, record)
        return with_header(reply, "passed", verdict)

    def _unrepaired_choices(
        self,
        request: ChatRequest,
        data: Any,
        first: UpstreamReply,
        verdict: TurnVerdict,
        judged: Judged,
    ) -> UpstreamReply:
        """An answer of several choices (``n > 1``) of which one fails: passed on as it came,
        ``unrepaired``, the failing choices' positions in the note header (a re-ask gives one
        answer, and repairing the first would drop the others)."""
        _, record = self._record(request, _single(data, verdict), "unrepaired")
        reply = with_header(UpstreamReply(first.status, first.headers, first.content, record),
                            "unrepaired", verdict)  # fmt: skip
        failing = ",".join(str(i) for i in judged.failing_choices)
        reply.headers.append((NOTE_HEADER, f"failing-choices={failing}"))
        return reply

    def _record(
        self, request: ChatRequest, result: RepairResult, decision: str
    ) -> tuple[str, Callable[[], None] | None]:
        """The decision's request id, and what records it: run once the reply is sent
        (``UpstreamReply.on_sent``), so that a reply that never reached the client is never
        recorded as given."""
        request_id = f"{self._prefix}-{next(self._ids):06d}"
        writer = self.writer
        if writer is None:
            return request_id, None
        model = str(request.get("model") or "unknown")[:200]

        def record() -> None:
            writer.submit(model, request_id, result, self.config.grounding, {"decision": decision})
            writer.count(decision)

        return request_id, record


def _appended(content: bytes, extra: JsonObject) -> bytes | None:
    """The JSON object ``content`` (already read: an object without :data:`EXTRA_FIELD`)
    with ``"callscope": extra`` as its last member, or ``None`` when its text does not end
    the object plainly (then it is encoded again). One copy of ``content``: a 60 MB answer
    copied four times held the interpreter lock for 0.2 s (issue 47 point 6)."""
    end = content.rstrip()  # ``content`` itself unless whitespace follows the object
    if not end.endswith(b"}") or json.detect_encoding(content[:4]) != "utf-8":
        return None
    cut = len(end) - 1
    for _ in range(_MAX_CLOSING_SPACE):  # the space before the closing brace
        if not (cut and end[cut - 1] in b" \t\r\n"):
            break
        cut -= 1
    else:
        return None
    separator = b"" if end[cut - 1 : cut] == b"{" else b", "
    field = f'"{EXTRA_FIELD}": '.encode() + json_bytes(extra)
    return b"".join((memoryview(end)[:cut], separator, field, b"}"))


def _single(data: ChatCompletion, verdict: TurnVerdict) -> RepairResult:
    """The record of a response that passed as it came (nothing re-asked)."""
    return RepairResult(data, verdict, 1, "passed", [RepairAttempt(1, [], data, verdict)])


def call_list(verdict: TurnVerdict) -> list[CallRow]:
    """Each call of a checked answer by position: ``{"position", "name", "stage",
    "reasons"}`` (the ``calls`` of the extra field)."""
    return [
        {"position": c.index, "name": c.name, "stage": c.stage, "reasons": list(c.reasons)}
        for c in verdict.calls
    ]


def calls_header(verdict: TurnVerdict) -> str:
    """The :data:`CALLS_HEADER` value: each call's stage by position, ``"0,3"``."""
    return ",".join(str(c.stage) for c in verdict.calls)


def with_header(
    reply: UpstreamReply, decision: str, verdict: TurnVerdict | None = None
) -> UpstreamReply:
    headers = [*reply.headers, (GUARD_HEADER, decision)]
    if verdict is not None and verdict.calls:
        headers.append((CALLS_HEADER, calls_header(verdict)))
    if verdict is not None and verdict.object_arguments:
        positions = ",".join(str(i) for i in verdict.object_arguments)
        headers.append((NOTE_HEADER, f"arguments-not-a-string={positions}"))
    return UpstreamReply(reply.status, headers, reply.content, reply.on_sent)
