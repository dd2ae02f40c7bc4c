"""Bounded simulator calls and exact argument names (issue 15, items 3, 5 and 10)."""

from __future__ import annotations

import decimal

import pytest

pytest.importorskip("bfcl_eval")

import mpmath  # noqa: E402

from callscope.benchmarks.bfcl.env import (  # noqa: E402
    COST_GUARDS,
    CallRejected,
    SafeEnv,
    bfcl_sandbox,
    check_literal,
    validate_call,
)
from callscope.parse import read_python_calls  # noqa: E402
from callscope.types import ToolCall  # noqa: E402

MATH = {"power", "logarithm", "square_root", "round_number"}


@pytest.fixture
def math_env(mt_by_id):
    case = mt_by_id["multi_turn_base_15"]  # GorillaFileSystem + MathAPI
    assert "MathAPI" in case.involved_classes
    return SafeEnv(case), set(case.available_at(0)) | MATH


@pytest.mark.parametrize(
    ("name", "arguments", "bound"),
    [
        ("power", {"base": 10, "exponent": 10**8}, "exceed 65536 bits"),
        ("power", {"base": -3, "exponent": 50_000}, "exceed 65536 bits"),
        ("logarithm", {"value": 10, "base": 2, "precision": 10**7}, "precision above 1000"),
        ("square_root", {"number": 2, "precision": 10**7}, "precision above 1000"),
        ("round_number", {"number": 5, "decimal_places": -(10**8)}, "beyond 1000 digits"),
    ],
)
def test_over_bound_calls_get_a_clear_error_and_never_run(math_env, name, arguments, bound):
    env, available = math_env
    (res,) = env.execute([ToolCall(name, arguments)], available)
    assert (res.accepted, res.reason, res.call) == (False, "too_costly", None)
    assert res.output.startswith(f"Error: call to '{name}' exceeds the execution bounds (")
    assert bound in res.output


def test_in_bound_calls_run_and_leave_no_precision_behind(math_env):
    env, available = math_env
    dps, prec = mpmath.mp.dps, decimal.getcontext().prec
    out = env.execute(
        [
            ToolCall("power", {"base": 2, "exponent": 10}),
            ToolCall("power", {"base": 10, "exponent": -(10**8)}),  # a float: cheap
            ToolCall("logarithm", {"value": 8, "base": 2, "precision": 30}),
            ToolCall("square_root", {"number": 2, "precision": 12}),
        ],
        available,
    )
    assert [r.accepted for r in out] == [True] * 4
    assert out[0].output == '{"result": 1024}'
    assert out[1].output == '{"result": 0.0}'
    # ln 8 / ln 2 at 30 digits, as mpmath rounds it: 30 significant digits were used
    assert out[2].output == "{'result': mpf('2.99999999999999999999999999999961')}"
    assert out[3].output == "{'result': Decimal('1.41421356237')}"
    assert (mpmath.mp.dps, decimal.getcontext().prec) == (dps, prec)
    with bfcl_sandbox():
        mpmath.mp.dps = 5000  # what BFCL's checker replaying a logarithm does
    assert mpmath.mp.dps == dps


def test_huge_integers_are_refused_before_repr():
    with pytest.raises(CallRejected, match="longer than 14000 bits"):
        check_literal([16**4000])
    with pytest.raises(CallRejected) as info:
        validate_call(ToolCall("cd", {"folder": 16**4000}), {"cd"})
    assert info.value.reason == "too_large"


@pytest.mark.parametrize("key", ["folder\n", "folder\n\n", "\nfolder"])
def test_a_trailing_newline_does_not_make_a_name(mt_by_id, key):
    case = mt_by_id["multi_turn_base_0"]
    (res,) = SafeEnv(case).execute([ToolCall("cd", {key: "document"})], case.available_at(0))
    assert (res.accepted, res.reason, res.call) == (False, "bad_argument_name", None)
    with pytest.raises(CallRejected):
        validate_call(ToolCall("cd\n", {"folder": "document"}), {"cd\n"})


def test_no_gold_call_of_bfcl_multi_turn_is_refused(mt_by_id):
    """False alarms of the bounds on known-correct inputs: every gold call of the 800 cases
    (4,625 calls, 16 of them to a guarded function) passes the guards and the literal check."""
    total = guarded = refused = 0
    for case in mt_by_id.values():
        for turn in case.ground_truth:
            for text in turn:
                for call in read_python_calls(text):
                    total += 1
                    for value in call.kwargs.values():
                        check_literal(value)
                    if call.name in COST_GUARDS:
                        guarded += 1
                        refused += COST_GUARDS[call.name](call.kwargs) is not None
    assert (total, guarded, refused) == (4625, 16, 0)
