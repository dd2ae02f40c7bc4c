"""Headless Chromium for the report's browser tests (Debian's package; `.ci/run` installs it).

``dump_dom`` serialises the DOM after the page's scripts ran; ``screenshot`` saves a PNG of
the first screen at a given window size; ``measure`` reports where elements sit on that
screen (it loads a copy of the page with one measuring script appended: the page itself is
not changed).
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
#: where screenshots go (``$CALLSCOPE_TEST_ARTIFACTS``, default ``<repo>/test-artifacts``)
ARTIFACTS = Path(
    os.environ.get("CALLSCOPE_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[1] / "test-artifacts"
)
#: screenshots saved in this test session (the run's summary prints where they are)
SAVED: list[Path] = []
_MEASURE = re.compile(r'<pre id="cs-measure">([^<]*)</pre>')
_MEASURE_JS = """
<script>
window.addEventListener('load', () => {
  const box = (sel) => {
    const el = document.querySelector(sel);
    if (!el) return null;
    const r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right,
            width: r.width, height: r.height};
  };
  const out = {width: window.innerWidth, height: window.innerHeight, boxes: {}};
  for (const sel of SELECTORS) out.boxes[sel] = box(sel);
  const pre = document.createElement('pre');
  pre.id = 'cs-measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def dump_dom(
    report: Path, profile: Path, hash_: str = "", window: tuple[int, int] | None = None
) -> str:
    """The DOM of ``report`` (with ``#hash_``) after its scripts ran, as Chromium serialises it."""
    url = report.resolve().as_uri() + (f"#{hash_}" if hash_ else "")
    size = [f"--window-size={window[0]},{window[1]}"] if window else []
    proc = _run([f"--user-data-dir={profile}", *size, "--dump-dom", url])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def screenshot(report: Path, profile: Path, out: Path, window: tuple[int, int]) -> Path:
    """A PNG of the first ``window`` = (width, height) pixels of ``report``, saved at ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    proc = _run(
        [
            f"--user-data-dir={profile}",
            f"--window-size={window[0]},{window[1]}",
            f"--screenshot={out}",
            report.resolve().as_uri(),
        ]
    )
    assert proc.returncode == 0 and out.is_file(), proc.stderr[-2000:]
    SAVED.append(out)
    return out


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def measure(
    report: Path, profile: Path, selectors: list[str], window: tuple[int, int]
) -> dict[str, object]:
    """``{"width", "height", "boxes": {selector: {top, bottom, left, right, width, height} or
    None}}``: the viewport and where each selector's first element lies once the page (and its
    images) loaded, in a ``window``-sized headless window."""
    page = report.read_text(encoding="utf-8")
    js = _MEASURE_JS.replace("SELECTORS", json.dumps(selectors))
    copy = report.with_name(report.stem + ".measure.html")
    copy.write_text(page.replace("</body>", js + "</body>", 1), encoding="utf-8")
    m = _MEASURE.search(dump_dom(copy, profile, window=window))
    assert m, "the measuring script did not run"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
