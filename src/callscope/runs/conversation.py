"""Drive one multi-turn conversation the way BFCL's inference loop does, on any benchmark's case
and environment (:class:`~callscope.benchmarks.protocol.MultiTurnCase`,
:class:`~callscope.benchmarks.protocol.Environment`; the benchmark is passed in by the caller,
the registry's default one when none is).

Structure (``bfcl_eval.model_handler.base_handler.inference_multi_turn_FC`` / ``_prompting``):

* for each turn, the turn's user messages are appended; at a miss_func re-injection turn ``k``
  (whose data turn is ``[]``) the held-out tools come back and the user message is BFCL's
  :data:`REINJECT_MESSAGE` (native mode: the tools list grows; prompt mode: the message is
  ``"{functions}\\n" + REINJECT_MESSAGE`` with the added docs, the system prompt is unchanged);
* within a turn the model is queried repeatedly: an answer with no parseable call ends the
  turn; otherwise the calls are executed (in the benchmark's environment of the case) and
  the results appended (native: one ``tool`` message per call with ``tool_call_id``/``name``;
  prompt: one ``user`` message holding ``repr`` of ``[{"role": "tool", "name": <call>,
  "content": <result>}]``, as BFCL's ``format_execution_results_prompting``);
* after more than ``max_steps`` executed steps in one turn the case is force-quit (BFCL:
  ``count > MAXIMUM_STEP_LIMIT`` with 20): that turn is kept and no further turn is run, so
  the grader reports force-termination unless it was the last turn (as in BFCL). A
  :class:`~callscope.errors.ModelError` ends the case with the error recorded (the grader
  fails it as BFCL fails an inference error).

Parsing (``parse_mode``): ``"bfcl"`` mirrors BFCL: native mode reads only the native tool
calls; prompt mode strips backticks/newlines/spaces, wraps the text in ``[...]`` when needed
and accepts it only if the whole text is a Python call list with literal arguments.
``"lenient"`` uses :func:`callscope.parse.parse_output` (native calls first, then any call
syntax found in the text).

Every assistant emission is recorded (:class:`StepRecord`: raw text and native tool calls,
the parsed calls, the execution results, the tools available), so that emission classifiers
can read them per turn and step; :meth:`Trajectory.to_dict`/:meth:`Trajectory.from_dict`
round-trip through JSON.

Probes (``probe=``, a :class:`~callscope.calibration.probes.ProbeConfig`; see
:mod:`callscope.calibration.probes` for the rules): with none the run is exactly BFCL's loop.

* SRI (halt seam): when a turn ends without any parseable call in it, the probe may retry
  once per turn: the no-call message is dropped from the conversation (history
  editing; the step stays recorded) and the retry text is sent as a user message (appended to
  the last message when that is already a user message); the turn then goes on as usual.
* CRI (call seam): before an emission's calls execute, the probe may retract the emission: it
  is recorded with ``retracted=True`` and no result, never reaches the simulator and never
  enters the conversation. ``retry`` adds the instruction as a user message and re-queries;
  ``bypass`` appends the fixed abstention as an assistant message, recorded as a step with
  ``placeholder=True`` (not a model emission), and ends the turn.
* Retracted and placeholder steps do not count towards ``max_steps``. Every probe decision is
  in :attr:`Trajectory.events`.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from callscope.benchmarks.protocol import (
    Environment,
    MultiTurnBenchmark,
    MultiTurnCase,
    benchmark_or_default,
)
from callscope.calibration.probes import (
    BYPASS_ABSTENTION,
    CRI_RETRY_INSTRUCTION,
    ProbeConfig,
    ProbeSession,
    observed_text,
    request_text,
    user_text,
)
from callscope.core.jsonl import dumps_safe
from callscope.errors import ModelError
from callscope.models.base import ChatModel, Decoding, RequestContext
from callscope.parse import parse_native, parse_output, parse_python_calls
from callscope.parse.text import EMPTY_OUTPUT
from callscope.records import DEFAULT_MAX_STEPS, ExecResult, StepRecord, Trajectory, TurnRecord
from callscope.types import ModelReply, ParseResult, Style

ParseMode = Literal["bfcl", "lenient"]

#: ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``
REINJECT_MESSAGE = "I have updated some more functions you can choose from. What about now?"

#: BFCL's default system prompt (``ret_fmt=python``, ``func_doc_fmt=json``, plaintext, classic)
BFCL_SYSTEM_PROMPT = (
    "You are an expert in composing functions.You are given a question and a set of possible "
    "functions. Based on the question, you will need to make one or more function/tool calls to "
    "achieve the purpose. If none of the functions can be used, point it out. If the given "
    "question lacks the parameters required by the function, also point it out.\n\n"
    "You should only return the function calls in your response.\n\nIf you decide to invoke "
    "any of the function(s), you MUST put it in the format of [func_name1(params_name1="
    "params_value1, params_name2=params_value2...), func_name2(params)].  You SHOULD NOT "
    "include any other text in the response.\n\nAt each turn, you should try your best to "
    "complete the tasks requested by the user within the current turn. Continue to output "
    "functions to call until you have fulfilled the user's request to the best of your "
    "ability. Once you have no more functions to call, the system will consider the current "
    "turn complete and proceed to the next turn or task.\n\nHere is a list of functions in "
    "json format that you can invoke.\n{functions}\n"
)


def prompt_system_message(functions: list[dict[str, Any]]) -> str:
    """The prompt-mode system prompt: BFCL's instruction and the functions as indented JSON."""
    return BFCL_SYSTEM_PROMPT.replace("{functions}", json.dumps(functions, indent=4))


def reinjection_message(added: list[dict[str, Any]], style: Style) -> str:
    """BFCL's user message of a miss_func re-injection turn."""
    if style == "prompt":
        return f"{added}\n{REINJECT_MESSAGE}"
    return REINJECT_MESSAGE


def parse_bfcl_prompt(text: str) -> ParseResult:
    """BFCL's prompt-mode decoding: strip backticks/newlines/spaces, wrap in ``[...]``, and
    read the whole text as a Python call list (literals only; never evaluated)."""
    body = (text or "").strip("`\n ")
    if not body:
        return ParseResult(error=EMPTY_OUTPUT)
    if not body.startswith("["):
        body = "[" + body
    if not body.endswith("]"):
        body = body + "]"
    try:
        calls = parse_python_calls(body)
    except ValueError as exc:
        return ParseResult(error=str(exc))
    return ParseResult(calls=tuple(calls), form="python")


def parse_emission(reply: ModelReply, style: Style, parse_mode: ParseMode) -> ParseResult:
    """The calls of one emission under ``style``/``parse_mode`` (see module doc)."""
    if parse_mode == "lenient":
        return parse_output(reply)
    if style == "native":
        if reply.tool_calls:
            return parse_native(reply.tool_calls)
        return ParseResult(error="no native tool call")
    return parse_bfcl_prompt(reply.text)


# --------------------------------------------------------------------------------- driver


def _native_assistant_message(
    reply: ModelReply, parsed: ParseResult, turn: int, step: int
) -> tuple[dict[str, Any], list[str]]:
    """The assistant message to append, and the tool-call ids of its calls (in order)."""
    if not parsed.calls or parsed.form != "native":
        return {"role": "assistant", "content": reply.text or ""}, []
    raw = reply.tool_calls or []
    ids: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for i, call in enumerate(parsed.calls):
        rid = raw[i].get("id") if i < len(raw) and isinstance(raw[i], dict) else None
        call_id = str(rid) if rid else f"call_{turn}_{step}_{i}"
        ids.append(call_id)
        tool_calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": dumps_safe(call.arguments)},
            }
        )
    return {"role": "assistant", "content": reply.text or "", "tool_calls": tool_calls}, ids


def _display(result: ExecResult) -> str:
    return result.call or result.name


def _add_user_text(messages: list[dict[str, Any]], text: str) -> None:
    """Send ``text`` as a user message: appended to the last message when that is already a
    user message with text content (a new dict: recorded messages are not mutated)."""
    last = messages[-1] if messages else None
    if last is not None and last.get("role") == "user" and isinstance(last.get("content"), str):
        messages[-1] = {**last, "content": f"{last['content']}\n\n{text}"}
    else:
        messages.append({"role": "user", "content": text})


