"""Every metric says what it is: each spec of METRIC_SPECS has a pure function whose docstring
states its formula and its source (the SAAG paper's equation or section), and the stage-3
metrics say what the grounding mode changes. The metric functions give the cascade's floats."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from callscope.saag import extrinsic, intrinsic
from callscope.saag.cascade import diagnose, nearest_candidate
from callscope.saag.metrics import METRIC_SPECS, metric, specs
from callscope.types import ToolCall

#: metric key -> the function that computes it, and the source its docstring must name
FUNCTIONS: dict[str, tuple[Callable[..., Any], str]] = {
    "fnem": (intrinsic.fnem, "eq. 1"),
    "ncs": (nearest_candidate, "eq. 2"),
    "rpr": (intrinsic.rpr, "eq. 3"),
    "pds": (intrinsic.drift_score, "eq. 4"),
    "spr": (intrinsic.spr, "eq. 5"),
    "avem": (intrinsic.avem, "eq. 6"),
    "qslo": (intrinsic.qslo, "eq. 7"),
    "vhr": (intrinsic.vhr, "eqs. 8-9"),
    "name_acc": (extrinsic.extrinsic, "section 3"),
    "arg_precision": (extrinsic.extrinsic, "section 3"),
    "arg_recall": (extrinsic.extrinsic, "section 3"),
    "arg_f1": (extrinsic.extrinsic, "section 3"),
}


def test_every_gold_free_and_gold_metric_has_a_documented_function() -> None:
    assert set(FUNCTIONS) == {m.key for m in specs("intrinsic") + specs("extrinsic")}
    for key, (fn, source) in FUNCTIONS.items():
        doc = fn.__doc__ or ""
        assert source in doc and "SAAG paper" in doc and ">>>" in doc, key


@pytest.mark.parametrize("key", ["avem", "qslo", "vhr"])
def test_stage_3_metrics_say_what_the_grounding_mode_changes(key: str) -> None:
    doc = FUNCTIONS[key][0].__doc__ or ""
    assert "lexical" in doc and "registry" in doc
    assert "lexical" in metric(key).description and "registry" in metric(key).description


def test_avem_says_it_is_not_eq_6_under_registry_grounding() -> None:
    assert "not eq. 6" in metric("avem").description
    assert "*not* eq. 6" in (intrinsic.avem.__doc__ or "")
    assert "verbatim" in metric("avem").description  # ... only under the lexical mode


def test_every_spec_names_its_source() -> None:
    assert all("SAAG section" in m.description for m in METRIC_SPECS)


WEATHER = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city"],
        },
    }
]


def test_the_functions_give_the_diagnosis_values() -> None:
    query = "Weather in Paris for 3 days?"
    call = ToolCall("get_weather", {"city": "Pariss", "unit": "celsius", "days": 3})
    lexical = diagnose(call, WEATHER, query, grounding="lexical")
    registry = diagnose(call, WEATHER, query)
    assert lexical.avem == intrinsic.avem({"days": "stated"}, list(call.arguments)) == 1 / 3
    assert registry.avem == intrinsic.avem(registry.grounded, list(call.arguments)) == 2 / 3
    assert lexical.qslo == intrinsic.qslo(["Pariss", "celsius"], query)
    assert registry.qslo == intrinsic.qslo(["Pariss"], query)
    assert lexical.vhr is not None and registry.vhr is not None
    drifted = diagnose(ToolCall("get_weather", {"cty": "Paris", "colour": "red"}), WEATHER, query)
    scores = [intrinsic.drift_score(p, ["city", "unit", "days"])[0] for p in ("cty", "colour")]
    assert drifted.pds == intrinsic.pds(scores)
    assert drifted.spr == intrinsic.spr(["colour"], ["cty", "colour"]) == 0.5
    assert drifted.rpr == intrinsic.rpr(["city"], {"cty", "colour"}) == 0.0
    wrong = diagnose(ToolCall("get_wether", {}), WEATHER, query)
    assert (wrong.fnem, wrong.ncs) == (0, nearest_candidate("get_wether", ["get_weather"])[0])
