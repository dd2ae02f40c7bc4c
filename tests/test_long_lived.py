"""The knowledge tables are frozen (``gc.freeze``) only in a process callscope owns: the
``callscope`` command; a library import inside a host's process (an agent, a LiteLLM
server) never freezes, since the host's own objects alive at that moment would be frozen
with the tables (issue 49). Each case runs in a fresh interpreter: the freeze is
process-wide and the tables load once."""

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


def test_a_library_import_never_freezes_the_hosts_objects() -> None:
    assert _freeze_counts("") == (0, 0)


def test_the_callscope_command_freezes_the_tables_it_loads() -> None:
    # the console script's main, as `callscope --help` runs it, then a table loaded
    prelude = (
        "import sys; sys.argv = ['callscope', '--help']; from callscope.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )
    before, after = _freeze_counts(prelude)
    assert before == 0
    assert after > 0
