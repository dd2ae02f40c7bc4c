"""Load Glaive function-calling v2 into single-call evaluation cases (the SAAG benchmark source).

The published corpus (``glaiveai/glaive-function-calling-v2``) is one JSON list of
``{"system", "chat"}`` objects; JSON Lines of the same objects is accepted too. Each row
is parsed as follows:

* ``system``: the function specs are the JSON objects that follow the
  "access to the following functions" header (4-space indented, separated by blank lines).
  They are read with ``json.JSONDecoder.raw_decode`` object by object, so braces inside
  descriptions cannot confuse the scan. "no access to external functions" means none.
* ``chat``: turns start with ``USER:``, ``ASSISTANT:`` or ``FUNCTION RESPONSE:`` at the
  beginning of a line; `` <|endoftext|>`` is removed.
* every ``<functioncall>`` in an assistant turn is one call. Its ``arguments`` may be a
  JSON string in single quotes (possibly over several lines, possibly holding an
  unescaped apostrophe such as ``'{"title": "Harry's book"}'``), a raw JSON object, a
  double-quoted JSON string, or missing (read as ``{}``). The payload is read by
  :func:`callscope.parse.read_functioncall`, the reader the model-output parser uses too.

Filtering follows the paper (section 3 and Appendix C): a row becomes a ``Case`` only when
the whole chat holds exactly one call, every function schema is well formed, the call
parses to an object and names one of the row's functions, and its query is new. Each
dropped row is counted under exactly one reason, checked in this order:

``malformed_row`` (not an object with string ``system`` and ``chat``), ``no_functions``,
``malformed_schema``, ``no_call``, ``multiple_calls``, ``unparseable_call``,
``call_not_in_functions``, ``no_user_query`` (no non-empty USER turn before the call),
``duplicate_query`` (the same stripped query as an earlier kept row; the first is kept).

Schemas are standardised as the paper describes ("typed parameters and explicit required
fields"): a function whose ``parameters`` lacks ``properties`` or ``required`` gets ``{}``
or ``[]`` added; anything else that is off (no name, ``parameters.type`` not ``"object"``, an
untyped property, ``required`` not a list of existing property names) is ``malformed_schema``.

The hub is used only when asked (``allow_hub=True``, the CLI's ``--allow-download``): the
file is fetched once with ``httpx`` into the cache folder and read from there afterwards.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from filelock import FileLock

from callscope.core.jsonl import (
    TooDeep,
    loads_bounded,
    raw_decode_bounded,
    read_jsonl,
    read_text_bounded,
)
from callscope.core.paths import datasets_dir
from callscope.errors import DataFormatError
from callscope.parse import read_functioncall
from callscope.types import Case, ToolCall

HUB_PREFIX = "hf:"
HUB_DATASET = "glaiveai/glaive-function-calling-v2"
HUB_FILE = "glaive-function-calling-v2.json"
DEFAULT_HUB_ENDPOINT = "https://huggingface.co"

_NO_FUNCTIONS_MARK = "no access to external functions"
_CALL_TAG = "<functioncall>"
_END_TAG = "<|endoftext|>"
_TURN_RE = re.compile(r"(?m)^[ \t]*(USER|ASSISTANT|FUNCTION RESPONSE):[ \t]?")
_DECODER = json.JSONDecoder(strict=False)
#: a lone surrogate: what the ``surrogateescape`` reading of a JSON-list file makes of a byte
#: that is not UTF-8 (or a ``\\udXXX`` escape that is not a pair)
_BAD_TEXT = re.compile("[\ud800-\udfff]")


def _has_text(row: Any) -> bool:
    """Whether ``row`` is a dict with ``system`` and ``chat`` texts (what is checked for bad
    UTF-8; anything else is dropped as ``malformed_row`` by :func:`row_to_case`)."""
    return (
        isinstance(row, dict)
        and isinstance(row.get("system"), str)
        and isinstance(row.get("chat"), str)
    )


class GlaiveSourceError(DataFormatError):
    """The source cannot be read: hub use not allowed, download failed, or not JSON."""


class GlaiveSchemaError(DataFormatError):
    """A system prompt's function specs do not decode or are not well formed."""


class GlaiveCallError(DataFormatError):
    """A ``<functioncall>`` does not parse to ``{"name": str, "arguments": object}``."""