def run_conversation(
    model: ChatModel,
    case: MultiTurnCase,
    *,
    benchmark: MultiTurnBenchmark[Any] | None = None,
    env: Environment | None = None,
    style: Style = "native",
    max_steps: int = DEFAULT_MAX_STEPS,
    decoding: Decoding | None = None,
    parse_mode: ParseMode = "bfcl",
    probe: ProbeConfig | None = None,
) -> Trajectory:
    """Run ``case`` with ``model``; never raises on a model error (it is recorded).

    Every query carries a :class:`~callscope.models.base.RequestContext`: ``case_id``,
    ``mode`` (the style), ``attempt`` (1-based query number in the case; probe retries are
    queries too), ``turn`` and ``step`` (the replay backend looks answers up by it).
    ``benchmark`` is the benchmark ``case`` comes from (the registry's default one,
    :func:`~callscope.benchmarks.protocol.benchmark_or_default`, when ``None``): it gives the
    environment (``env``: pass one to inspect the final state; a fresh
    ``benchmark.environment(case)`` by default) and, for a probe, the case's due turns.
    ``probe`` runs SRI or CRI (see the module doc).
    """
    if style not in ("native", "prompt"):
        raise ValueError(f"style must be 'native' or 'prompt', not {style!r}")
    started = time.perf_counter()
    bench = benchmark_or_default(benchmark)
    if env is None:
        env = bench.environment(case)
    elif (given := getattr(getattr(env, "case", None), "id", case.id)) != case.id:
        raise ValueError(f"environment of {given!r} given for case {case.id!r}")
    session = ProbeSession(probe, case, bench.due_turns(case)) if probe is not None else None
    traj = Trajectory(
        case.id,
        case.category,
        style,
        getattr(model, "spec", "") or "",
        max_steps,
        parse_mode,
        probe=probe.to_dict() if probe else None,
        events=session.events if session else [],
    )
    sent_user: list[dict[str, Any]] = []  # every user message of the case so far
    prior_requests: list[str] = []  # the user text of earlier (non-re-injection) turns
    messages: list[dict[str, Any]] = []
    if style == "prompt":
        messages.append({"role": "system", "content": prompt_system_message(case.functions_at(0))})
    query_no = 0
    for t, data_turn in enumerate(case.turns):
        functions = case.functions_at(t)
        available = {f["name"] for f in functions}
        added = case.missed_function.get(t, [])
        user_msgs = [dict(m) for m in data_turn]
        if added:
            by_name = {f["name"]: f for f in case.functions}
            docs = [by_name[n] for n in added if n in by_name]
            user_msgs = [{"role": "user", "content": reinjection_message(docs, style)}]
        messages.extend(user_msgs)
        sent_user.extend(user_msgs)
        current_request = REINJECT_MESSAGE if added else request_text(user_msgs)
        tools = (
            [{"type": "function", "function": f} for f in functions] if style == "native" else None
        )
        turn = TurnRecord(t, user_msgs, sorted(available), list(added))
        count = 0
        turn_called = False
        while True:
            query_no += 1
            context = RequestContext(
                case_id=case.id, mode=style, attempt=query_no, turn=t, step=len(turn.steps)
            )
            try:
                reply = model.chat(list(messages), tools, decoding, context=context)
            except ModelError as exc:
                traj.error = {
                    "kind": exc.kind,
                    "message": str(exc),
                    "turn": t,
                    "step": len(turn.steps),
                }
                traj.partial_turn = turn
                traj.wall_s = time.perf_counter() - started
                return traj
            parsed = parse_emission(reply, style, parse_mode)
            step = StepRecord(
                text=reply.text or "",
                tool_calls=reply.tool_calls,
                calls=[c.to_dict() for c in parsed.calls],
                parse_error=parsed.error,
                parse_form=parsed.form,
                results=[],
                available=sorted(available),
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                latency_s=reply.latency_s,
                prompt_tokens_evaluated=reply.prompt_tokens_evaluated,
            )
            turn.steps.append(step)
            index = len(turn.steps) - 1
            if session is not None and parsed.calls:
                fired = session.on_calls(
                    t,
                    index,
                    list(parsed.calls),
                    functions,
                    user_text(sent_user),
                    observed_text(env.log),
                )
                if fired is not None:
                    step.retracted = True
                    turn_called = True
                    if fired["action"] == "bypass":
                        messages.append({"role": "assistant", "content": BYPASS_ABSTENTION})
                        turn.steps.append(
                            StepRecord(
                                text=BYPASS_ABSTENTION,
                                tool_calls=None,
                                calls=[],
                                parse_error=None,
                                parse_form=None,
                                results=[],
                                available=sorted(available),
                                placeholder=True,
                            )
                        )
                        fired["placeholder_step"] = len(turn.steps) - 1
                        break
                    _add_user_text(messages, CRI_RETRY_INSTRUCTION)
                    fired["injected"] = CRI_RETRY_INSTRUCTION
                    continue
            if style == "native":
                assistant, ids = _native_assistant_message(reply, parsed, t, len(turn.steps) - 1)
            else:
                assistant, ids = {"role": "assistant", "content": reply.text or ""}, []
            messages.append(assistant)
            if not parsed.calls:
                if session is not None and not turn_called:
                    fired = session.on_halt(t, index, reply)
                    if fired is not None:
                        if session.probe.history_edit:
                            messages.pop()
                        text = session.retry_text(env.log, prior_requests, current_request)
                        if text:
                            _add_user_text(messages, text)
                        fired["injected"] = text
                        continue
                break
            turn_called = True
            step.results = env.execute(parsed.calls, available)
            if style == "native" and ids:
                for call_id, res in zip(ids, step.results, strict=True):
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call_id,
                            "name": res.name,
                            "content": res.output,
                        }
                    )
            else:
                shown = [
                    {"role": "tool", "name": _display(r), "content": r.output} for r in step.results
                ]
                messages.append({"role": "user", "content": repr(shown)})
            count += 1
            if count > max_steps:
                # BFCL keeps the force-quit turn in its results and runs no further turn
                traj.force_quit = True
                traj.turns.append(turn)
                traj.wall_s = time.perf_counter() - started
                return traj
        traj.turns.append(turn)
        if not added:
            prior_requests.append(request_text(user_msgs))
    traj.wall_s = time.perf_counter() - started
    return traj
