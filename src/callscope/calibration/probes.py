"""SRI and CRI: inference-time calibration probes of the multi-turn conversation driver
(paper "Calibration is the Bottleneck", §3.3, App. B-C). The driver
(:func:`callscope.runs.conversation.run_conversation` with ``probe=``) asks a :class:`ProbeSession` at two seams; this module decides, builds the
texts, and logs every decision. What a user relies on:

**SRI, the halt seam.** Consulted when a turn ends with no parseable tool call anywhere in the
turn (a turn that made a call and then answered in prose does not trigger). At most one retry
per turn. The retry context has three switchable components:

* *history editing*: the no-call assistant message is dropped from the conversation before the
  retry (it stays in the trajectory record: it was emitted);
* *state injection*: :func:`state_snapshot`, the executed calls of the conversation so far and
  their results, most recent kept when over the cap (:data:`STATE_CAP` = 2,400 characters);
* *reconciliation*: :func:`reconciliation_block`, a header, up to 4 earlier user requests of at
  most 700 characters each (most recent first), the current request and the decision rule.

The injected text is sent as a user message; when the conversation already ends with a user
message (always the case after history editing) it is appended to that message's content so
that roles keep alternating. The edit is permanent: later queries see the edited history.
The SRI-Gate variants suppress the retry when the halting reply is itself an ask (its single
action class under :data:`callscope.calibration.classify.DEFAULT` is ASK), on every case
(``gate="all"``) or on ``multi_turn_miss_param`` cases only (``gate="miss_param"``).

**CRI, the call seam.** Consulted after an emission with calls is parsed and before any of its
calls executes. A detector checks the calls in order; the first suspect call decides:

* label-free (:func:`~callscope.calibration.cri_detectors.detect_label_free`): ``MC`` when the name is not among this turn's tools;
  ``UR`` when a required argument's value has no antecedent (:func:`~callscope.calibration.cri_detectors.has_antecedent`) in the
  user text so far, the observed state (outputs of executed calls), the parameter's enum or
  its default. Only scalar string/number values are checked; values shorter than 2 characters
  pass.
* SAAG (:func:`~callscope.calibration.cri_detectors.detect_saag`): callscope's cascade on the same call with the user text and the
  observed state as query; a stage-1 failure is ``MC``, a stage-3 *hard* drift on a required
  argument is ``UR``; everything else passes.

Gates, in this order: at most one fire per case (``once_per_case``); no fire from the first
re-injection turn of a miss_func case on (``after_reinjection``); CRI-bypass fires only at the
case's empty-gold turn (``not_empty_gold_turn``: miss_param, the turns whose gold is ``[]``;
miss_func, the turn before the first re-injection; never on base/long_context). On a fire the
whole emission holding the suspect call is retracted (none of its calls executes, so the
simulator state is unchanged; it is recorded as ``retracted``). ``retry`` adds
:data:`CRI_RETRY_INSTRUCTION` and re-queries; ``bypass`` inserts :data:`BYPASS_ABSTENTION` as an
assistant message (recorded as a ``placeholder``, not a model emission) and ends the turn.
GAR is not a model measure under bypass (:attr:`ProbeConfig.gar_valid` is false).

**Events.** Every decision, fired or suppressed, is one dict in :attr:`ProbeSession.events`:
``case_id, turn, step, probe, seam ("halt"|"call"), decision ("fired"|"suppressed"), reason,
detector`` plus details. Reasons: ``halt`` (fired), ``gate_ask``, ``once_per_turn`` (SRI);
``detected`` (fired), ``once_per_case``, ``after_reinjection``, ``not_empty_gold_turn`` (CRI).
A seam whose trigger condition does not hold (a turn with a call, a call the detector passes)
is not a decision and logs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from callscope.benchmarks.protocol import MultiTurnCase
from callscope.calibration.classify import DEFAULT, classify_emission
from callscope.calibration.cri_detectors import DETECTORS
from callscope.core.registry import Registry
from callscope.records import ExecResult
from callscope.types import ASK, ToolCall

Seam = Literal["halt", "call"]
Gate = Literal["none", "all", "miss_param"]
Action = Literal["retry", "bypass"]

#: state injection cap (characters of the whole snapshot block); this cap, the 4 prior requests
#: and their 700-character cap are the settings of the calibration paper's public code (SRI,
#: the halt seam; the paper's text leaves them open)
STATE_CAP = 2400
#: reconciliation: earlier requests shown, and their length cap
MAX_PRIOR_REQUESTS = 4
PRIOR_REQUEST_CHARS = 700
#: one executed call's output is cut to this many characters in the snapshot
RESULT_CHARS = 400

STATE_TITLE = "Observed state (tool calls executed so far in this conversation, and their results):"
NO_STATE = "Observed state: no tool call has been executed so far in this conversation."
RECONCILE_HEADER = (
    "Before you finish this turn, reconcile what the user asked for with what has actually been "
    "done."
)
DECISION_RULE = (
    "Decision rule: if a sub-task the user requested is not yet reflected in the observed state, "
    "respond now with exactly one tool call that makes progress on it. Otherwise, answer the "
    "user normally."
)
CRI_RETRY_INSTRUCTION = (
    "Do not call any tool in this turn. Reply in one or two sentences that you cannot proceed "
    "with this request yet."
)
BYPASS_ABSTENTION = "I cannot proceed with this request yet."


@dataclass(frozen=True)
class ProbeConfig:
    """One probe. ``seam="halt"`` is SRI (components and gate apply), ``seam="call"`` is CRI
    (``action`` and ``detector``, a name in
    :data:`~callscope.calibration.cri_detectors.DETECTORS`, apply)."""

    name: str
    seam: Seam
    history_edit: bool = True
    state_injection: bool = True
    reconciliation: bool = True
    gate: Gate = "none"
    action: Action = "retry"
    detector: str = "label-free"
    state_cap: int = STATE_CAP
    max_prior_requests: int = MAX_PRIOR_REQUESTS
    prior_request_chars: int = PRIOR_REQUEST_CHARS

    def __post_init__(self) -> None:
        if self.seam not in ("halt", "call"):
            raise ValueError(f"seam must be 'halt' or 'call', not {self.seam!r}")
        if self.gate not in ("none", "all", "miss_param"):
            raise ValueError(f"gate must be none/all/miss_param, not {self.gate!r}")
        if self.action not in ("retry", "bypass"):
            raise ValueError(f"action must be retry/bypass, not {self.action!r}")
        if self.detector not in DETECTORS:
            raise ValueError(f"detector must be {'/'.join(DETECTORS)}, not {self.detector!r}")

    @property
    def gar_valid(self) -> bool:
        """False under CRI-bypass: its placeholder is not a model emission, so GAR does not
        measure the model (report Acc and the fired rate)."""
        return not (self.seam == "call" and self.action == "bypass")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProbeConfig:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _sri(name: str, **kw: Any) -> ProbeConfig:
    return ProbeConfig(name=name, seam="halt", **kw)


def _cri(name: str, action: Action, detector: str) -> ProbeConfig:
    return ProbeConfig(name=name, seam="call", action=action, detector=detector)


#: every named probe, in registry order: THE list of probes; the names ``callscope calibrate
#: --probe`` accepts (:func:`probe_help`), the order of the report's probe tables and files
#: (``callscope.runs.calibration_store.probe_key``) and :func:`get_probe` all read it; another
#: package adds one with an entry point in the ``callscope.probes`` group whose object is a
#: :class:`ProbeConfig`
PROBES: Registry[ProbeConfig] = Registry(
    "probe",
    entries={
        p.name: p
        for p in (
            _sri("sri"),
            _sri("sri-no-history", history_edit=False),
            _sri("sri-no-state", state_injection=False),
            _sri("sri-no-reconciliation", reconciliation=False),
            _sri("sri-gate", gate="all"),
            _sri("sri-gate-miss-param", gate="miss_param"),
            _cri("cri-retry", "retry", "label-free"),
            _cri("cri-bypass", "bypass", "label-free"),
            _cri("cri-retry-saag", "retry", "saag"),
            _cri("cri-bypass-saag", "bypass", "saag"),
        )
    },
    entry_point_group="callscope.probes",
)


def get_probe(name: str) -> ProbeConfig:
    """The named probe; ``ConfigError`` (a ``ValueError``) listing the valid names otherwise."""
    return PROBES[name]


def register_probe(probe: ProbeConfig) -> ProbeConfig:
    """Add (or replace) ``probe`` under its name, after the built-in probes; returns it."""
    return PROBES.register(probe.name, probe)


def probe_names() -> tuple[str, ...]:
    """The registered probe names, in registry order."""
    return tuple(PROBES)


def probe_help() -> str:
    """The probe names as one help line (``sri | sri-no-history | ... | cri-bypass-saag``),
    for the CLI's ``--probe`` option."""
    return " | ".join(PROBES)


