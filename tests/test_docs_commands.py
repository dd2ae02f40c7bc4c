"""Every command the README and the documentation pages show runs, and prints what they show.

The convention (also stated in ``docs/index.md``, "Writing these pages"):

* A fenced block in ``console`` is a session that this test runs. A line starting with ``$ ``
  is a command (a line ending in ``\\`` goes on on the next line; a here-document
  ``<<'END'`` takes the lines up to ``END``); the lines after it, up to the next command, are
  output the command must print, in that order, anywhere in its stdout or stderr (runs of
  white space compare as one space, and so do a terminal table's borders; ``...`` on a line of its own skips any output, inside a
  line any text). Every command must exit 0 unless an ``<!-- exit: N -->`` comment precedes
  the block (then each command of the block must exit N).
* The blocks of one page run in order in one scratch directory that looks like the
  repository root (its top-level entries linked in, ``../shared`` beside it when the
  repository has one), so a page may write a file in one block and read it in the next and
  nothing is written into the repository.
* A block in ``bash``, ``sh``, ``shell`` or ``console`` that cannot run here (an install, a
  model run of minutes, a GPU, a network, a server left running) is preceded by
  ``<!-- not-tested: REASON -->``; the test fails on any shell block with neither.
* ``<!-- needs: external -->`` before a block skips the page from that block on when
  ``../shared/external`` is absent; ``<!-- needs: python:MODULE -->`` when MODULE does not
  import.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTERNAL = ROOT.parent / "shared" / "external"
SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh", "shell-session"}
#: one command may build a benchmark or read real result trees: generous on a loaded machine
COMMAND_TIMEOUT_S = 600

_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
_COMMENT = re.compile(r"^<!--\s*([\w-]+)\s*:\s*(.*?)\s*-->$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
#: a terminal table's rules and borders (U+2500-U+257F): a shown row matches with or without them
_BOX = re.compile("[\u2500-\u257f]")


@dataclass
class Command:
    line: str
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    page: str
    lineno: int
    lang: str
    text: str
    marks: dict[str, str]

    @property
    def where(self) -> str:
        return f"{self.page}:{self.lineno}"

    def commands(self) -> list[Command]:
        """The ``$ `` commands of a console block, each with the output lines shown after it."""
        out: list[Command] = []
        lines = self.text.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.startswith("$ "):
                if out:
                    out[-1].shown.append(line)
                elif line.strip():
                    raise AssertionError(f"{self.where}: output before the first `$ ` command")
                i += 1
                continue
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd += "\n" + lines[i]
            heredoc = _HEREDOC.search(cmd)
            if heredoc:
                end = heredoc.group(2)
                while i + 1 < len(lines):
                    i += 1
                    cmd += "\n" + lines[i]
                    if lines[i] == end:
                        break
                else:
                    raise AssertionError(f"{self.where}: here-document without its {end} line")
            out.append(Command(cmd))
            i += 1
        return out


def doc_pages() -> list[Path]:
    """The README and every Markdown page of the documentation site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def shell_blocks(path: Path) -> list[Block]:
    """The fenced shell blocks of a page, each with the ``<!-- key: value -->`` comments on
    the lines just before its fence (blank lines between them allowed)."""
    rel = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        if lang in SHELL_LANGS:
            marks: dict[str, str] = {}
            k = start - 1
            while k >= 0 and (not lines[k].strip() or _COMMENT.match(lines[k].strip())):
                c = _COMMENT.match(lines[k].strip())
                if c:
                    marks.setdefault(c.group(1), c.group(2))
                k -= 1
            body = "\n".join(lines[start + 1 : j])
            blocks.append(Block(rel, start + 1, lang, body, marks))
        i = j + 1
    return blocks


ALL_PAGES = doc_pages()


def _normalise(text: str) -> str:
    return " ".join(_BOX.sub(" ", _ANSI.sub("", text)).split())


def check_shown(shown: list[str], actual: str) -> str | None:
    """None when every shown line is found in ``actual`` in order (``...`` elides), else the
    first line that is not."""
    text = _normalise(actual)
    pos = 0
    for line in shown:
        if not line.strip() or line.strip() == "...":
            continue
        for piece in line.split("..."):
            piece = _normalise(piece)
            if not piece:
                continue
            found = text.find(piece, pos)
            if found < 0:
                return line
            pos = found + len(piece)
    return None


def _scratch(tmp: Path) -> Path:
    """A directory that looks like the repository root, with ``../shared`` beside it."""
    work = tmp / "repo"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in {".git", "runs", "site", ".venv"} or entry.name.startswith("."):
            continue
        (work / entry.name).symlink_to(entry)
    shared = ROOT.parent / "shared"
    if shared.exists():
        (tmp / "shared").symlink_to(shared)
    return work


