"""The guard's verdict on one model response: every tool call through the SAAG cascade.

:func:`check` takes what an agent got back from its model (an OpenAI-style assistant message,
a whole ``chat.completion``, a :class:`~callscope.types.ModelReply` or plain text), the
request's ``tools`` and its ``messages``, and returns a :class:`TurnVerdict`: the action class
of the turn (:func:`callscope.calibration.classify.classify_emission`) and one
:class:`CallVerdict` per tool call, by position (stage, reasons, the paper's structured
correction of :func:`callscope.saag.messages.correction_message`). The cascade over the answer
is :func:`callscope.saag.answer.diagnose_answer`'s (issue 28: the answer is the unit): every
call diagnosed, the turn's stage the earliest over its calls.

A live agent may answer in prose or in data: a turn without a call *attempt* is not a
failure (its verdict has no call and passes; ``no_call`` says ``abstained`` or ``empty``). A
call attempt is native ``tool_calls``, text the action classifier reads as ``TOOL_CALL``, or
text the parser reads as a broken call (:func:`callscope.saag.answer.no_call_kind`, the one
rule of ``score`` and the loop) that is written as one
(:func:`callscope.parse.no_call.written_as_call`: call syntax or a call object it refused, a
registered name written as a call). Unlike ``score``, which asked for a call, the guard
lets an answer written as data through: a number, a JSON value with no call key, symbols
(``42``, ``[2, 3, 5]``, ``{"answer": 42}``). A call attempt without a readable call is a
stage-1 verdict with the parser's reason (``no_call="broken"``), which the repair corrects;
a native list with one unreadable call has a stage-1 verdict at that position beside its
judged readable calls.

Evidence (:func:`evidence_of`): the text of the last user message is the query; the earlier
user messages and the tool results are the context stage 3 may also ground values in. The
system prompt and the assistant's own text are not evidence (a value the model only saw in
the system prompt is flagged).

A final-answer tool is not a tool call (issue 46): the tool a host's agent ends its run with
(Inspect's ``basic_agent`` and ``react`` agents: ``submit``) carries the agent's own answer,
not values the user must have stated. :func:`check` leaves the calls named in its
``final_answer`` out of the verdict (:func:`split_final`, the one rule: they are listed in
:attr:`TurnVerdict.final_answer`, never graded, never gated); a turn whose only call is a
final answer made no call to check. Which names are final answers is the host's to say
(:data:`callscope.integrations.verdicts.FINAL_ANSWER_TOOLS` for the integrations); the
default is none, so a request's own tool called ``submit`` (the proxy, LiteLLM) is checked.

A required argument whose value the user did not state (a closed choice such as a unit the
request names none of) fails with the guard's ASK (:func:`callscope.saag.ask.with_ask`): the
correction tells the agent to ask the user for it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from callscope.calibration.classify import classify_emission
from callscope.calibration.classify.emission import holds_native_call
from callscope.core.memo import transient
from callscope.guard.inputs import (  # noqa: F401 (functions_of, message_of: importable here)
    content_text,
    evidence_of,
    functions_of,
    message_of,
    object_arguments,
    registry_of,
    split_final,
    still_kept,
)
from callscope.parse import parse_output
from callscope.parse.json_calls import parse_native
from callscope.parse.literals import MAX_NATIVE_CHARS, json_size
from callscope.parse.no_call import ABSTAIN_ERRORS, written_as_call
from callscope.records import Diagnosis, FailureKind
from callscope.records.wire import FunctionSpec, JsonObject
from callscope.saag.answer import diagnose_answer, no_call_kind, repeated_positions
from callscope.saag.ask import with_ask
from callscope.saag.cascade import find_spec, forget_registry, spec_properties
from callscope.saag.correction import (
    AnswerVerdict,
    CheckedCall,
    NoCall,
    call_depth,
    call_fix,
    flagged_values,
    per_call,
)
from callscope.saag.groundings import Grounding
from callscope.saag.value_rules import outside_enum
from callscope.types import TOOL_CALL, ParseResult, ToolCall


@dataclass(frozen=True)
class CallVerdict:
    """The cascade's verdict on one tool call of a response.

    ``index`` is the call's position in the response, ``id`` its ``tool_call`` id (``None`` for
    a call parsed from text); ``stage`` is 0 when it passed, else the first failing stage;
    ``reasons`` say what failed, one line each; ``correction`` is the structured feedback
    (SAAG paper, Table 4) or ``None`` when it passed."""

    index: int
    id: str | None
    name: str | None
    arguments: JsonObject
    stage: int
    reasons: tuple[str, ...]
    correction: str | None
    diagnosis: Diagnosis

    @property
    def passed(self) -> bool:
        return self.stage == 0

    @property
    def reached(self) -> int:
        """The deepest stage the call reached: its failing stage, or
        :data:`~callscope.saag.correction.PASSED_DEPTH` (one past stage 3)."""
        return call_depth(self.diagnosis)

    @property
    def flagged(self) -> int:
        """How many names or values the failing stage flagged (0 when it passed;
        :func:`~callscope.saag.correction.flagged_values`)."""
        return flagged_values(self.diagnosis)

    @property
    def checked_call(self) -> CheckedCall:
        """The call as the correction engine sees it (a nameless call has no call)."""
        return CheckedCall(
            ToolCall(self.name, self.arguments) if self.name else None, self.diagnosis
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "stage": self.stage,
            "reasons": list(self.reasons),
            "correction": self.correction,
            "diagnosis": self.diagnosis.to_dict(),
        }


@dataclass(frozen=True)
class TurnVerdict:
    """The guard's verdict on one response: its action class and each call's verdict.

    ``calls`` is empty when the turn made no call attempt (``action`` then says what it did:
    ``ASK``, ``REFUSE``, ``CONFIRM`` or ``OTHER``; ``no_call`` is ``abstained`` or ``empty``);
    ``parse_error`` says why a call attempt could not be read (the turn then holds one
    stage-1 call verdict and ``no_call="broken"``); ``object_arguments`` which native calls
    wrote their arguments as an object instead of a JSON string. ``verdict`` is the answer's
    verdict as :func:`~callscope.saag.answer.diagnose_answer` gave it (:attr:`answer`)."""

    action: str
    calls: tuple[CallVerdict, ...] = ()
    parse_error: str | None = None
    query: str = ""
    content: str = ""
    native: bool = False
    functions: list[FunctionSpec] = field(default_factory=list, repr=False)
    no_call: NoCall | None = None
    verdict: AnswerVerdict | None = field(default=None, repr=False, compare=False)
    #: the positions of native calls whose ``function.arguments`` is a JSON object, not the
    #: string the OpenAI format requires (read and judged all the same: Ollama writes objects)
    object_arguments: tuple[int, ...] = ()
    #: the names of the final-answer calls the turn made, left out of the verdict
    #: (:func:`split_final`)
    final_answer: tuple[str, ...] = ()
    #: why the turn's calls were not checked (``None``: they were): callscope's own reading
    #: limit, not the model's fault (native calls over
    #: :data:`~callscope.parse.literals.MAX_NATIVE_CHARS`); the turn passes, unchecked
    unchecked: str | None = None

    @property
    def checked(self) -> bool:
        """Whether the turn had tool calls to check."""
        return bool(self.calls)

    @property
    def passed(self) -> bool:
        """Every call passed (a turn without calls has nothing to fail)."""
        return all(c.passed for c in self.calls)

    @property
    def stage(self) -> int:
        """0 when every call passed, else the earliest stage any call failed at."""
        failing = [c.stage for c in self.calls if not c.passed]
        return min(failing) if failing else 0

    @property
    def reached(self) -> int:
        """The deepest stage the turn's worst call reached (0: no call at all)."""
        return self.answer.depth

    @property
    def flagged(self) -> int:
        """Names and values flagged over all the turn's calls."""
        return self.answer.flagged

    @property
    def answer(self) -> AnswerVerdict:
        """The turn as the correction engine (:mod:`callscope.saag.correction`) sees it: every
        call checked, the named ones compared by the repeat stop (:attr:`verdict` when
        :func:`check` made it, else rebuilt from :attr:`calls`)."""
        if self.verdict is not None:
            return self.verdict
        return AnswerVerdict(
            checked=tuple(c.checked_call for c in self.calls),
            calls=self.tool_calls,
            parse_error=self.parse_error,
            no_call=self.no_call,
        )

    @property
    def repeated(self) -> tuple[int, ...]:
        """Positions of calls repeating an earlier call of the turn, same name and arguments
        (:func:`~callscope.saag.answer.repeated_positions`)."""
        return repeated_positions(self.answer.calls)

    @property
    def worst(self) -> CallVerdict | None:
        """The first call failing at :attr:`stage` (the first call when all passed)."""
        for c in self.calls:
            if not c.passed and c.stage == self.stage:
                return c
        return self.calls[0] if self.calls else None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c.name or "", c.arguments) for c in self.calls if c.name)

    @property
    def correction(self) -> str | None:
        """The paper's structured correction of each failing call, each prefixed with the call
        it is for when the turn made several calls (:func:`callscope.saag.correction.per_call`);
        ``None`` when every call passed."""
        return per_call(self.answer.checked, call_fix)

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "checked": self.checked,
            "passed": self.passed,
            "stage": self.stage,
            "answer": self.no_call or "calls",
            "calls": [c.to_dict() for c in self.calls],
            "repeated": list(self.repeated),
            "parse_error": self.parse_error,
            "correction": self.correction,
            "final_answer": list(self.final_answer),
            "unchecked": self.unchecked,
        }


def _reasons(
    d: Diagnosis,
    call: ToolCall | None,
    unreadable: str | None,
    functions: Sequence[FunctionSpec] = (),
) -> tuple[str, ...]:
    if d.stage == 0:
        return ()
    if d.stage == 1:
        if d.fnem == -1:
            if unreadable:
                return (f"no_name: the call could not be read: {unreadable}",)
            return (FailureKind.NO_NAME.reason(""),)
        near = f" (nearest: {d.nearest!r})" if d.nearest else ""
        return (FailureKind.WRONG_NAME.reason(str(d.predicted)) + near,)
    args = call.arguments if call is not None else {}
    spec = find_spec(functions, call.name) if call is not None and functions else None
    props = spec_properties(spec) if spec else {}
    return tuple(
        _enum_reason(kind, p, args.get(p), props.get(p))
        or kind.reason(p, _short(args.get(p)), str(d.drift_targets.get(p)))
        for kind in FailureKind.of_stage(d.stage)
        for p in getattr(d, kind.value)
    )


def _enum_reason(kind: FailureKind, param: str, value: Any, schema: Any) -> str | None:
    """A stage-3 value the parameter's own enum rules out is named as such, with the values
    the schema allows (issue 45: it read "has no grounding in the user's text")."""
    if kind.stage != 3 or not isinstance(schema, dict) or not (enum := outside_enum(value, schema)):
        return None
    allowed = ", ".join(_short(m, 30) for m in enum[:8]) + (", ..." if len(enum) > 8 else "")
    return f"{kind.value}: {param}={_short(value)} is not one of the values its schema allows ({allowed})"


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters; a value whose ``repr`` cannot be made (an
    integer over Python's digit limit) is named by its size instead."""
    try:
        text = repr(value)
    except ValueError:
        text = f"<{type(value).__name__} too long to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call_verdict(
    index: int, call_id: str | None, checked: CheckedCall, functions: Sequence[FunctionSpec]
) -> CallVerdict:
    d, call = checked.diagnosis, checked.call
    return CallVerdict(
        index=index,
        id=call_id,
        name=call.name if call is not None else None,
        arguments=dict(call.arguments) if call is not None else {},
        stage=d.stage,
        reasons=_reasons(d, call, checked.reason, functions),
        correction=call_fix(checked),
        diagnosis=d,
    )


def check(
    response: Any,
    tools: Sequence[Any] | None,
    messages: Sequence[Any],
    grounding: str | Grounding | None = None,
    final_answer: Collection[str] = (),
) -> TurnVerdict:
    """The guard's verdict on ``response`` to a request of ``messages`` with ``tools``.

    Native ``tool_calls`` are always checked (an unreadable list is one stage-1 verdict with
    the parse error); calls written in the text are checked when the turn's action class is
    ``TOOL_CALL``, and text the parser reads as a broken call (call syntax or data it
    refused, a registered name written as a call, garbage:
    :func:`~callscope.saag.answer.no_call_kind`, the one rule of ``score`` and the loop) is a
    broken call attempt. Every call is diagnosed (:func:`~callscope.saag.answer.diagnose_answer`,
    a call attempt expects a call); a turn with no call attempt passes with no call.
    ``grounding`` names the stage-3 mode (default
    :data:`~callscope.saag.groundings.DEFAULT_GROUNDING`). Nothing is evaluated: calls are
    parsed as data (:mod:`callscope.parse`). Calls to a tool named in ``final_answer`` are
    the host's final answer, left out of the verdict (:func:`split_final`)."""
    functions, kept = registry_of(tools)
    with nullcontext() if kept else transient():  # (a registry the guard does not keep)
        verdict = _check(response, functions, messages, grounding, final_answer)
    if kept and not still_kept(functions):  # let go while this check ran: what it kept too
        forget_registry(functions)
    return verdict


