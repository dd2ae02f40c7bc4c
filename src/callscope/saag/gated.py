"""Gated correction (issue 17): correct only what the cascade is sure of, keep what is right.

The SAAG paper's main caveat is *overcorrection*: feedback that moves a correct prediction
away (section 5, "Limitations"); it names confidence-gated correction as future work. The
gated mode of :func:`callscope.runs.loop.run_loop` is built from six switchable
ingredients, held in one frozen :class:`GatedSettings` (the guard library and proxy import
it; :data:`GATED_DEFAULT`, every ingredient on, is the setting the comparison runs):

* ``confident_only`` -- a correction is sent only for a *confident* diagnosis
  (:func:`confident_kinds`): every stage-1 failure (no name, a name not in the registry: both
  certain), every stage-2 failure (a missing required, spurious or drifted parameter: checked
  against the schema, certain), and a numeric or hard stage-3 failure (a number the user did
  not state, a value with no grounding). A *soft* drift (a value related to the query above
  the similarity threshold but not exact) is not corrected: when it is all that is left the
  gate closes and the loop stops with that attempt.
* ``keep_right`` -- the message also says what is already right, from the model's own
  prediction and the cascade only (never the gold): the predicted name once it passed
  stage 1, and the arguments stage 3 grounded (stage 3 failures) -- so that fixing one
  argument does not move the rest.
* ``best_so_far`` -- the loop's answer is its best attempt
  (:func:`callscope.saag.correction.answer_rank`: deepest stage reached, then fewest flagged
  values; on a tie the later attempt), not its last.
* ``stop_on_regression`` -- the loop stops as soon as a revision ranks below the best attempt
  so far (the answer is then that best attempt when ``best_so_far`` is on).
* ``repeat_patience`` -- the loop stops when the model's last ``repeat_patience`` revisions
  each repeated the call before them exactly (:func:`callscope.saag.correction.repeats`): it
  is not following the correction, and under greedy decoding the same correction again
  rarely changes that (in the first 20 comparison cases, all 9 of the 0.5B's loops, in any
  mode, that gave the same call three times in a row gave it until the 15-attempt budget ran
  out). ``0`` never stops for this.
* ``explain_parse`` -- when no call could be read from the answer, the correction gives the
  parser's reason (a JSON call cut off before it closes, invalid JSON at a character, a
  non-literal argument...) instead of the paper's "No function name found", which is wrong
  when the name is there but the JSON around it is broken. Only the model's own text is
  read; an answer with no call-like text at all still gets the paper's message.

This module holds the settings and the gate; the decisions a loop takes with them (feedback,
stop reason, the attempt kept) are :mod:`callscope.saag.correction`'s, shared by the SAAG loop
and the guard. Everything here is a pure function of a :class:`~callscope.records.Diagnosis`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from callscope.core.registry import Registry
from callscope.records import Diagnosis, FailureKind

#: stage-3 failure kinds a gated loop corrects (:attr:`FailureKind.corrects`); ``soft`` is
#: left alone
CONFIDENT_STAGE3: tuple[str, ...] = tuple(k.value for k in FailureKind.of_stage(3) if k.corrects)


@dataclass(frozen=True)
class GatedSettings:
    """The gated mode's ingredients (module docstring); every one on by default."""

    #: correct only confident diagnoses; stop when only a soft drift is left
    confident_only: bool = True
    #: say which name and arguments of the model's own call already passed
    keep_right: bool = True
    #: the loop's answer is its best attempt (:func:`callscope.saag.correction.best_at`), not
    #: its last
    best_so_far: bool = True
    #: stop as soon as a revision ranks below the best attempt so far
    stop_on_regression: bool = True
    #: stop when this many revisions in a row repeated the call before them (0: never)
    repeat_patience: int = 2
    #: for an answer with no readable call, say why it could not be read
    explain_parse: bool = True


#: the full gated mode (every ingredient on)
GATED_DEFAULT = GatedSettings()

#: the gated loop modes: ``gated`` and one ablation per ingredient switched off (the names are
#: :data:`callscope.types.GATED_MODES`); read-only, plugins: the ``callscope.gated_variants``
#: entry points, each a :class:`GatedSettings`
GATED_VARIANTS: Registry[GatedSettings] = Registry(
    "gated variant",
    entries={
        "gated": GATED_DEFAULT,
        "gated-ungated": replace(GATED_DEFAULT, confident_only=False),
        "gated-nokeep": replace(GATED_DEFAULT, keep_right=False),
        "gated-nobest": replace(GATED_DEFAULT, best_so_far=False, stop_on_regression=False),
        "gated-norepeat": replace(GATED_DEFAULT, repeat_patience=0),
        "gated-noparse": replace(GATED_DEFAULT, explain_parse=False),
    },
    entry_point_group="callscope.gated_variants",
    read_only=True,
)


def gated_settings(mode: str) -> GatedSettings | None:
    """The settings of a gated loop mode, ``None`` for the paper's modes."""
    return GATED_VARIANTS.get(mode, None)


def confident_kinds(d: Diagnosis) -> list[str]:
    """The failure kinds of ``d`` a gated loop corrects (in cascade order): those whose entry
    says the gate corrects them (:attr:`FailureKind.corrects`: every kind at stages 1 and 2,
    ``numeric`` and ``hard`` at stage 3); ``[]`` when the call passed or only a soft drift is
    left (the gate is closed)."""
    return [k for k in d.failure_kinds() if k.corrects] if d.stage else []
