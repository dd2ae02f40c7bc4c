"""BFCL single-call source: package access, doc conversion, loading, BFCL verdicts, agreement.

Expected values below were read by hand from bfcl-eval 2026.3.23's data files
(``bfcl_eval/data/BFCL_v4_*.json`` and ``possible_answer/``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from callscope.benchmarks.bfcl import package as bfcl_pkg
from callscope.benchmarks.bfcl.agreement import gold_call, perturbed_calls
from callscope.benchmarks.bfcl.package import (
    GORILLA_TO_JSON_SCHEMA,
    bfcl_function_to_spec,
    gorilla_to_json_schema,
    sanitize_function_names,
)
from callscope.types import Case, ToolCall

HAS_BFCL = importlib.util.find_spec("bfcl_eval") is not None
needs_bfcl = pytest.mark.skipif(
    not HAS_BFCL, reason="pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0"
)
SRC = str(Path(__file__).resolve().parents[1] / "src")

# Entries whose first-acceptable-value call BFCL's own checker rejects (data defects):
# 106-63-0 / 112-68-0: a required parameter's acceptable list is [] (no value can pass);
# 507-149-4: required 'origin_airport' is [""] (only an explicit "" passes);
# 862-181-3: the answer uses 'journey_start_time', which the gold function does not define;
# 964-207-0: required 'statement' is absent from the answer, which uses undefined 'question'.
BFCL_REJECTS_GOLD = {
    "live_simple_106-63-0": "missing_required",
    "live_simple_112-68-0": "missing_required",
    "live_multiple_507-149-4": "missing_required",
    "live_multiple_862-181-3": "unexpected_param",
    "live_multiple_964-207-0": "missing_required",
}


# --------------------------------------------------------------------------- doc conversion


def test_gorilla_to_json_schema_nested_types():
    doc = {
        "name": "geo.route",
        "description": "Plan a route.",
        "parameters": {
            "type": "dict",
            "properties": {
                "points": {
                    "type": "array",
                    "description": "Stops.",
                    "items": {"type": "tuple", "items": {"type": "float"}},
                },
                "opts": {
                    "type": "dict",
                    "properties": {
                        "mode": {"type": "string", "enum": ["car", "bike"], "default": "car"},
                        "payload": {"type": "any", "description": "Anything."},
                    },
                    "required": ["mode"],
                },
                "n": {"type": "integer", "default": 3, "optional": True, "maximum": 9},
                "flag": {"type": "boolean"},
            },
            "required": ["points"],
            "optional": ["n"],
        },
        "response": {"type": "dict", "properties": {"ok": {"type": "boolean"}}},
    }
    original = json.loads(json.dumps(doc))
    spec = bfcl_function_to_spec(doc)
    assert spec == {
        "name": "geo.route",
        "description": "Plan a route.",
        "parameters": {
            "type": "object",
            "properties": {
                "points": {
                    "type": "array",
                    "description": "Stops.",
                    "items": {"type": "array", "items": {"type": "number"}},
                },
                "opts": {
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string", "enum": ["car", "bike"], "default": "car"},
                        "payload": {"description": "Anything."},
                    },
                    "required": ["mode"],
                },
                "n": {"type": "integer", "default": 3, "maximum": 9},
                "flag": {"type": "boolean"},
            },
            "required": ["points"],
        },
    }
    assert doc == original  # input untouched


def test_gorilla_to_json_schema_edges():
    assert gorilla_to_json_schema({"type": "dict"}) == {"type": "object"}
    assert gorilla_to_json_schema({"description": "untyped"}) == {"description": "untyped"}
    with pytest.raises(ValueError, match="unknown BFCL type 'complex'"):
        gorilla_to_json_schema({"type": "dict", "properties": {"z": {"type": "complex"}}})
    spec = bfcl_function_to_spec({"name": "ping", "description": "p", "parameters": {}})
    assert spec["parameters"] == {"type": "object", "properties": {}}
    with pytest.raises(ValueError):
        bfcl_function_to_spec({"description": "no name"})


@needs_bfcl
def test_type_table_matches_bfcl_except_any():
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    assert set(GORILLA_TO_JSON_SCHEMA) == set(GORILLA_TO_OPENAPI)
    differing = {
        k for k in GORILLA_TO_OPENAPI if GORILLA_TO_OPENAPI[k] != GORILLA_TO_JSON_SCHEMA[k]
    }
    assert differing == {"any", "Any"}


def test_sanitize_names_and_reverse_map():
    specs = [{"name": "math.factorial", "description": "", "parameters": {}}, {"name": "plain"}]
    renamed, reverse = sanitize_function_names(specs)
    assert [s["name"] for s in renamed] == ["math_factorial", "plain"]
    assert reverse == {"math_factorial": "math.factorial", "plain": "plain"}
    assert specs[0]["name"] == "math.factorial"
    assert bfcl_function_to_spec(specs[0], sanitize_name=True)["name"] == "math_factorial"
    with pytest.raises(ValueError, match="both sanitize"):
        sanitize_function_names([{"name": "a.b"}, {"name": "a_b"}])


# --------------------------------------------------------------------------- package access


@needs_bfcl
def test_require_bfcl_version_and_data():
    assert bfcl_pkg.require_bfcl() == "2026.3.23"
    assert bfcl_pkg.data_path("BFCL_v4_simple_python.json").is_file()
    rows = bfcl_pkg.read_bfcl_jsonl("possible_answer/BFCL_v4_simple_python.json")
    assert len(rows) == 400
    assert rows[1] == {
        "id": "simple_python_1",
        "ground_truth": [{"math.factorial": {"number": [5]}}],
    }
    with pytest.raises(FileNotFoundError):
        bfcl_pkg.read_bfcl_jsonl("BFCL_v4_no_such_category.json")


def test_require_bfcl_missing(monkeypatch):
    monkeypatch.setattr(bfcl_pkg, "_verified_version", None)
    monkeypatch.setitem(sys.modules, "bfcl_eval", None)  # makes `import bfcl_eval` fail
    with pytest.raises(
        bfcl_pkg.BfclUnavailableError, match=r"pip install --no-deps bfcl-eval==2026\.3\.23"
    ):
        bfcl_pkg.require_bfcl()


@needs_bfcl
def test_require_bfcl_other_version_warns(monkeypatch):
    monkeypatch.setattr(bfcl_pkg, "_verified_version", None)
    monkeypatch.setattr(bfcl_pkg, "bfcl_version", lambda: "2025.1.1")
    with pytest.warns(UserWarning, match="2025.1.1 is installed"):
        assert bfcl_pkg.require_bfcl() == "2025.1.1"


def _run_fresh(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("BFCL_PROJECT_ROOT", None)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@needs_bfcl
def test_checker_import_is_light_and_does_not_leak():
    proc = _run_fresh(
        """
        import importlib, os, sys
        import bfcl_eval
        root = os.path.dirname(os.path.dirname(bfcl_eval.__file__))
        before = set(os.listdir(root))
        from callscope.benchmarks.bfcl import package as bfcl_pkg
        check = bfcl_pkg.ast_checker()
        assert bfcl_pkg.checker_model_name() == "callscope-reference"
        assert "bfcl_eval.constants.model_config" not in sys.modules
        assert not hasattr(sys.modules["bfcl_eval.constants"], "model_config")
        assert "bfcl_eval.utils" not in sys.modules
        assert "bfcl_eval.constants.eval_config" not in sys.modules
        assert "bfcl_eval.model_handler" not in sys.modules
        assert bfcl_pkg.ast_checker() is check
        # a second, from-scratch import works too
        del sys.modules["bfcl_eval.eval_checker.ast_eval.ast_checker"]
        bfcl_pkg._checker_cache = None
        again = bfcl_pkg.ast_checker()
        assert again is not check and callable(again)
        assert "bfcl_eval.constants.model_config" not in sys.modules
        print(sorted(set(os.listdir(root)) - before))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"  # no result/, score/, .file_locks/ in site-packages


