"""PROBES and DETECTORS are registries: a new detector is usable by a probe once registered,
and an unknown name is a ``ConfigError`` listing the choices (no BFCL needed)."""

from __future__ import annotations

import pytest

from callscope.calibration.cri_detectors import DETECTORS, Detection
from callscope.calibration.probes import (
    PROBES,
    ProbeConfig,
    ProbeSession,
    get_probe,
    register_probe,
)
from callscope.errors import ConfigError
from callscope.types import ToolCall


class Case:
    id = "multi_turn_miss_param_7"
    category = "multi_turn_miss_param"
    turns: list[list[dict]] = [[], []]
    functions = [{"name": "ls", "parameters": {"type": "object", "properties": {}}}]
    missed_function: dict[int, list[str]] = {}

    def functions_at(self, turn: int) -> list[dict]:
        return self.functions


def test_unknown_names_list_the_choices():
    with pytest.raises(ConfigError, match="sri, sri-no-history"):
        get_probe("nope")
    with pytest.raises(ValueError, match="label-free/saag"):
        ProbeConfig("x", seam="call", detector="nope")


def test_a_registered_detector_and_probe_run_at_the_call_seam():
    def every_call(calls, functions, user, observed):
        return Detection("MC", 0, calls[0], {"why": "test"})

    DETECTORS.register("test-every-call", every_call)
    probe = register_probe(ProbeConfig("test-cri", seam="call", detector="test-every-call"))
    try:
        assert get_probe("test-cri") is probe and list(PROBES)[-1] == "test-cri"
        session = ProbeSession(probe, Case(), due_turns=[1])
        event = session.on_calls(0, 0, [ToolCall("ls", {})], Case.functions, "list", "")
        assert event is not None and (event["decision"], event["method"]) == (
            "fired",
            "test-every-call",
        )
        # at most one fire per case
        assert session.on_calls(1, 0, [ToolCall("ls", {})], Case.functions, "", "") is None
        assert session.events[-1]["reason"] == "once_per_case"
    finally:
        PROBES.unregister("test-cri")
        DETECTORS.unregister("test-every-call")


def test_bypass_fires_only_at_the_due_turns_passed_in():
    session = ProbeSession(get_probe("cri-bypass"), Case(), due_turns=[1])
    assert session.on_calls(0, 0, [ToolCall("rm", {})], Case.functions, "", "") is None
    assert session.events[-1]["reason"] == "not_empty_gold_turn"
    fired = session.on_calls(1, 0, [ToolCall("rm", {})], Case.functions, "", "")
    assert fired is not None and fired["action"] == "bypass"
