"""Issue 28 item 8: the guard, the repair proxy and chat logs over answers of 0..n calls.

Every call of an answer is checked; a failing call among passing ones is repaired with the
passing ones kept; the verdict lists every call by position; a turn without a call attempt
(prose) is not a failure. Tested through the real entry points: ``callscope serve`` (a
subprocess) driven by the real ``openai`` client against a scripted upstream, and
``callscope score --from-chat``.

The stages are worked out by hand from the cascade's rules (SAAG paper, section 2): "Paris"
and "London" occur in the user's text (stage 3 passes), "Berlin" does not (stage 3 fails:
the value is not stated). "Berlin" names another city than the ones stated, so it is a
*hard* drift whatever the text (``saag.grounding.soft_drift``, issue 40: against "What's the
weather in Paris and in London?" the paper's PartialRatio alone, 66.7 on the window "her
in", called it soft); the gated repair corrects it. A slip in a stated value, "Londom", is a
*soft* drift, which the gated repair's gate leaves alone (the call still fails stage 3 and
``score --from-chat`` reports it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from proxyserve import callscope_serve
from typer.testing import CliRunner

from callscope.cli import app
from callscope.guard import check, repair
from callscope.guard.proxy import CALLS_HEADER, EXTRA_FIELD, GUARD_HEADER
from callscope.saag.messages import HARD, KEEP_NAME, NO_NAME, call_label, keep_passed
from callscope.store.run_store import RunStore
from callscope.types import ToolCall

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
#: the query whose invented "Berlin" is a hard drift (module docstring)
QUERY = "Weather for Paris and London, please."
#: the issue-28 query ("Measured"), where the paper's boundary alone made "Berlin" soft
ISSUE_QUERY = "What's the weather in Paris and in London?"
PARIS = ("get_weather", {"city": "Paris"})
LONDON = ("get_weather", {"city": "London"})
BERLIN = ("get_weather", {"city": "Berlin"})
#: a slip in a stated value: a soft drift
LONDN = (
    "get_weather",
    {"city": "Londom"},
)  # a slip of London (GeoNames lists "Londn" as a name of London)


def msg(*calls: tuple[str, dict[str, Any]], content: str | None = None) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)
        ],
    }


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


# --------------------------------------------------------------------------- check


def test_every_call_of_an_answer_is_checked_and_listed_by_position() -> None:
    v = check(msg(PARIS, BERLIN), TOOLS, user(QUERY))
    assert [(c.index, c.id, c.name, c.stage) for c in v.calls] == [
        (0, "c0", "get_weather", 0),
        (1, "c1", "get_weather", 3),
    ]
    assert (v.passed, v.stage, v.worst.index, v.no_call) == (False, 3, 1, None)
    assert v.calls[1].reasons == ("hard: city='Berlin' has no grounding in the user's text",)
    d = v.to_dict()
    assert (d["stage"], d["answer"], [c["stage"] for c in d["calls"]]) == (3, "calls", [0, 3])
    # the issue-28 query: the same call fails stage 3, a hard drift there too (issue 40)
    issue = check(msg(PARIS, BERLIN), TOOLS, user(ISSUE_QUERY))
    assert ([c.stage for c in issue.calls], issue.calls[1].diagnosis.hard) == ([0, 3], ["city"])
    slip = check(msg(PARIS, LONDN), TOOLS, user(ISSUE_QUERY))
    assert ([c.stage for c in slip.calls], slip.calls[1].diagnosis.soft) == ([0, 3], ["city"])
    assert check(msg(PARIS, LONDON), TOOLS, user(QUERY)).passed


def test_a_repeated_call_is_flagged_without_failing() -> None:
    v = check(msg(PARIS, LONDON, PARIS), TOOLS, user(QUERY))
    assert (v.passed, v.repeated, v.to_dict()["repeated"]) == (True, (2,), [2])


def test_prose_is_an_abstention_and_a_broken_call_attempt_is_a_stage_1_failure() -> None:
    joke = check("Why did the cat sit on the laptop? To keep an eye on the mouse.", TOOLS, [])
    assert (joke.checked, joke.passed, joke.stage, joke.no_call) == (False, True, 0, "abstained")
    # prose the Python-call reader refuses ("not Python call syntax") is still prose
    aside = check("It is sunny (25C) in Paris", TOOLS, user(QUERY))
    assert (aside.checked, aside.passed, aside.no_call) == (False, True, "abstained")
    assert check("", TOOLS, user(QUERY)).no_call == "empty"
    # a JSON call cut off mid-arguments: the classifier calls it OTHER, but it is a call
    # attempt, so it fails stage 1 with the parser's reason and the repair corrects it
    cut = check('{"name": "get_weather", "arguments": {"city": ', TOOLS, user(QUERY))
    assert (cut.action, cut.checked, cut.stage, cut.no_call) == ("OTHER", True, 1, "broken")
    assert cut.parse_error.startswith("the JSON call starting at character 0 is cut off")
    assert cut.calls[0].reasons == (f"no_name: the call could not be read: {cut.parse_error}",)
    # a registered function's call in Python syntax, cut off: a broken attempt too
    cut_py = check('get_weather(city="Paris"', TOOLS, user(QUERY))
    assert (cut_py.checked, cut_py.stage, cut_py.no_call) == (True, 1, "broken")
    # an unregistered name opening with a bracket reads as prose
    assert check("Sunny (25C) all day", TOOLS, user(QUERY)).no_call == "abstained"


@pytest.mark.parametrize(
    "answer",
    ["42", "3.5", "[2, 3, 5, 7]", '{"answer": 42}', '{"city": "Paris"}', "2+2=4", "👍",
     '```json\n{"total": 12.5}\n```', '{\n  "membership_status": "silver",\n  "cabin": "economy"\n}'],
)  # fmt: skip
def test_an_answer_written_as_data_is_not_a_call_attempt(answer: str) -> None:
    """A live agent's answer in data (a number, a list, a JSON object with no call key,
    symbols) passes as an answer: the guard does not block or re-ask it. Before, every text
    the parser did not read as prose was a broken call (the last is a τ²-bench agent's real
    reply, blocked then)."""
    turn = check(answer, TOOLS, user(QUERY))
    assert (turn.checked, turn.passed, turn.no_call) == (False, True, "abstained")


@pytest.mark.parametrize(
    "attempt",
    ['{"get_weather": {"city": "Pa', '{"get_wea', '<tool_call>{"name": "get_weather"',
     'Calling it: {"name": "get_weather", "arguments": "city=Paris"}',
     '[{"name": "get_weather", "arguments": {"city": 1}'],
)  # fmt: skip
def test_a_call_written_in_text_and_cut_off_is_still_a_broken_attempt(attempt: str) -> None:
    """What is written as a call (BFCL's ``{name: arguments}`` with a registered name, even
    cut inside the name; a call tag; a call object after prose or in a list) stays a broken
    call attempt: stage 1, corrected by the repair."""
    turn = check(attempt, TOOLS, user(QUERY))
    assert (turn.checked, turn.stage, turn.no_call) == (True, 1, "broken")


# --------------------------------------------------------------------------- repair


class Scripted:
    """A chat function answering from a script, recording what it was sent."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.sent: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> Any:
        self.sent.append(messages)
        return self.answers[min(len(self.sent) - 1, len(self.answers) - 1)]