@needs_bfcl
def test_failed_checker_import_leaves_nothing_behind():
    proc = _run_fresh(
        """
        import sys
        from callscope.benchmarks.bfcl import package as bfcl_pkg
        sys.modules["bfcl_eval.constants.type_mappings"] = None  # make the import fail
        try:
            bfcl_pkg.ast_checker()
        except ImportError:
            pass
        else:
            raise SystemExit("import should have failed")
        assert "bfcl_eval.constants.model_config" not in sys.modules
        assert "bfcl_eval.eval_checker.ast_eval.ast_checker" not in sys.modules
        del sys.modules["bfcl_eval.constants.type_mappings"]
        assert callable(bfcl_pkg.ast_checker())
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


# --------------------------------------------------------------------------- loading


@pytest.fixture(scope="module")
def loaded():
    if not HAS_BFCL:
        pytest.skip("bfcl_eval not installed")
    from callscope.benchmarks.bfcl.single import load_bfcl_single_detailed

    return load_bfcl_single_detailed()


@pytest.fixture(scope="module")
def by_id(loaded):
    return {c.id: c for c in loaded.cases}


def test_counts_per_category(loaded):
    assert loaded.loaded == {
        "simple_python": 400,
        "live_simple": 258,
        "multiple": 200,
        "live_multiple": 1053,
    }
    assert loaded.skipped == {k: {} for k in loaded.loaded}
    assert len(loaded.cases) == 1911
    assert len({c.id for c in loaded.cases}) == 1911


@needs_bfcl
def test_parallel_entries_are_skipped_with_reason():
    from callscope.benchmarks.bfcl.single import load_bfcl_single_detailed

    result = load_bfcl_single_detailed(["parallel"])
    assert result.cases == []
    assert result.skipped["parallel"] == {
        "calls=2": 109,
        "calls=3": 52,
        "calls=4": 36,
        "calls=8": 2,
        "calls=6": 1,
    }
    with pytest.raises(ValueError, match="not a single-turn Python AST category"):
        load_bfcl_single_detailed(["multi_turn_base"])


def test_first_simple_python_entry(by_id):
    case = by_id["simple_python_0"]
    assert (
        case.query == "Find the area of a triangle with a base of 10 units and height of 5 units."
    )
    assert case.gold["name"] == "calculate_triangle_area"
    assert case.gold["arguments"] == {"base": 10, "height": 5, "unit": "units"}
    assert case.gold["acceptable"]["unit"] == ["units", ""]
    assert case.meta == {"source": "bfcl", "category": "simple_python", "bfcl_version": "2026.3.23"}
    (spec,) = case.functions
    assert spec["parameters"]["properties"]["base"] == {
        "type": "integer",
        "description": "The base of the triangle.",
    }
    assert spec["parameters"]["required"] == ["base", "height"]
    assert Case.from_dict(case.to_dict()).to_dict() == case.to_dict()


def test_gold_value_rules(by_id):
    # ["", 0]: the first non-"" value is kept
    assert by_id["simple_python_2"].gold["name"] == "math.hypot"
    assert by_id["simple_python_2"].gold["arguments"] == {"x": 4, "y": 5, "z": 0}
    # dict answer resolved key by key
    assert by_id["simple_python_89"].gold["arguments"]["conditions"] == {
        "department": "Science",
        "school": "Bluebird High School",
    }
    # list of dict answers
    assert by_id["simple_python_96"].gold["arguments"]["conditions"] == [
        {"field": "age", "operation": ">", "value": "25"},
        {"field": "job", "operation": "=", "value": "engineer"},
    ]
    # ["", None] is omitted; ["", "ASC"] keeps "ASC"
    args = by_id["live_simple_30-8-0"].gold["arguments"]
    assert "filterName" not in args and "nextToken" not in args
    assert args["sortBy"] == "ASC" and args["maxResults"] == 50
    assert by_id["live_simple_30-8-0"].gold["acceptable"]["filterName"] == ["", None]
    # [None] alone: None is the only acceptable value
    assert by_id["live_multiple_1038-265-0"].gold["arguments"]["start_date"] is None
    # [""] alone: omitted
    assert "cc" not in by_id["simple_python_211"].gold["arguments"]


def test_system_message_goes_to_meta(by_id):
    case = by_id["live_multiple_1-0-1"]
    assert case.meta["system"] == (
        "You are an agent that is used for ordering food on your customers behalf "
        "using your functions"
    )
    assert case.query.startswith("NO SUGAR in my coffee loll.")
    assert "system" not in by_id["simple_python_0"].meta


@needs_bfcl
def test_sanitized_load_maps_names_back():
    from callscope.benchmarks.bfcl.single import bfcl_ast_verdict, load_bfcl_single

    cases = {c.id: c for c in load_bfcl_single(["simple_python"], sanitize_names=True)}
    case = cases["simple_python_1"]
    assert case.functions[0]["name"] == "math_factorial"
    assert case.gold["name"] == "math_factorial"
    assert case.meta["name_map"] == {"math_factorial": "math.factorial"}
    assert bfcl_ast_verdict(case, {"name": "math_factorial", "arguments": {"number": 5}}) == (
        True,
        None,
    )


# --------------------------------------------------------------------------- BFCL verdicts


def test_bfcl_accepts_gold_calls_except_known_defects(loaded):
    from callscope.benchmarks.bfcl.single import bfcl_ast_verdict

    rejected = {}
    for case in loaded.cases:
        valid, error = bfcl_ast_verdict(case, gold_call(case))
        assert valid == (error is None)
        if not valid:
            rejected[case.id] = error
    assert set(rejected) == set(BFCL_REJECTS_GOLD)
    for case_id, kind in BFCL_REJECTS_GOLD.items():
        assert rejected[case_id].startswith(f"simple_function_checker:{kind}")


def test_bfcl_verdicts_on_hand_made_calls(by_id):
    from callscope.benchmarks.bfcl.single import bfcl_ast_verdict

    case = by_id["simple_python_0"]
    ok = {"base": 10, "height": 5}

    def verdict(name, arguments):
        return bfcl_ast_verdict(case, {"name": name, "arguments": arguments})

    assert verdict("calculate_triangle_area", ok) == (True, None)
    assert verdict("calculate_triangle_area", {**ok, "unit": "Units "})[0]  # BFCL normalises
    assert verdict("calculate_triangle_area", {**ok, "base": 11})[1].startswith(
        "value_error:others"
    )
    assert verdict("calculate_triangle_area", {**ok, "base": "10"})[1].startswith(
        "type_error:simple"
    )
    assert verdict("calculate_triangle_area", {"base": 10})[1].startswith(
        "simple_function_checker:missing_required"
    )
    assert verdict("calculate_triangle_area", {**ok, "color": "red"})[1].startswith(
        "simple_function_checker:unexpected_param"
    )
    assert verdict("triangle_area", ok)[1].startswith("simple_function_checker:wrong_func_name")
    assert bfcl_ast_verdict(case, ToolCall("calculate_triangle_area", ok)) == (True, None)
    assert verdict("calculate_triangle_area", "base=10") == (
        False,
        "call arguments are not an object",
    )

    # multiple category: the other offered function is the wrong one
    multi = by_id["multiple_0"]
    args = {"side1": 5, "side2": 4, "side3": 3}
    assert bfcl_ast_verdict(multi, {"name": "triangle_properties.get", "arguments": args})[0]
    wrong = bfcl_ast_verdict(multi, {"name": "circle_properties.get", "arguments": args})
    assert wrong[1].startswith("simple_function_checker:wrong_func_name")

    # int accepted for a float parameter; a required parameter with "" in its list is still required
    fv = by_id["simple_python_30"]
    call = {"acceleration": 4, "distance": 300, "initial_velocity": 0}
    assert bfcl_ast_verdict(fv, {"name": fv.gold["name"], "arguments": call}) == (True, None)
    primes = by_id["simple_python_17"]
    assert primes.gold["acceptable"]["formatted"] == [True, ""]
    missing = bfcl_ast_verdict(primes, {"name": "get_prime_factors", "arguments": {"number": 450}})
    assert missing[1].startswith("simple_function_checker:missing_required")


@needs_bfcl
def test_verdict_on_raw_entry():
    from callscope.benchmarks.bfcl.single import bfcl_ast_verdict

    entry = bfcl_pkg.read_bfcl_jsonl("BFCL_v4_simple_python.json")[1]
    assert bfcl_ast_verdict(entry, {"name": "math.factorial", "arguments": {"number": 5}}) == (
        True,
        None,
    )
    assert not bfcl_ast_verdict(entry, {"name": "math.factorial", "arguments": {"number": 6}})[0]


# --------------------------------------------------------------------------- perturbations


def _toy_case() -> Case:
    return Case(
        id="toy",
        query="q",
        functions=[
            {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "s": {"type": "string"}},
                    "required": ["a"],
                },
            },
            {"name": "g", "parameters": {"type": "object", "properties": {}}},
        ],
        gold={
            "name": "f",
            "arguments": {"a": 5},
            "acceptable": {"a": [5, 6], "s": ["", "x"]},
        },
    )


def test_perturbed_calls_on_toy_case():
    calls = perturbed_calls(_toy_case(), random.Random(0))
    assert calls["wrong_value"] == {"name": "f", "arguments": {"a": 7}}  # 6 is acceptable
    assert calls["wrong_type"] == {"name": "f", "arguments": {"a": "5"}}
    assert calls["missing_required"] == {"name": "f", "arguments": {}}
    assert calls["extra_argument"] == {
        "name": "f",
        "arguments": {"a": 5, "extra_argument": "unexpected"},
    }
    assert calls["wrong_name"] == {"name": "g", "arguments": {"a": 5}}


def test_perturbed_string_avoids_bfcl_equivalents():
    case = Case(
        id="s",
        query="q",
        functions=[{"name": "f", "parameters": {"properties": {"u": {"type": "string"}}}}],
        gold={
            "name": "f",
            "arguments": {"u": "New York"},
            "acceptable": {"u": ["New York", "newyorkzq"]},
        },
    )
    calls = perturbed_calls(case, random.Random(0))
    # "New Yorkzq" normalises to "newyorkzq", which is acceptable, so one more suffix
    assert calls["wrong_value"]["arguments"] == {"u": "New Yorkzqzq"}
    assert calls["wrong_type"]["arguments"] == {"u": 1}
    assert calls["missing_required"] is None and calls["wrong_name"] is None


def test_every_perturbation_kind_is_rejected_by_bfcl(by_id):
    from callscope.benchmarks.bfcl.agreement import PERTURBATION_KINDS
    from callscope.benchmarks.bfcl.single import bfcl_ast_verdict

    seen = set()
    for case_id in ("simple_python_0", "simple_python_89", "multiple_0", "live_multiple_1-0-1"):
        case = by_id[case_id]
        for kind, call in perturbed_calls(case, random.Random(1)).items():
            if call is None:
                continue
            seen.add(kind)
            valid, error = bfcl_ast_verdict(case, call)
            assert not valid, (case_id, kind, call)
            assert error
    assert seen == set(PERTURBATION_KINDS)


# --------------------------------------------------------------------------- agreement harness


def test_agreement_report_counts(by_id):
    from callscope.benchmarks.bfcl.agreement import agreement_report
    from callscope.benchmarks.bfcl.single import bfcl_ast_verdict

    cases = [by_id["simple_python_0"], by_id["simple_python_17"], by_id["multiple_0"]]

    same = agreement_report(cases, lambda c, call: bfcl_ast_verdict(c, call)[0])
    # 3 gold + 5 kinds for multiple_0 + 4 kinds for each single-function case
    assert same["total"] == 3 + 5 + 4 + 4
    assert same["agree"] == same["total"] and same["disagree"] == 0
    assert same["skipped"] == {"wrong_name": 2}
    assert same["disagreements"] == []

    lenient = agreement_report(cases, lambda c, call: True)
    assert lenient["agree"] == 3  # only the gold calls are valid for BFCL
    assert lenient["disagree"] == 13
    assert lenient["by_kind"]["gold"] == {
        "total": 3,
        "agree": 3,
        "disagree": 0,
        "bfcl_valid": 3,
        "score_valid": 3,
    }
    assert lenient["by_kind"]["wrong_name"]["disagree"] == 1
    assert {d["kind"] for d in lenient["disagreements"]} == {
        "wrong_value",
        "wrong_type",
        "missing_required",
        "extra_argument",
        "wrong_name",
    }
    example = lenient["disagreements"][0]
    assert example["bfcl_valid"] is False and example["score_valid"] is True
    assert example["bfcl_error"]

    only_gold = agreement_report(cases, lambda c, call: True, perturb=False, max_examples=0)
    assert only_gold["total"] == 3 and list(only_gold["by_kind"]) == ["gold"]


def test_agreement_report_finds_exact_match_pitfall(by_id):
    """A grader comparing with the acceptable lists literally misses BFCL's dict answers."""
    from callscope.benchmarks.bfcl.agreement import agreement_report

    def literal(case, call):
        acceptable = case.gold["acceptable"]
        return call["name"] == case.gold["name"] and all(
            v in acceptable.get(k, []) for k, v in call["arguments"].items()
        )

    report = agreement_report([by_id["simple_python_89"]], literal, perturb=False)
    assert report["disagree"] == 1
    (d,) = report["disagreements"]
    assert d["kind"] == "gold" and d["bfcl_valid"] is True and d["score_valid"] is False


def test_model_name_when_real_model_config_was_imported_first():
    from types import SimpleNamespace

    real_like = {
        "org/model_x": SimpleNamespace(underscore_to_dot=False),  # "_" cannot round-trip
        "gpt-4": SimpleNamespace(underscore_to_dot=True),
        "org/model-y": SimpleNamespace(underscore_to_dot=False),
    }
    # the checker looks up model_name.replace("_", "/"): "org_model-y" -> "org/model-y"
    assert bfcl_pkg._model_name_for(real_like) == "org_model-y"
    with pytest.raises(RuntimeError):
        bfcl_pkg._model_name_for({"gpt-4": SimpleNamespace(underscore_to_dot=True)})