@dataclass
class GlaiveLoad:
    """Result of ``load_glaive``: the kept cases, why the others were dropped, rows seen.

    ``total == len(cases) + sum(dropped.values())`` always holds. ``problems`` says, for each
    ``malformed_row`` drop, where it is (``line N`` in JSON Lines, ``row N`` (1-based) in a
    JSON list) and why: bad JSON, bad UTF-8, nesting too deep, not an object...
    """

    cases: list[Case]
    dropped: Counter[str] = field(default_factory=Counter)
    total: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Turn:
    """One chat turn: ``role`` is ``USER``, ``ASSISTANT`` or ``FUNCTION RESPONSE``."""

    role: str
    content: str


# ---------------------------------------------------------------------------------------
# Pure parsing


def parse_system(system: str) -> list[dict[str, Any]]:
    """Return the function specs of a Glaive system prompt, in order, as decoded.

    Returns ``[]`` for "no access to external functions" prompts and for prompts holding
    no JSON object. Raises ``GlaiveSchemaError`` when an object does not decode.
    """
    if _NO_FUNCTIONS_MARK in system:
        return []
    specs: list[dict[str, Any]] = []
    pos = 0
    while True:
        start = system.find("{", pos)
        if start < 0:
            return specs
        try:
            value, pos = raw_decode_bounded(system, start, decoder=_DECODER)
        except ValueError as exc:  # not JSON, nested too deeply, a huge integer
            raise GlaiveSchemaError(
                f"function spec at offset {start} does not decode: {exc}"
            ) from exc
        if not isinstance(value, dict):
            raise GlaiveSchemaError(f"function spec at offset {start} is not an object")
        specs.append(value)


def standardise_function(spec: Any) -> dict[str, Any]:
    """Check one function spec and return it with explicit ``properties`` and ``required``.

    Raises ``GlaiveSchemaError`` unless: ``name`` is a non-empty string, ``parameters`` is an
    object with ``type == "object"``, every property is an object with a ``type``, and
    ``required`` (``[]`` when absent) is a list of names of existing properties. The input
    is not modified; key order is kept, added keys go last.
    """
    if not isinstance(spec, dict):
        raise GlaiveSchemaError("function spec is not an object")
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise GlaiveSchemaError("function has no name")
    params = spec.get("parameters")
    if not isinstance(params, dict) or params.get("type") != "object":
        raise GlaiveSchemaError(f"{name}: parameters.type is not 'object'")
    props = params.get("properties", {})
    if not isinstance(props, dict):
        raise GlaiveSchemaError(f"{name}: parameters.properties is not an object")
    for prop, prop_schema in props.items():
        if not isinstance(prop_schema, dict) or "type" not in prop_schema:
            raise GlaiveSchemaError(f"{name}: property {prop!r} has no type")
    required = params.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise GlaiveSchemaError(f"{name}: required is not a list of names")
    unknown = [r for r in required if r not in props]
    if unknown:
        raise GlaiveSchemaError(f"{name}: required names unknown properties {unknown}")
    return {**spec, "parameters": {**params, "properties": props, "required": required}}


def parse_chat(chat: str) -> list[Turn]:
    """Split a Glaive chat into turns; text before the first role marker is ignored.

    Every ``<|endoftext|>`` is removed and each turn's content is stripped.
    """
    matches = list(_TURN_RE.finditer(chat))
    turns: list[Turn] = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(chat)
        content = chat[match.end() : end].replace(_END_TAG, "").strip()
        turns.append(Turn(role=match.group(1), content=content))
    return turns


def call_segments(turns: list[Turn]) -> list[tuple[int, str]]:
    """Return ``(turn_index, text)`` for every ``<functioncall>`` in assistant turns.

    ``text`` runs from just after the tag to the next tag in the same turn or its end.
    """
    out: list[tuple[int, str]] = []
    for index, turn in enumerate(turns):
        if turn.role != "ASSISTANT":
            continue
        pieces = turn.content.split(_CALL_TAG)
        out.extend((index, piece) for piece in pieces[1:])
    return out


def _gold_call(obj: dict[str, Any]) -> ToolCall:
    """The gold call of a decoded ``<functioncall>`` object: ``name`` kept as written (not
    stripped, must not be blank), ``arguments`` an object (missing or ``null`` means ``{}``)."""
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise GlaiveCallError("call has no name")
    arguments = obj.get("arguments")
    if arguments is None:
        return ToolCall(name=name, arguments={})
    if isinstance(arguments, dict):
        return ToolCall(name=name, arguments=arguments)
    raise GlaiveCallError("arguments are neither an object nor a JSON string")