#: the gated correction of the answer (Paris, Berlin) to QUERY: the failing second call
#: named by position and name, its name kept, then the passing first call kept as it is
CORRECTION = (
    f"Call 2 (get_weather): {HARD.format(params='city')} "
    f"{KEEP_NAME.format(name='get_weather')} "
    f"{keep_passed([call_label(0, ToolCall(*PARIS))], as_is=True)}"
)


def test_the_failing_call_is_repaired_and_the_passing_one_kept() -> None:
    chat = Scripted(msg(PARIS, BERLIN), msg(PARIS, LONDON))
    result = repair(chat, user(QUERY), TOOLS)
    assert (result.passed, result.repaired, result.best_attempt, result.stopped) == (
        True,
        True,
        2,
        "passed",
    )
    assert result.response == msg(PARIS, LONDON)
    assert CORRECTION.startswith("Call 2 (get_weather): The values for city have no grounding")
    assert CORRECTION.endswith("Call 1 (get_weather) passed: keep it exactly as it is.")
    assert [a.feedback for a in result.attempts] == [CORRECTION, None]
    # the re-ask: the original turn, the model's two calls as JSON text (one a line), the
    # correction
    re_ask = chat.sent[1]
    assert re_ask[0] == user(QUERY)[0]
    assert [json.loads(line) for line in re_ask[1]["content"].splitlines()] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_weather", "arguments": {"city": "Berlin"}},
    ]
    assert re_ask[2] == {"role": "user", "content": CORRECTION}