# --------------------------------------------------------------------------- SRI texts


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _cut(text: str, limit: int) -> str:
    """``text`` of at most ``limit`` characters (``...`` marks a cut)."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 3)] + "..." if limit >= 3 else text[:limit]


def state_snapshot(results: Sequence[ExecResult], cap: int = STATE_CAP) -> str:
    """What the executed calls revealed: one line ``- call -> output`` per accepted (executed)
    call, oldest first, each output on one line cut to :data:`RESULT_CHARS`. When the block
    would exceed ``cap`` characters the oldest lines are dropped (a first line says how many);
    the returned text never exceeds ``cap``."""
    executed = [r for r in results if r.accepted]
    if not executed:
        return _cut(NO_STATE, cap)
    lines = [f"- {r.call or r.name} -> {_cut(_one_line(r.output), RESULT_CHARS)}" for r in executed]
    n = len(lines)

    def marker(dropped: int) -> str:
        return f"- ({dropped} earlier calls omitted)" if dropped else ""

    budget = cap - len(STATE_TITLE) - 1
    first, used = n, 0  # lines[first:] are kept; used = len("\n".join(kept))
    for i in range(n - 1, -1, -1):
        grown = used + len(lines[i]) + (1 if i < n - 1 else 0)
        if grown + (len(marker(i)) + 1 if i else 0) > budget:
            break
        first, used = i, grown
    kept = lines[first:]
    if not kept:  # not even the latest line fits: cut it
        first = n - 1
        kept = [_cut(lines[-1], max(0, budget - (len(marker(first)) + 1 if first else 0)))]
    body = "\n".join(([marker(first)] if first else []) + kept)
    return _cut(f"{STATE_TITLE}\n{body}", cap)


def reconciliation_block(
    prior_requests: Sequence[str],
    current_request: str,
    *,
    max_prior: int = MAX_PRIOR_REQUESTS,
    max_chars: int = PRIOR_REQUEST_CHARS,
) -> str:
    """Header, up to ``max_prior`` earlier requests (given oldest first, shown most recent
    first, each on one line cut to ``max_chars``), the current request and the decision rule."""
    recent = [r for r in (_one_line(p) for p in reversed(prior_requests)) if r][:max_prior]
    parts = [RECONCILE_HEADER]
    if recent:
        parts.append("Earlier requests (most recent first):")
        parts.extend(f"{i}. {_cut(r, max_chars)}" for i, r in enumerate(recent, start=1))
    parts.append(f"Current request: {_one_line(current_request)}")
    parts.append(DECISION_RULE)
    return "\n".join(parts)


def sri_retry_text(
    probe: ProbeConfig,
    results: Sequence[ExecResult],
    prior_requests: Sequence[str],
    current_request: str,
) -> str:
    """The text SRI injects under ``probe`` (empty when neither state nor reconciliation is on)."""
    parts = []
    if probe.state_injection:
        parts.append(state_snapshot(results, probe.state_cap))
    if probe.reconciliation:
        parts.append(
            reconciliation_block(
                prior_requests,
                current_request,
                max_prior=probe.max_prior_requests,
                max_chars=probe.prior_request_chars,
            )
        )
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- the session


def observed_text(results: Sequence[ExecResult]) -> str:
    """The outputs of the executed (accepted) calls, one per line: the observed state."""
    return "\n".join(r.output for r in results if r.accepted)


def user_text(messages: Sequence[dict[str, Any]]) -> str:
    """The text content of ``messages`` (user messages of the conversation), one per line."""
    return "\n".join(str(m.get("content") or "") for m in messages)


class ProbeSession:
    """One probe over one case: holds the gates, decides at each seam, keeps the events.

    ``case`` is any benchmark's case (:class:`~callscope.benchmarks.protocol.MultiTurnCase`);
    ``due_turns`` are the turns its gold class is due at (the benchmark's ``due_turns(case)``),
    which are the empty-gold turns of CRI-bypass in a ``miss_param`` / ``miss_func`` case."""

    def __init__(self, probe: ProbeConfig, case: MultiTurnCase, due_turns: Sequence[int]) -> None:
        self.probe = probe
        self.case = case
        self.events: list[dict[str, Any]] = []
        self._sri_turns: set[int] = set()
        self._cri_fired_at: int | None = None
        self._first_reinjection = min(case.missed_function) if case.missed_function else None
        short = case.category.removeprefix("multi_turn_")
        self._empty_gold = set(due_turns) if short in ("miss_param", "miss_func") else set()

    def _log(
        self,
        turn: int,
        step: int,
        seam: Seam,
        decision: str,
        reason: str,
        detector: str,
        **details: Any,
    ) -> dict[str, Any]:
        event = {
            "case_id": self.case.id,
            "turn": turn,
            "step": step,
            "probe": self.probe.name,
            "seam": seam,
            "decision": decision,
            "reason": reason,
            "detector": detector,
            **details,
        }
        self.events.append(event)
        return event

    # ---- halt seam
    def on_halt(self, turn: int, step: int, reply: Any) -> dict[str, Any] | None:
        """A turn ended with no call in it. Returns the fired event (the runner then retries
        with :meth:`retry_text`), or ``None`` (suppressed, or not an SRI probe)."""
        if self.probe.seam != "halt":
            return None
        halting_class = classify_emission(reply, DEFAULT)
        if turn in self._sri_turns:
            self._log(
                turn,
                step,
                "halt",
                "suppressed",
                "once_per_turn",
                "halt",
                halting_class=halting_class,
            )
            return None
        gated = self.probe.gate == "all" or (
            self.probe.gate == "miss_param" and self.case.category == "multi_turn_miss_param"
        )
        if gated and halting_class == ASK:
            self._log(
                turn,
                step,
                "halt",
                "suppressed",
                "gate_ask",
                "halt",
                halting_class=halting_class,
                gate=self.probe.gate,
            )
            return None
        self._sri_turns.add(turn)
        return self._log(
            turn,
            step,
            "halt",
            "fired",
            "halt",
            "halt",
            halting_class=halting_class,
            history_edited=self.probe.history_edit,
            components=[
                n
                for n, on in (
                    ("history", self.probe.history_edit),
                    ("state", self.probe.state_injection),
                    ("reconciliation", self.probe.reconciliation),
                )
                if on
            ],
        )

    def retry_text(
        self, results: Sequence[ExecResult], prior_requests: Sequence[str], current_request: str
    ) -> str:
        return sri_retry_text(self.probe, results, prior_requests, current_request)

    # ---- call seam
    def on_calls(
        self,
        turn: int,
        step: int,
        calls: Sequence[ToolCall],
        functions: Sequence[dict[str, Any]],
        user: str,
        observed: str,
    ) -> dict[str, Any] | None:
        """An emission's calls are about to execute. Returns the fired event (its ``action`` is
        ``retry`` or ``bypass``), or ``None`` (nothing suspect, suppressed, or not CRI)."""
        if self.probe.seam != "call" or not calls:
            return None
        found = DETECTORS[self.probe.detector](calls, functions, user, observed)
        if found is None:
            return None
        details = {
            "method": self.probe.detector,
            "call": found.call.to_dict(),
            "call_index": found.index,
            "action": self.probe.action,
            **found.details,
        }
        reason = None
        if self._cri_fired_at is not None:
            reason = "once_per_case"
            details["fired_at_turn"] = self._cri_fired_at
        elif self._first_reinjection is not None and turn >= self._first_reinjection:
            reason = "after_reinjection"
            details["reinjection_turn"] = self._first_reinjection
        elif self.probe.action == "bypass" and turn not in self._empty_gold:
            reason = "not_empty_gold_turn"
            details["empty_gold_turns"] = sorted(self._empty_gold)
        if reason is not None:
            self._log(turn, step, "call", "suppressed", reason, found.kind, **details)
            return None
        self._cri_fired_at = turn
        return self._log(turn, step, "call", "fired", "detected", found.kind, **details)


def request_text(messages: Sequence[dict[str, Any]]) -> str:
    """The user text of one turn's messages joined (used as a request in reconciliation)."""
    return " ".join(_one_line(str(m.get("content") or "")) for m in messages).strip()
