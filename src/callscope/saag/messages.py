"""Templated, deterministic correction messages (SAAG paper, Appendix D, Table 4).

Every message is built from the registry, the model's own prediction and the cascade's
metrics only: nothing here ever sees the ground truth.
"""

from __future__ import annotations

from callscope.saag.cascade import Diagnosis

BINARY_FEEDBACK = "No"

NO_NAME = (
    "No function name found. Please return only the agent invocation in the exact JSON "
    "format specified in the registry."
)
WRONG_NAME = (
    'Function name "{predicted}" not found in registry. Please check the system prompt for '
    "the correct function names and respond with only the agent invocation in the exact JSON "
    "format specified."
)
NEAREST_HINT = ' The closest registered name is "{nearest}".'
MISSING = (
    "Key parameters of the agent from the registry are missing. Please ensure the invocation "
    "includes all parameters specified for that agent in the system prompt."
)
SPURIOUS = (
    "Spurious parameters not present in the registry are included. Please include only the "
    "parameters specified for that agent."
)
DRIFTED = (
    "Some parameters appear misspelled and deviate slightly from the registry. Please ensure "
    "all parameter names exactly match the schema in the system prompt."
)
NUMERIC = (
    "The numeric values for {params} do not match what the user stated. Use the exact numbers "
    "from the user's request."
)
HARD = (
    "The values for {params} have no grounding in the user's request. Do not invent values. "
    "Use only what the user explicitly stated, or omit the argument."
)
SOFT = (
    "The values for {params} are loosely related but not exact. Use the precise wording or "
    "value from the user's request."
)


def correction_message(d: Diagnosis) -> str | None:
    """The fix psi_k for the failing stage, or ``None`` when the call passed."""
    if d.stage == 0:
        return None
    if d.stage == 1:
        if d.fnem == -1:
            return NO_NAME
        msg = WRONG_NAME.format(predicted=d.predicted)
        if d.nearest is not None and (d.ncs or 0) > 0:
            msg += NEAREST_HINT.format(nearest=d.nearest)
        return msg
    parts: list[str] = []
    if d.stage == 2:
        if d.missing:
            parts.append(MISSING)
        if d.spurious:
            parts.append(SPURIOUS)
        if d.drifted:
            parts.append(DRIFTED)
    else:
        for names, template in ((d.numeric, NUMERIC), (d.hard, HARD), (d.soft, SOFT)):
            if names:
                parts.append(template.format(params=", ".join(names)))
    return " ".join(parts)
