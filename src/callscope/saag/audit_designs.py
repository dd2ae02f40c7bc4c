"""The audit designs ``callscope audit`` and the report run, by name, in report order: the
single-call ``calls`` design and the ``answers`` design (:mod:`callscope.saag.audit_engine`
runs them; both build on it, so the list lives above all three)."""

from __future__ import annotations

from callscope.saag.answer_audit import ANSWER_AUDIT
from callscope.saag.audit import CALL_AUDIT
from callscope.saag.audit_engine import AuditDesign


def audit_designs() -> dict[str, AuditDesign]:
    """Every audit design by name, in report order: ``calls``, then ``answers``."""
    return {d.name: d for d in (CALL_AUDIT, ANSWER_AUDIT)}
