"""The knowledge tables are frozen (``gc.freeze``) only in a process callscope owns: the
``callscope`` command; a library import inside a host's process (an agent, a LiteLLM
server) never freezes, since the host's own objects alive at that moment would be frozen
with the tables (issue 49). Each case runs in a fresh interpreter: the freeze is
process-wide and the tables load once. The same command, a batch one, also collects young
objects less often (``OWN_GC_THRESHOLD``); ``callscope serve`` and a library import keep the
collector's settings."""

from __future__ import annotations

import subprocess
import sys

LOAD_CITIES = (
    "import gc; from callscope.saag.normalise.knowledge.cities import table; "
    "before = gc.get_freeze_count(); table(); print(before, gc.get_freeze_count())"
)


def _freeze_counts(prelude: str) -> tuple[int, int]:
    code = prelude + LOAD_CITIES
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    before, after = out.stdout.splitlines()[-1].split()  # the last line: after any help text
    return int(before), int(after)


def _command(*argv: str) -> str:
    """``callscope ARGV`` run by the console script's main, as a user types it."""
    return (
        f"import sys; sys.argv = ['callscope', *{argv!r}]; from callscope.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )


def test_a_library_import_never_freezes_the_hosts_objects() -> None:
    assert _freeze_counts("") == (0, 0)


def test_the_callscope_command_freezes_the_tables_it_loads() -> None:
    # the console script's main, as `callscope --help` runs it, then a table loaded
    before, after = _freeze_counts(_command("--help"))
    assert before == 0
    assert after > 0


THRESHOLDS = "import gc; print(*gc.get_threshold())"


def _thresholds(prelude: str) -> list[tuple[int, ...]]:
    """The collector's thresholds of a fresh interpreter before and after ``prelude``."""
    code = f"{THRESHOLDS}\n{prelude}{THRESHOLDS}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    return [tuple(map(int, lines[0].split())), tuple(map(int, lines[-1].split()))]


def test_a_library_import_keeps_the_hosts_collector_settings() -> None:
    before, after = _thresholds(
        "import callscope; from callscope.saag.cascade import diagnose\ndiagnose(None, [], 'hi')\n"
    )
    assert after == before


def test_a_batch_command_collects_young_objects_less_often() -> None:
    from callscope.saag.normalise.knowledge.base import OWN_GC_THRESHOLD

    before, after = _thresholds(_command("score", "--help"))
    # the youngest generation waits for 20,000 allocations; the older ones keep their settings
    assert OWN_GC_THRESHOLD == 20_000
    assert after == (20_000, *before[1:])
    assert before[0] < 20_000


def test_the_server_keeps_the_collectors_settings() -> None:
    before, after = _thresholds(_command("serve", "--help"))
    assert after == before
