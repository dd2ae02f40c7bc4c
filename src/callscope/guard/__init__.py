"""callscope in a live agent: check a model's tool calls before they run, repair them.

- :func:`check` (:mod:`callscope.guard.check`): a response, the request's ``tools`` and
  ``messages`` -> a :class:`TurnVerdict` (action class, one :class:`CallVerdict` per call).
- :func:`repair` (:mod:`callscope.guard.repair`): any chat function, re-asked with the
  gated correction (issue 17's mode) up to ``k`` times, keep-best -> a :class:`RepairResult`.
- :mod:`callscope.guard.proxy`: the OpenAI-compatible repair proxy of ``callscope serve``.
- :mod:`callscope.guard.chatlog`: recorded chat logs diagnosed (``score --from-chat``).

The package sits above ``runs`` and below ``report`` in the layer order.
"""

from __future__ import annotations

from callscope.guard.check import CallVerdict, TurnVerdict, check
from callscope.guard.repair import (
    DEFAULT_REPAIR_ATTEMPTS,
    RepairAttempt,
    RepairResult,
    repair,
)

__all__ = [
    "DEFAULT_REPAIR_ATTEMPTS",
    "CallVerdict",
    "RepairAttempt",
    "RepairResult",
    "TurnVerdict",
    "check",
    "guard_check",
    "guard_repair",
    "repair",
]

#: the names :func:`check` and :func:`repair` have in the public API (``callscope.guard_check``,
#: ``callscope.guard_repair``)
guard_check = check
guard_repair = repair