def test_the_best_whole_answer_is_kept() -> None:
    # the revision fixes call 2 but breaks call 1 (a name not in the tools): as a whole it
    # reaches stage 1 only, below the first answer's stage 3, so the gated repair stops on
    # the regression and answers with the first answer
    broke_first = msg(("get_wether", {"city": "Paris"}), LONDON)
    result = repair(
        Scripted(msg(PARIS, BERLIN), broke_first, msg(PARIS, LONDON)), user(QUERY), TOOLS
    )
    assert (result.stopped, result.best_attempt, len(result.attempts)) == ("regression", 1, 2)
    assert result.response == msg(PARIS, BERLIN)
    assert [[c.stage for c in a.verdict.calls] for a in result.attempts] == [[0, 3], [1, 0]]


def test_a_soft_drift_among_passing_calls_is_left_alone_by_the_gated_repair() -> None:
    # "Londom" is a soft drift (module docstring), not confident enough for the gated
    # correction, so nothing is re-asked and the answer is returned as it came
    chat = Scripted(msg(PARIS, LONDN), msg(PARIS, LONDON))
    result = repair(chat, user(ISSUE_QUERY), TOOLS)
    assert (result.stopped, result.best_attempt, len(chat.sent), result.passed) == (
        "gate",
        1,
        1,
        False,
    )
    # the paper's structured correction re-asks on it
    paper = repair(
        Scripted(msg(PARIS, LONDN), msg(PARIS, LONDON)), user(ISSUE_QUERY), TOOLS, settings=None
    )
    assert (paper.stopped, paper.best_attempt) == ("passed", 2)
    assert paper.attempts[0].feedback.startswith("Call 2 (get_weather): The values for city are")


def test_prose_is_not_repaired_and_a_prose_re_ask_is_no_answer() -> None:
    prose = repair(Scripted("Which city do you mean?"), user(QUERY), TOOLS)
    assert (prose.stopped, prose.passed, len(prose.attempts)) == ("no_call", True, 1)
    # after a call attempt, a re-ask answered in prose does not pass: it ranks below any
    # call, so the first answer stays the best; the paper's "no name" correction follows
    chat = Scripted(msg(PARIS, BERLIN), "Sorry, which cities?", msg(PARIS, LONDON))
    result = repair(chat, user(QUERY), TOOLS, settings=None)
    assert [a.verdict.checked for a in result.attempts] == [True, False, True]
    assert result.attempts[1].feedback == NO_NAME
    assert (result.stopped, result.best_attempt) == ("passed", 3)


# --------------------------------------------------------------------------- callscope serve


