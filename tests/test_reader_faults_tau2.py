"""A published τ²-bench run file made wrong on purpose (copies under tmp_path of
``../shared/external/tau2``, never copied here): a repeated simulation and rewards that are
not a number in [0, 1] are dropped and said, never counted silently. Run through the CLI;
the expected Acc is worked out here from the file with json."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXTERNAL = Path(__file__).resolve().parents[2] / "shared" / "external" / "tau2"
RUN = EXTERNAL / "blakeelias_grok3_airline.json"
pytestmark = pytest.mark.skipif(not RUN.is_file(), reason="no ../shared/external/tau2")


def _from_tau2(path: Path, out: Path) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    done = subprocess.run(
        [*cmd, "calibrate", "from-tau2", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads((out / "tau2-diagnostics.json").read_text(encoding="utf-8")), done


def _acc(data: dict[str, Any]) -> tuple[int, int, int, int]:
    (row,) = data["acc_rows"]
    return row["acc_k"], row["acc_n"], row["n_no_reward"], row["n_simulations"]


def test_a_repeated_simulation_is_dropped_and_said(tmp_path):
    """F5: five simulations appended a second time were counted twice, with no message."""
    data = json.loads(RUN.read_text(encoding="utf-8"))
    sims = data["simulations"]
    passed = sum(s["reward_info"]["reward"] == 1 for s in sims)
    data["simulations"] = sims + copy.deepcopy(sims[:5])
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    out, _ = _from_tau2(path, tmp_path / "out")
    assert _acc(out) == (passed, len(sims), 0, len(sims)) == (11, 20, 0, 20)
    said = [p for p in out["problems"] if "repeat an id already read" in p]
    assert len(said) == 1 and said[0].startswith(f"{path}: 5 simulations repeat")
    assert sims[0]["id"] in said[0]


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "1e999", "2.0", "-1.0"])
def test_a_reward_out_of_range_is_no_reward_not_a_failure(tmp_path, bad):
    """F6: NaN, an infinity, 2.0 and -1.0 counted as failed simulations without a word."""
    data = json.loads(RUN.read_text(encoding="utf-8"))
    sims = data["simulations"]
    first_pass = next(i for i, s in enumerate(sims) if s["reward_info"]["reward"] == 1)
    first_fail = next(i for i, s in enumerate(sims) if s["reward_info"]["reward"] == 0)
    marker = "__BAD_REWARD__"
    for i in (first_pass, first_fail):
        sims[i]["reward_info"]["reward"] = marker
    kept = [s for i, s in enumerate(sims) if i not in (first_pass, first_fail)]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data).replace(f'"{marker}"', bad), encoding="utf-8")
    out, _ = _from_tau2(path, tmp_path / "out")
    passed = sum(s["reward_info"]["reward"] == 1 for s in kept)
    assert _acc(out) == (passed, len(kept), 2, len(sims)) == (10, 18, 2, 20)
    said = [p for p in out["problems"] if "not a number in [0, 1]" in p]
    assert len(said) == 1 and "2 simulations have a reward" in said[0]
    assert "read as no reward, left out of Acc" in said[0]


def test_a_partial_reward_stays_a_reward(tmp_path):
    """τ² rewards may be partial (0 <= reward <= 1): 0.5 is read, and Acc stays
    ``reward == 1`` (shared/reference: ``Acc = reward == 1``)."""
    data = json.loads(RUN.read_text(encoding="utf-8"))
    sims = data["simulations"]
    first_pass = next(i for i, s in enumerate(sims) if s["reward_info"]["reward"] == 1)
    sims[first_pass]["reward_info"]["reward"] = 0.5
    path = tmp_path / "half.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    out, _ = _from_tau2(path, tmp_path / "out")
    assert _acc(out) == (10, 20, 0, 20)
    assert not [p for p in out["problems"] if "reward" in p]