def parse_functioncall(text: str) -> ToolCall:
    """Parse the text after a ``<functioncall>`` tag into a ``ToolCall``.

    The payload is read by :func:`callscope.parse.read_functioncall` (the reader the
    model-output parser uses too): text after the call object is ignored, and single-quoted
    arguments end at the first ``'`` followed by optional whitespace and ``}`` for which both
    the inside and the rest of the call parse, so an apostrophe inside a value does not end
    them early. Raises ``GlaiveCallError`` when no reading works.
    """
    try:
        obj = read_functioncall(text)
    except ValueError as exc:
        raise GlaiveCallError(str(exc)) from exc
    return _gold_call(obj)


def row_to_case(row: Any, index: int) -> Case | str:
    """Turn one Glaive row into a ``Case``, or return the drop reason (see module doc).

    Does not deduplicate queries; ``load_glaive`` does that across rows.
    """
    if not isinstance(row, dict):
        return "malformed_row"
    system, chat = row.get("system"), row.get("chat")
    if not isinstance(system, str) or not isinstance(chat, str):
        return "malformed_row"
    try:
        raw_specs = parse_system(system)
    except GlaiveSchemaError:
        return "malformed_schema"
    if not raw_specs:
        return "no_functions"
    try:
        functions = [standardise_function(spec) for spec in raw_specs]
    except GlaiveSchemaError:
        return "malformed_schema"
    turns = parse_chat(chat)
    segments = call_segments(turns)
    if not segments:
        return "no_call"
    if len(segments) > 1:
        return "multiple_calls"
    call_turn, call_text = segments[0]
    try:
        call = parse_functioncall(call_text)
    except GlaiveCallError:
        return "unparseable_call"
    if call.name not in {f["name"] for f in functions}:
        return "call_not_in_functions"
    # every user message before the call: in rows where the assistant first asks for the
    # details, the values the gold call uses are in the user's later messages
    users = [t.content.strip() for t in turns[:call_turn] if t.role == "USER"]
    query = "\n".join(u for u in users if u)
    if not query:
        return "no_user_query"
    return Case(
        id=f"glaive-{index}",
        query=query,
        functions=functions,
        gold={"name": call.name, "arguments": call.arguments},
        meta={"source": "glaive", "row": index},
    )


def cases_from_rows(rows: Iterator[Any]) -> GlaiveLoad:
    """Filter rows (already decoded, or an ``Exception`` for an undecodable one) into cases.

    The row index used in case ids is the position in ``rows`` (0-based).
    """
    result = GlaiveLoad(cases=[], dropped=Counter(), total=0)
    seen_queries: set[str] = set()
    for index, row in enumerate(rows):
        result.total += 1
        problem: str | None = None
        if isinstance(row, Exception):
            problem = str(row) if str(row).startswith("line ") else f"row {index + 1}: {row}"
        elif _has_text(row) and (_BAD_TEXT.search(row["system"]) or _BAD_TEXT.search(row["chat"])):
            problem = f"row {index + 1} is not valid UTF-8 (or holds a lone surrogate)"
        if problem is not None:
            outcome: Case | str = "malformed_row"
        else:
            outcome = row_to_case(row, index)
        if problem is not None:
            result.problems.append(problem)
        if isinstance(outcome, str):
            result.dropped[outcome] += 1
            continue
        if outcome.query in seen_queries:
            result.dropped["duplicate_query"] += 1
            continue
        seen_queries.add(outcome.query)
        result.cases.append(outcome)
    return result


# ---------------------------------------------------------------------------------------
# I/O


def iter_glaive_rows(path: str | Path) -> Iterator[Any]:
    """Yield the rows of a local Glaive file: a JSON list, or JSON Lines of objects.

    The format is picked from the first non-blank character (``[`` means a JSON list).
    In JSON Lines, an undecodable line yields its ``Exception`` so it can be counted.
    Raises ``GlaiveSourceError`` when a JSON-list file does not decode as a whole.
    """
    path = Path(path)
    with open(path, encoding="utf-8-sig", errors="surrogateescape") as fh:
        head = fh.read(4096).lstrip()
    if head.startswith("["):
        try:  # bytes that are not UTF-8 become lone surrogates: their row is dropped
            data = loads_bounded(read_text_bounded(path, "utf-8-sig", "surrogateescape"))
        except json.JSONDecodeError as exc:
            raise GlaiveSourceError(f"{path}: not a valid JSON list: {exc}") from exc
        except TooDeep:
            raise GlaiveSourceError(f"{path}: the JSON list is nested too deeply") from None
        except ValueError as exc:  # an integer over Python's int/str digit limit
            raise GlaiveSourceError(f"{path}: not a readable JSON list: {exc}") from None
        if not isinstance(data, list):
            raise GlaiveSourceError(f"{path}: top-level JSON value is not a list")
        yield from data
        return
    for line, row in read_jsonl(path):
        if isinstance(row, Exception) and not str(row).startswith("line "):
            row = ValueError(f"line {line}: {row}")
        yield row