def _completion(calls: list[tuple[str, dict[str, Any]]] | str, n: int) -> dict[str, Any]:
    message = {"role": "assistant", "content": calls} if isinstance(calls, str) else msg(*calls)
    return {
        "id": f"chatcmpl-scripted-{n}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _scripted_answer(request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]] | str:
    """By scenario (the request's ``model``) and whether a correction was already sent."""
    re_asked = any(m["role"] == "assistant" for m in request["messages"])
    scenario = request["model"]
    if scenario == "prose":
        return "Which cities do you mean?"
    if scenario == "both" or re_asked:
        return [PARIS, LONDON]
    return [PARIS, BERLIN]  # "invented"


class ScriptedUpstream(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def of(self, scenario: str) -> list[tuple[dict[str, Any], bytes]]:
        with self.lock:
            return [
                (r, b)
                for r, b in zip(self.requests, self.bodies, strict=True)
                if r["model"] == scenario
            ]


class _ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedUpstream

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._send(b'{"object": "list", "data": [{"id": "scripted", "object": "model"}]}')

    def do_POST(self) -> None:  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            n = len(self.server.requests) + 1
            body = json.dumps(_completion(_scripted_answer(request), n)).encode()
            self.server.requests.append(request)
            self.server.bodies.append(body)
        self._send(body)


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    server = ScriptedUpstream()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _ask(base: str, scenario: str) -> Any:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=base, api_key="test-key", max_retries=0, timeout=20)
    return client.chat.completions.with_raw_response.create(
        model=scenario, messages=user(QUERY), tools=TOOLS
    )


def _cities(completion: Any) -> list[str]:
    calls = completion.choices[0].message.tool_calls
    return [json.loads(tc.function.arguments)["city"] for tc in calls]


def test_callscope_serve_repairs_the_failing_call_and_keeps_the_passing_one(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    out = tmp_path / "proxy-run"
    with callscope_serve(upstream.url, out) as served:
        base = served.url
        both = _ask(base, "both")
        invented = _ask(base, "invented")
        prose = _ask(base, "prose")
    # two passing calls: upstream's body byte for byte, each call's stage in the header
    ((_, sent),) = upstream.of("both")
    assert both.http_response.content == sent
    assert (both.headers[GUARD_HEADER], both.headers[CALLS_HEADER]) == ("passed", "0,0")
    # Paris passes, Berlin fails stage 3: the second call is corrected, the first kept
    completion = invented.parse()
    assert (invented.headers[GUARD_HEADER], invented.headers[CALLS_HEADER]) == ("repaired", "0,0")
    assert _cities(completion) == ["Paris", "London"]
    extra = completion.model_extra[EXTRA_FIELD]
    assert (extra["attempts"], extra["best_attempt"], extra["stage"], extra["first_stages"]) == (
        2,
        2,
        0,
        [0, 3],
    )
    assert extra["calls"] == [
        {"position": 0, "name": "get_weather", "stage": 0, "reasons": []},
        {"position": 1, "name": "get_weather", "stage": 0, "reasons": []},
    ]
    (first, _), (second, _) = upstream.of("invented")
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["messages"][-1] == {"role": "user", "content": CORRECTION}
    # prose is not checked: it passes through
    assert prose.headers[GUARD_HEADER] == "unchecked" and CALLS_HEADER not in prose.headers
    assert prose.parse().choices[0].message.content == "Which cities do you mean?"
    # the run store: every call's verdict of every attempt, by position
    store = RunStore(out)
    try:
        outcomes = {o["model"]: o for o in store.outcomes()}
        attempts = store.attempts("invented", outcomes["invented"]["case_id"], "gated")
        decisions = store.get_meta("guard:decisions")
    finally:
        store.close()
    assert sorted(outcomes) == ["both", "invented"]
    assert decisions == {"passed": 1, "repaired": 1, "unchecked": 1}
    assert [a["row"]["stages"] for a in attempts] == [[0, 3], [0, 0]]
    assert [a["row"]["stage"] for a in attempts] == [3, 0]
    assert [c["stage"] for c in attempts[0]["row"]["calls"]] == [0, 3]
    assert [d["stage"] for d in attempts[0]["diagnosis"]["answer_calls"]] == [0, 3]
    assert attempts[0]["diagnosis"]["hard"] == ["city"]  # the deciding call: the second
    assert attempts[0]["feedback"] == CORRECTION


# --------------------------------------------------------------------------- score --from-chat


def test_score_from_chat_lists_each_call_of_a_two_call_turn(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    conversation = {
        "id": "weather",
        "tools": TOOLS,
        "messages": [
            *user(ISSUE_QUERY),
            msg(PARIS, LONDN),
            {"role": "tool", "tool_call_id": "c0", "content": '{"temp": 18}'},
            {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 12}'},
            {"role": "assistant", "content": "Paris is at 18 degrees, London at 12."},
        ],
    }
    log.write_text(json.dumps(conversation) + "\n", encoding="utf-8")
    rows_path = tmp_path / "rows.jsonl"
    res = CliRunner().invoke(
        app,
        ["score", "--from-chat", str(log), "-o", str(rows_path), "--report", str(tmp_path / "rep")],
    )
    assert res.exit_code == 0, res.output
    assert "1 assistant turns with tool calls (1 with several)" in res.output
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    keys = ("turn", "answer", "answer_stage", "call", "name", "stage")
    assert [tuple(r.get(k) for k in keys) for r in rows] == [
        (1, "calls", 3, 0, "get_weather", 0),
        (1, "calls", 3, 1, "get_weather", 3),
        (4, "abstained", None, None, None, None),
    ]
    assert rows[0]["correction"] is None and rows[0]["reasons"] == []
    assert rows[1]["reasons"] == ["soft: city='Londom' is only loosely related to the user's text"]
    assert [r.get("arguments") for r in rows[:2]] == [{"city": "Paris"}, {"city": "Londom"}]
    store = RunStore(tmp_path / "rep")
    try:
        (outcome,) = store.outcomes()
        (attempt,) = store.attempts(outcome["model"], outcome["case_id"], "gated")
    finally:
        store.close()
    assert (outcome["case_id"], outcome["final"]["stage"]) == ("weather#1", 3)
    assert [c["stage"] for c in attempt["row"]["calls"]] == [0, 3]
    assert attempt["row"]["fix"].startswith("Call 2 (get_weather): The values for city are loosely")
    assert [d["stage"] for d in attempt["diagnosis"]["answer_calls"]] == [0, 3]


@pytest.mark.parametrize(
    "prose",
    [None, "", "Would you like me to check Paris?", "I can't help with that.", "Done!" * 20_000],
)
def test_a_native_call_is_a_tool_call_whatever_the_prose_beside_it(prose: str | None) -> None:
    """The guard no longer runs the action classifier's cue scan over the prose beside native
    calls (70 ms on the event loop for 50 KB); its action is still the classifier's own."""
    from callscope.calibration.classify import classify_emission  # lazy: only this test

    calls = [
        {"id": "c0", "type": "function",
         "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}},
    ]  # fmt: skip
    message = {"role": "assistant", "content": prose, "tool_calls": calls}
    verdict = check({"choices": [{"message": message}]}, TOOLS, user(ISSUE_QUERY))
    assert verdict.action == classify_emission(message) == "TOOL_CALL"
    assert [c.stage for c in verdict.calls] == [0]


def test_calls_over_the_reading_limit_pass_unchecked() -> None:
    """Native calls larger than callscope reads (200,000 characters) are not checked and not
    blamed on the model: the turn passes, marked ``unchecked`` (it was a stage-1 failure,
    "could not be read", which the repair corrected)."""
    arguments = json.dumps({"city": "Paris " * 40_000})
    answer = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    ]}  # fmt: skip
    turn = check(answer, TOOLS, user(QUERY))
    assert (turn.checked, turn.passed, turn.native) == (False, True, True)
    assert "larger than callscope reads (200,000 characters)" in turn.unchecked
    assert turn.to_dict()["unchecked"] == turn.unchecked
    small = check({**answer, "tool_calls": [{**answer["tool_calls"][0], "function": {
        "name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]}, TOOLS, user(QUERY))  # fmt: skip
    assert (small.checked, small.passed, small.unchecked) == (True, True, None)