def _check(
    response: Any,
    functions: list[FunctionSpec],
    messages: Sequence[Any],
    grounding: str | Grounding | None,
    final_answer: Collection[str],
) -> TurnVerdict:
    """:func:`check` itself, the request's registry read."""
    message = message_of(response)
    query, context = evidence_of(messages)
    text = content_text(message.get("content"))
    native_calls, final = split_final(message.get("tool_calls"), final_answer)
    if final and not native_calls:  # only a final answer: no tool call to check
        return TurnVerdict(
            action="OTHER",
            query=query,
            content=text,
            functions=functions,
            no_call="abstained",
            verdict=AnswerVerdict(no_call="abstained"),
            final_answer=final,
        )
    if native_calls and json_size(native_calls, MAX_NATIVE_CHARS) > MAX_NATIVE_CHARS:
        # over callscope's own reading limit: unchecked, not blamed on the model (told that
        # its valid call cannot be read, an agent loops on it)
        return TurnVerdict(
            action=TOOL_CALL,
            query=query,
            content=text,
            native=True,
            functions=functions,
            unchecked=f"the tool calls are larger than callscope reads "
            f"({MAX_NATIVE_CHARS:,} characters): passed on unchecked",
            final_answer=final,
        )
    if holds_native_call(native_calls):
        # a native call is a TOOL_CALL whatever the prose beside it says (the classifier's
        # priority): its cue scan over the prose is skipped (~70 ms for 50 KB of text)
        action = TOOL_CALL
    else:
        try:
            action = classify_emission(
                {"content": text, "tool_calls": native_calls} if native_calls else {"content": text}
            )
        except TypeError:
            action = TOOL_CALL if native_calls else "OTHER"
    parsed: ParseResult
    ids: list[str | None] = []
    if native_calls:
        parsed = parse_native(native_calls)
        ids = [
            str(tc["id"]) if isinstance(tc, dict) and tc.get("id") is not None else None
            for tc in (native_calls if isinstance(native_calls, list) else [])
        ]
    else:
        parsed = parse_output(text)
        names = [f["name"] for f in functions]
        kind = no_call_kind(parsed, names)
        if (
            kind == "broken"
            and parsed.error not in ABSTAIN_ERRORS  # (prose naming a registered call: broken)
            and not written_as_call(text, names)
        ):
            kind = "abstained"  # an answer written as data ("42", "[2, 3]"), not a call
        if action != TOOL_CALL and kind in ("abstained", "empty"):  # prose or nothing
            return TurnVerdict(
                action=action,
                query=query,
                content=text,
                functions=functions,
                no_call=kind,
                verdict=AnswerVerdict(parse_error=parsed.error, no_call=kind),
            )
    answer = diagnose_answer(
        parsed, functions, query, grounding=grounding, context=context, expect_call=True
    )
    if answer.no_call is not None:  # a call attempt with no readable call: a broken one
        answer = replace(answer, no_call="broken")
    # a required value the user did not state is asked for (the guard's ASK, issue 46)
    checked = tuple(
        replace(c, diagnosis=with_ask(c.diagnosis, c.call, functions, query, context))
        for c in answer.checked
    )
    if checked != answer.checked:
        answer = replace(answer, checked=checked)
    verdicts = tuple(
        _call_verdict(i, ids[i] if i < len(ids) else None, c, functions)
        for i, c in enumerate(answer.checked)
    )
    return TurnVerdict(
        action=action,
        calls=verdicts,
        parse_error=answer.parse_error or parsed.error,
        query=query,
        content=text,
        native=bool(native_calls),
        functions=functions,
        no_call=answer.no_call,
        verdict=answer,
        object_arguments=object_arguments(native_calls),
        final_answer=final,
    )
