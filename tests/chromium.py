"""Headless Chromium for the report's browser tests (Debian's package; `.ci/run` installs it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")


def dump_dom(report: Path, profile: Path, hash_: str = "") -> str:
    """The DOM of ``report`` (with ``#hash_``) after its scripts ran, as Chromium serialises it."""
    url = report.resolve().as_uri() + (f"#{hash_}" if hash_ else "")
    proc = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout
