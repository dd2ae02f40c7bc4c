"""An offer of further work is not an ASK (issue 29, item 16), measured as a detector.

The ASK class is a detector of "the model asked the user for something it needs". Known-
correct inputs (negatives): completed work followed by an offer ("Would you like me to
...?"): no information is asked for, so ASK there is a false alarm. Inputs made wrong on
purpose (positives): the same replies with a real request for a missing value put in (a
question about the value, alone, after the completion, or before the offer), which ASK must
detect. Counts are by construction: every negative must be non-ASK, every positive ASK.
The rule before the change (offers kept as prose: ``rules._OFFERS`` emptied) is measured
side by side through the real ``callscope classify`` command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from callscope.calibration.classify import DEFAULT, classify_emission
from callscope.calibration.classify import rules as rules_module

DONE = (
    "I've created the file report.txt in the documents folder.",
    "The file has been moved to the archive directory.",
    "Done: I sorted the three files by name.",
    "I have posted the tweet with the hashtags you gave.",
)
OFFERS = (
    "Would you like me to add any content to it?",
    "Do you want me to do anything else with these files?",
    "Would you like to see the contents of the folder?",
    "If you'd like, I can also compress it.",
    "Want me to send a copy to your team as well?",
)
ASKS = (
    "Which folder should I move it to?",
    "Could you tell me the name of the file?",
    "Please provide the recipient's user id.",
    "What should the new file be called?",
)


def _negatives() -> list[str]:
    return [f"{d} {o}" for d in DONE for o in OFFERS]


def _positives() -> list[str]:
    # a missing value asked for: alone, after the completion, before an offer, or an offer
    # that puts a choice to the user
    out = [a for a in ASKS]
    out += [f"{d} {a}" for d in DONE for a in ASKS]
    out += [f"{a} {o}" for a in ASKS for o in OFFERS]
    out += [f"{d} Would you like me to name it draft.txt or final.txt?" for d in DONE]
    return out


def _ask_count(texts: list[str]) -> int:
    return sum(classify_emission(t, DEFAULT) == "ASK" for t in texts)


def test_offers_after_completed_work_are_not_asks_and_real_asks_still_are() -> None:
    neg, pos = _negatives(), _positives()
    assert (len(neg), len(pos)) == (20, 44)
    # false alarms 0/20, detection 44/44
    assert (_ask_count(neg), _ask_count(pos)) == (0, 44)


def test_before_the_change_every_offer_was_a_false_alarm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules_module, "_OFFERS", ())
    # the old rule: "?" or "would you" in every offer but "If you'd like, I can ..." (4 of 20)
    assert (_ask_count(_negatives()), _ask_count(_positives())) == (16, 44)


def test_classify_command_side_by_side(tmp_path: Path) -> None:
    rows = [{"id": f"n{i}", "emission": t} for i, t in enumerate(_negatives())]
    rows += [{"id": f"p{i}", "emission": t} for i, t in enumerate(_positives())]
    src = tmp_path / "emissions.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "classes.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "callscope.cli", "classify", str(src), "-o", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    cls = {r["id"]: r.get("class") or r.get("action_class") for r in got}
    false_alarms = sum(cls[f"n{i}"] == "ASK" for i in range(20))
    detected = sum(cls[f"p{i}"] == "ASK" for i in range(44))
    print(
        f"offer rule: false alarms {false_alarms}/20, detection {detected}/44 (before: 16/20, 44/44)"
    )
    assert (false_alarms, detected) == (0, 44)


@pytest.mark.parametrize(
    "text",
    [
        # no work reported done: the offer is the question the turn puts to the user
        "I can cancel reservation Q69X3R for a full refund. Would you like me to do that?",
        "I have not made any changes. Would you like me to look up other flights?",
        # a permission to go on, or a choice, stays an ask even after work done
        "I've found your reservation. Would you like me to proceed with the cancellation?",
        "I've created the folder. Would you like me to name the file a.txt or b.txt?",
    ],
)
def test_offers_that_stay_asks(text: str) -> None:
    assert classify_emission(text, DEFAULT) == "ASK"