def _env(tmp: Path) -> dict[str, str]:
    """The caller's environment, with ``python`` this interpreter and ``callscope`` its
    console script (or ``python -m callscope.cli`` where none is installed), this tree's
    package first, and caches in the scratch directory."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    # a script, not a symbolic link: Python finds its virtual environment next to the path it
    # was started by, and a link in another folder to a venv's link to the base interpreter
    # starts the base interpreter without the venv's packages
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    exe = shutil.which("callscope")
    if exe is None:
        shim = bin_dir / "callscope"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m callscope.cli "$@"\n')
        shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p
    )
    env["CALLSCOPE_PROGRESS"] = "off"
    # a fresh response cache: a replayed run must not be answered from an earlier one
    env["CALLSCOPE_CACHE"] = str(tmp / "cache")
    return env


def _skip_reason(block: Block) -> str | None:
    need = block.marks.get("needs")
    if need is None:
        return None
    if need == "external":
        return None if EXTERNAL.is_dir() else "needs ../shared/external"
    if need.startswith("python:"):
        module = need.removeprefix("python:")
        return None if importlib.util.find_spec(module) else f"needs the {module} module"
    raise AssertionError(f"{block.where}: unknown need {need!r}")


def test_every_shell_block_is_tested_or_says_why_not() -> None:
    """A shell block is a ``console`` session (run below) or carries a not-tested reason."""
    bad = [
        b.where
        for p in ALL_PAGES
        for b in shell_blocks(p)
        if "not-tested" not in b.marks and b.lang != "console"
    ]
    assert not bad, f"shell blocks neither `console` nor marked <!-- not-tested: reason -->: {bad}"
    empty = [b.where for p in ALL_PAGES for b in shell_blocks(p) if b.marks.get("not-tested") == ""]
    assert not empty, f"not-tested without a reason: {empty}"
    untested = [
        b.where
        for p in ALL_PAGES
        for b in shell_blocks(p)
        if b.lang == "console" and "not-tested" not in b.marks
    ]
    assert untested, "no page shows a command that this test runs"


def test_readme_test_command_is_what_ci_runs() -> None:
    """The README's test command is .ci/run's command that runs pytest, character for
    character (after it .ci/run only repeats the LiteLLM tests under litellm 1.108.x)."""
    ci_last = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#") and "python -m pytest" in line
    ][-1]
    shown = [
        c.line
        for b in shell_blocks(ROOT / "README.md")
        if b.marks.get("not-tested")
        for c in (Block(b.page, b.lineno, "console", b.text, {}).commands())
    ]
    assert ci_last in shown, f".ci/run's test command is not in the README: {ci_last}"


def runnable(page: Path) -> list[Block]:
    """The blocks of ``page`` this test runs."""
    return [b for b in shell_blocks(page) if b.lang == "console" and "not-tested" not in b.marks]


@pytest.mark.parametrize(
    "page",
    [p for p in ALL_PAGES if runnable(p)],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_page_commands_print_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    """Each page's commands, in order, in one scratch directory: exit status and output."""
    blocks = runnable(page)
    work = _scratch(tmp_path)
    env = _env(tmp_path)
    for block in blocks:
        reason = _skip_reason(block)
        if reason:
            pytest.skip(f"{block.where} and after: {reason}")
        want_rc = int(block.marks.get("exit", "0"))
        for cmd in block.commands():
            proc = subprocess.run(
                cmd.line,
                shell=True,
                executable="/bin/bash",
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_S,
            )
            actual = proc.stdout + proc.stderr
            assert proc.returncode == want_rc, (
                f"{block.where}: `{cmd.line}` exited {proc.returncode}, not {want_rc}:\n{actual[-3000:]}"
            )
            missing = check_shown(cmd.shown, actual)
            assert missing is None, (
                f"{block.where}: `{cmd.line}` did not print {missing!r}; it printed:\n{actual[-3000:]}"
            )


def test_check_shown_reads_elisions() -> None:
    """The comparison the page test relies on: order, white space, ``...``."""
    out = "a  b\nfirst\nmiddle\nlast line: 3 of 4\n"
    assert check_shown(["a b", "...", "last line: ... of 4"], out) is None
    assert check_shown(["last line", "first"], out) == "first"
    assert check_shown(["absent"], out) == "absent"


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason='needs the docs extra (pip install -e ".[docs]")',
)
def test_docs_site_builds_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict` passes: every page in the nav, every link and anchor resolves."""
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()
