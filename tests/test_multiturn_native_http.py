"""Multi-turn native function calling over HTTP: ``-m openai:<model> --base-url URL --style
native`` against a real local server speaking the OpenAI wire format (tests/fakeserver.py).
(The reply's own call ids are not kept by the HTTP reply parser; callscope's ids pair each
``tool`` message with its call, which is what the protocol asks.)

The script plays BFCL's ``multi_turn_base_0`` (4 turns; gold 3, 2, 1 and 4 calls): per turn
one assistant message carrying *all* that turn's gold calls as parallel ``tool_calls``, then a
text reply that ends the turn; 8 requests in all. What must be on the wire is worked out from
the OpenAI protocol: BFCL's tools in ``tools`` as ``{"type": "function", "function": doc}``,
each call answered by one ``tool`` message with the server's ``tool_call_id``, in call order.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval")

from fakeserver import FakeServer, Step, openai_reply  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from callscope.benchmarks.bfcl.multi_turn import gold_calls  # noqa: E402
from callscope.models.registry import load_model  # noqa: E402
from callscope.runs.calibrate import calibrate_model, select_cases  # noqa: E402
from callscope.store.run_store import RunStore  # noqa: E402

CASE = "multi_turn_base_0"


def _tool_call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _script(case) -> list[Step]:
    steps = []
    for t, calls in enumerate(gold_calls(case)):
        tcs = [_tool_call(f"srv_{t}_{i}", c.name, c.arguments) for i, c in enumerate(calls)]
        steps.append(Step(body=openai_reply(None, tool_calls=tcs)))
        steps.append(Step(body=openai_reply("Done.")))
    return steps


@pytest.fixture(scope="module")
def case():
    (only,) = [c for c in select_cases(["base"], 1) if c.id == CASE]
    return only


def test_native_multi_turn_sends_tools_and_returns_tool_messages(tmp_path, case) -> None:
    with FakeServer() as srv:
        srv.push(*_script(case))
        model = load_model("openai:served", base_url=srv.url + "/v1")
        done = calibrate_model(model, tmp_path / "run", [case], style="native", show_progress=False)
        requests = [r["json"] for r in srv.requests]
    assert len(requests) == 8
    assert all(r["path"] == "/v1/chat/completions" for r in srv.requests)
    # BFCL's tools, in the tools field, on every request (base: no tool is held out)
    names = sorted(f["name"] for f in case.functions_at(0))
    for body in requests:
        assert sorted(t["function"]["name"] for t in body["tools"]) == names
        assert all(t["type"] == "function" for t in body["tools"])
        assert not any(m["role"] == "system" for m in body["messages"])  # native: no BFCL prompt
    # request 2 (after turn 0's parallel calls): assistant with 3 tool_calls, then 3 tool msgs
    msgs = requests[1]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "tool"]
    ids = [tc["id"] for tc in msgs[1]["tool_calls"]]
    assert len(set(ids)) == 3 and all(isinstance(i, str) and i for i in ids)
    assert [tc["function"]["name"] for tc in msgs[1]["tool_calls"]] == ["cd", "mkdir", "mv"]
    assert [json.loads(tc["function"]["arguments"]) for tc in msgs[1]["tool_calls"]] == [
        {"folder": "document"},
        {"dir_name": "temp"},
        {"source": "final_report.pdf", "destination": "temp"},
    ]
    # each result answers its call: same id, in call order (the protocol's pairing)
    assert [m["tool_call_id"] for m in msgs[2:]] == ids
    assert all(isinstance(m["content"], str) and m["content"] for m in msgs[2:])
    # the last request carries the whole conversation: 4 user turns, 10 tool results
    last = requests[-1]["messages"]
    assert sum(m["role"] == "user" for m in last) == 4
    assert sum(m["role"] == "tool" for m in last) == 3 + 2 + 1 + 4
    # the gold calls, executed in BFCL's simulator, pass its checker: GAR = Acc = 1
    (row,) = done.result.rows()
    assert (row["n"], row["gar_case"], row["acc"]) == (1, 1.0, 1.0)
    store = RunStore(tmp_path / "run")
    (conv,) = store.conversations("openai:served")
    store.close()
    steps = conv["trajectory"]["turns"][0]["steps"]
    assert [c["name"] for c in steps[0]["calls"]] == ["cd", "mkdir", "mv"]
    assert all(r["accepted"] for r in steps[0]["results"])


def test_prompt_mode_stays_available_over_http(tmp_path, case) -> None:
    """``--style prompt``: no ``tools`` field; BFCL's system prompt; results as a user text."""
    with FakeServer() as srv:
        srv.push(
            Step(body=openai_reply("[cd(folder='document')]")),
            Step(body=openai_reply("Done.")),
        )
        model = load_model("openai:served", base_url=srv.url + "/v1")
        calibrate_model(model, tmp_path / "run", [case], style="prompt", show_progress=False)
        requests = [r["json"] for r in srv.requests]
    assert "tools" not in requests[0]
    assert requests[0]["messages"][0]["role"] == "system"
    assert "[func_name1(params_name1=" in requests[0]["messages"][0]["content"]
    after = requests[1]["messages"]
    assert after[-1]["role"] == "user" and "'role': 'tool'" in after[-1]["content"]


def test_calibrate_cli_native_over_http(tmp_path, case) -> None:
    from callscope.cli import app

    with FakeServer() as srv:
        srv.push(*_script(case))
        res = CliRunner().invoke(
            app,
            [
                "calibrate",
                *("-m", "openai:served", "--base-url", srv.url + "/v1", "--style", "native"),
                *("--categories", "base", "--n", "1", "-o", str(tmp_path / "run"), "--quiet"),
                "--no-cache",
            ],
        )
        n_requests = len(srv.requests)
    assert res.exit_code == 0, res.output
    assert n_requests == 8
    data = json.loads((tmp_path / "run" / "calibration-baseline.json").read_text())
    (row,) = data["rows"]
    assert (row["gar_case"], row["acc"]) == (1.0, 1.0)


def test_native_multi_turn_over_ollama_conventions(tmp_path, case) -> None:
    """Ollama's ``/api/chat``: calls come back with object arguments and no ids; the results
    go back as ``tool`` messages (Ollama pairs them by order and ``tool_name``)."""
    from fakeserver import ollama_reply

    steps = []
    for calls in gold_calls(case):
        tcs = [{"function": {"name": c.name, "arguments": c.arguments}} for c in calls]
        steps += [Step(body=ollama_reply("", tool_calls=tcs)), Step(body=ollama_reply("Done."))]
    with FakeServer() as srv:
        srv.push(*steps)
        model = load_model("ollama:served", base_url=srv.url)
        done = calibrate_model(model, tmp_path / "run", [case], style="native", show_progress=False)
        requests = [r["json"] for r in srv.requests]
    assert len(requests) == 8 and all(r["path"] == "/api/chat" for r in srv.requests)
    assert sorted(t["function"]["name"] for t in requests[0]["tools"]) == sorted(
        f["name"] for f in case.functions_at(0)
    )
    msgs = requests[1]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "tool"]
    assert [tc["function"]["name"] for tc in msgs[1]["tool_calls"]] == ["cd", "mkdir", "mv"]
    (row,) = done.result.rows()
    assert (row["gar_case"], row["acc"]) == (1.0, 1.0)