def hub_url(
    repo: str, filename: str, *, base_url: str | None = None, revision: str = "main"
) -> str:
    """Hugging Face ``resolve`` URL of a dataset file.

    ``base_url`` defaults to ``$HF_ENDPOINT`` or ``https://huggingface.co`` (a mirror or a
    local test server can stand in).
    """
    base = (base_url or os.environ.get("HF_ENDPOINT") or DEFAULT_HUB_ENDPOINT).rstrip("/")
    return f"{base}/datasets/{repo}/resolve/{revision}/{filename}"


def download_hub_file(
    repo: str,
    filename: str,
    *,
    base_url: str | None = None,
    cache: Path | None = None,
    timeout_s: float = 60.0,
) -> Path:
    """Return the cached copy of a hub dataset file, downloading it first if absent.

    The file lands at ``<cache>/<repo>/<filename>`` atomically (temporary file, then
    rename) under a file lock, so concurrent callers download it once. Raises
    ``GlaiveSourceError`` on an HTTP error status or when the hub cannot be reached.
    """
    dest = (cache or datasets_dir()) / repo / filename
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    url = hub_url(repo, filename, base_url=base_url)
    with FileLock(str(dest) + ".lock"):
        if dest.is_file():
            return dest
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        try:
            with (
                os.fdopen(fd, "wb") as fh,
                httpx.stream("GET", url, follow_redirects=True, timeout=timeout_s) as response,
            ):
                if response.status_code != 200:
                    raise GlaiveSourceError(
                        f"download of {url} failed: HTTP {response.status_code}"
                    )
                for chunk in response.iter_bytes():
                    fh.write(chunk)
            os.chmod(tmp_name, 0o644)
            os.replace(tmp_name, dest)
        except httpx.HTTPError as exc:
            raise GlaiveSourceError(
                f"could not download {url} ({exc}); pass a local path to {filename} instead"
            ) from exc
        finally:
            Path(tmp_name).unlink(missing_ok=True)
    return dest


def _split_hub_source(spec: str) -> tuple[str, str]:
    parts = [p for p in spec.split("/") if p]
    if len(parts) < 2:
        raise GlaiveSourceError(f"{HUB_PREFIX}{spec}: expected {HUB_PREFIX}<owner>/<name>[/<file>]")
    repo = "/".join(parts[:2])
    if len(parts) > 2:
        return repo, "/".join(parts[2:])
    if repo == HUB_DATASET:
        return repo, HUB_FILE
    raise GlaiveSourceError(f"{HUB_PREFIX}{spec}: name the file, as {HUB_PREFIX}{repo}/<file>")


def resolve_source(
    source: str | Path,
    *,
    allow_hub: bool = False,
    hub_base_url: str | None = None,
    cache: Path | None = None,
) -> Path:
    """Map ``source`` to a local file, downloading ``hf:<owner>/<name>[/<file>]`` if allowed."""
    if isinstance(source, str) and source.startswith(HUB_PREFIX):
        repo, filename = _split_hub_source(source[len(HUB_PREFIX) :])
        if not allow_hub:
            raise GlaiveSourceError(
                f"{source} would be downloaded from the Hugging Face hub; pass "
                f"--allow-download to allow that, or pass a local path to {filename}"
            )
        return download_hub_file(repo, filename, base_url=hub_base_url, cache=cache)
    path = Path(source).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"no Glaive file at {path}; pass a local copy of {HUB_FILE} (JSON list or JSON "
            f"Lines), or {HUB_PREFIX}{HUB_DATASET} with --allow-download"
        )
    return path


def load_glaive(
    source: str | Path,
    *,
    allow_hub: bool = False,
    hub_base_url: str | None = None,
    cache: Path | None = None,
) -> GlaiveLoad:
    """Load and filter a Glaive function-calling file into single-call ``Case``s.

    ``source`` is a local JSON list or JSON Lines file, or ``hf:glaiveai/glaive-function-
    calling-v2``, which is downloaded (once, into ``cache`` or ``core.paths.datasets_dir()``) only when
    ``allow_hub`` is true; otherwise ``GlaiveSourceError`` says to pass ``--allow-download``
    or a local path. Case ids are ``glaive-<row index>`` (0-based position in the file).
    """
    path = resolve_source(source, allow_hub=allow_hub, hub_base_url=hub_base_url, cache=cache)
    return cases_from_rows(iter_glaive_rows(path))
