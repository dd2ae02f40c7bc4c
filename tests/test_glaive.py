"""Glaive loader: parsing quirks, filtering with exact drop counts, local files and the hub path.

All rows are invented here in the Glaive v2 layout; none is copied from the corpus.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from callscope.benchmarks.glaive import (
    HUB_DATASET,
    HUB_FILE,
    GlaiveCallError,
    GlaiveSchemaError,
    GlaiveSourceError,
    hub_url,
    load_glaive,
    parse_chat,
    parse_functioncall,
    parse_system,
    standardise_function,
)
from callscope.core.jsonl import read_jsonl, write_jsonl
from callscope.core.paths import datasets_dir
from callscope.parse import parse_text

HEADER = (
    "SYSTEM: You are a helpful assistant with access to the following functions. "
    "Use them if required -\n"
)
NO_FUNCTIONS = "SYSTEM: You are a helpful assistant, with no access to external functions."
EOT = " <|endoftext|>"

SPLIT_BILL = {
    "name": "split_bill",
    "description": "Split a restaurant bill between friends {evenly}",
    "parameters": {
        "type": "object",
        "properties": {
            "total": {"type": "number", "description": "Bill total"},
            "people": {"type": "integer", "description": "Number of people"},
        },
        "required": ["total", "people"],
    },
}
FIND_NOVEL = {
    "name": "find_novel",
    "description": "Look up a novel by its title",
    "parameters": {
        "type": "object",
        "properties": {"title": {"type": "string", "description": "Novel title"}},
        "required": ["title"],
    },
}
PLAN_ROUTE = {
    "name": "plan_route",
    "description": "Plan a cycling route",
    "parameters": {
        "type": "object",
        "properties": {
            "start": {"type": "string"},
            "end": {"type": "string"},
            "avoid": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["start", "end"],
    },
}
RANDOM_RIDDLE = {
    "name": "random_riddle",
    "description": "Tell a random riddle",
    "parameters": {"type": "object", "properties": {}},
}


def system_with(*functions: dict) -> str:
    """Glaive layout: header, then 4-space-indented objects separated by blank lines."""
    return HEADER + "\n\n".join(json.dumps(f, indent=4) for f in functions) + "\n\n"


def chat(*turns: tuple[str, str]) -> str:
    parts = []
    for role, text in turns:
        parts.append(f"{role}: {text}{EOT if role == 'ASSISTANT' else ''}")
    return "\n\n\n".join(parts) + "\n\n\n"


def call_turn(body: str) -> tuple[str, str]:
    return ("ASSISTANT", f"<functioncall> {body}")


RESPONSE = ("FUNCTION RESPONSE", '{"result": "ok"}')
THANKS = ("ASSISTANT", "Done, here is the result.")


def build_rows() -> list:
    """Rows 0..N with a known fate each (see EXPECTED_* below)."""
    rows: list = [
        # 0 kept: quoted arguments (the usual Glaive form)
        {
            "system": system_with(SPLIT_BILL, FIND_NOVEL),
            "chat": chat(
                ("USER", "Split 84.50 between 4 of us, please."),
                call_turn('{"name": "split_bill", "arguments": \'{"total": 84.5, "people": 4}\'}'),
                RESPONSE,
                THANKS,
            ),
        },
        # 1 kept: quoted arguments over several lines
        {
            "system": system_with(PLAN_ROUTE),
            "chat": chat(
                ("USER", "Plan a ride from Ostend to Bruges avoiding highways."),
                call_turn(
                    '{"name": "plan_route", "arguments": \'{\n  "start": "Ostend",\n'
                    '  "end": "Bruges",\n  "avoid": ["highways"]\n}\'\n}'
                ),
                RESPONSE,
                THANKS,
            ),
        },
        # 2 kept: arguments as a raw JSON object
        {
            "system": system_with(FIND_NOVEL, SPLIT_BILL),
            "chat": chat(
                ("USER", "Find the novel Glass Orchards."),
                call_turn('{"name": "find_novel", "arguments": {"title": "Glass Orchards"}}'),
                RESPONSE,
                THANKS,
            ),
        },
        # 3 kept: no arguments key; the function has no `required` (standardised to [])
        {
            "system": system_with(RANDOM_RIDDLE),
            "chat": chat(
                ("USER", "Give me a riddle."),
                call_turn('{"name": "random_riddle"}'),
                RESPONSE,
                THANKS,
            ),
        },
        # 4 kept: unescaped apostrophe inside the single-quoted arguments
        {
            "system": system_with(FIND_NOVEL),
            "chat": chat(
                ("USER", "Look up The Lighthouse Keeper's Daughter."),
                call_turn(
                    '{"name": "find_novel", "arguments": '
                    '\'{"title": "The Lighthouse Keeper\'s Daughter"}\'}'
                ),
                RESPONSE,
                THANKS,
            ),
        },
        # 5 kept: the query is the first USER turn even when the call comes later
        {
            "system": system_with(SPLIT_BILL),
            "chat": chat(
                ("USER", "  Can you help me with a bill?  "),
                ("ASSISTANT", "Sure, what is the total and how many people?"),
                ("USER", "60 dollars, 3 people."),
                call_turn('{"name": "split_bill", "arguments": \'{"total": 60, "people": 3}\'}'),
                RESPONSE,
                THANKS,
            ),
        },
        # 6 no_functions
        {"system": NO_FUNCTIONS, "chat": chat(("USER", "Hi!"), ("ASSISTANT", "Hello!"))},
        # 7 no_functions (even though the chat pretends to call something)
        {
            "system": NO_FUNCTIONS,
            "chat": chat(("USER", "Riddle?"), call_turn('{"name": "random_riddle"}')),
        },
        # 8 no_call
        {
            "system": system_with(SPLIT_BILL),
            "chat": chat(
                ("USER", "Book me a flight."),
                ("ASSISTANT", "I cannot book flights; I can only split bills."),
            ),
        },
        # 9 multiple_calls: two calls in two assistant turns
        {
            "system": system_with(FIND_NOVEL),
            "chat": chat(
                ("USER", "Find Glass Orchards, then find Salt Roads."),
                call_turn('{"name": "find_novel", "arguments": \'{"title": "Glass Orchards"}\'}'),
                RESPONSE,
                call_turn('{"name": "find_novel", "arguments": \'{"title": "Salt Roads"}\'}'),
                RESPONSE,
                THANKS,
            ),
        },
        # 10 multiple_calls: several calls in a row inside one assistant turn
        {
            "system": system_with(FIND_NOVEL),
            "chat": chat(
                ("USER", "Find Salt Roads and Paper Moons."),
                (
                    "ASSISTANT",
                    '<functioncall> {"name": "find_novel", "arguments": \'{"title": "Salt Roads"}\'}'
                    '\n<functioncall> {"name": "find_novel", "arguments": '
                    '\'{"title": "Paper Moons"}\'}',
                ),
                RESPONSE,
            ),
        },
        # 11 malformed_schema: a property without a type
        {
            "system": system_with(
                {
                    "name": "tag_photo",
                    "parameters": {
                        "type": "object",
                        "properties": {"label": {"description": "no type here"}},
                        "required": ["label"],
                    },
                }
            ),
            "chat": chat(
                ("USER", "Tag it as beach."),
                call_turn('{"name": "tag_photo", "arguments": \'{"label": "beach"}\'}'),
            ),
        },
        # 12 malformed_schema: required names a property that does not exist
        {
            "system": system_with(
                FIND_NOVEL,
                {
                    "name": "rate_novel",
                    "parameters": {
                        "type": "object",
                        "properties": {"stars": {"type": "integer"}},
                        "required": ["stars", "comment"],
                    },
                },
            ),
            "chat": chat(
                ("USER", "Find Paper Moons."),
                call_turn('{"name": "find_novel", "arguments": \'{"title": "Paper Moons"}\'}'),
            ),
        },
        # 13 malformed_schema: parameters.type is not "object"
        {
            "system": system_with(
                {"name": "list_ports", "parameters": {"type": "array", "items": {}}}
            ),
            "chat": chat(("USER", "List ports."), call_turn('{"name": "list_ports"}')),
        },
        # 14 malformed_schema: a function object that does not decode (truncated)
        {
            "system": HEADER + json.dumps(FIND_NOVEL, indent=4)[:-10] + "\n\n",
            "chat": chat(
                ("USER", "Find Salt Roads please."),
                call_turn('{"name": "find_novel", "arguments": \'{"title": "Salt Roads"}\'}'),
            ),
        },
        # 15 unparseable_call: single-quoted arguments cut short
        {
            "system": system_with(SPLIT_BILL),
            "chat": chat(
                ("USER", "Split 30 between 2."),
                call_turn('{"name": "split_bill", "arguments": \'{"total": 30, \'}'),
            ),
        },
        # 16 unparseable_call: arguments are a list, not an object
        {
            "system": system_with(SPLIT_BILL),
            "chat": chat(
                ("USER", "Split 90 between 3."),
                call_turn('{"name": "split_bill", "arguments": [90, 3]}'),
            ),
        },
        # 17 call_not_in_functions
        {
            "system": system_with(SPLIT_BILL),
            "chat": chat(
                ("USER", "Find the novel Paper Moons."),
                call_turn('{"name": "find_novel", "arguments": \'{"title": "Paper Moons"}\'}'),
            ),
        },
        # 18 no_user_query: the call comes before any USER turn
        {
            "system": system_with(RANDOM_RIDDLE),
            "chat": chat(call_turn('{"name": "random_riddle"}'), ("USER", "Thanks!")),
        },
        # 19 duplicate_query of row 0 (differs only by surrounding whitespace)
        {
            "system": system_with(SPLIT_BILL),
            "chat": chat(
                ("USER", "   Split 84.50 between 4 of us, please.\n"),
                call_turn('{"name": "split_bill", "arguments": \'{"total": 84.5, "people": 4}\'}'),
            ),
        },
        # 20 malformed_row: not an object
        "SYSTEM: just a string",
        # 21 malformed_row: no chat
        {"system": system_with(SPLIT_BILL)},
    ]
    return rows


EXPECTED_DROPPED = Counter(
    {
        "no_functions": 2,
        "no_call": 1,
        "multiple_calls": 2,
        "malformed_schema": 4,
        "unparseable_call": 2,
        "call_not_in_functions": 1,
        "no_user_query": 1,
        "duplicate_query": 1,
        "malformed_row": 2,
    }
)
EXPECTED_GOLD = {
    "glaive-0": {"name": "split_bill", "arguments": {"total": 84.5, "people": 4}},
    "glaive-1": {
        "name": "plan_route",
        "arguments": {"start": "Ostend", "end": "Bruges", "avoid": ["highways"]},
    },
    "glaive-2": {"name": "find_novel", "arguments": {"title": "Glass Orchards"}},
    "glaive-3": {"name": "random_riddle", "arguments": {}},
    "glaive-4": {"name": "find_novel", "arguments": {"title": "The Lighthouse Keeper's Daughter"}},
    "glaive-5": {"name": "split_bill", "arguments": {"total": 60, "people": 3}},
}


@pytest.fixture
def glaive_json(tmp_path: Path) -> Path:
    path = tmp_path / "glaive.json"
    path.write_text(json.dumps(build_rows(), indent=2), encoding="utf-8")
    return path


def check_load(load) -> None:
    assert load.total == 22
    assert load.dropped == EXPECTED_DROPPED
    assert {c.id: c.gold for c in load.cases} == EXPECTED_GOLD
    assert [c.id for c in load.cases] == list(EXPECTED_GOLD)


def test_json_list_counts_and_golds(glaive_json: Path) -> None:
    load = load_glaive(glaive_json)
    check_load(load)
    assert load.total == len(load.cases) + sum(load.dropped.values())


def test_case_fields(glaive_json: Path) -> None:
    cases = {c.id: c for c in load_glaive(str(glaive_json)).cases}
    first = cases["glaive-0"]
    assert first.query == "Split 84.50 between 4 of us, please."
    assert first.functions == [SPLIT_BILL, FIND_NOVEL]
    assert first.meta == {"source": "glaive", "row": 0}
    assert first.scale is None
    # all user messages before the call: the values come in the second one
    assert cases["glaive-5"].query == "Can you help me with a bill?\n60 dollars, 3 people."
    assert cases["glaive-5"].meta == {"source": "glaive", "row": 5}
    # the function without `required` is standardised, the rest of it unchanged
    assert cases["glaive-3"].functions == [
        {
            "name": "random_riddle",
            "description": "Tell a random riddle",
            "parameters": {"type": "object", "properties": {}, "required": []},
        }
    ]


def test_jsonl_same_as_json_list_and_broken_line_is_malformed(tmp_path: Path) -> None:
    rows = build_rows()
    path = tmp_path / "glaive.jsonl"
    lines = [json.dumps(r) for r in rows[:20]]
    # JSONL rows must be objects: a string row and a truncated line are both malformed
    lines.append(json.dumps(rows[20]))
    lines.append('{"system": "SYSTEM: cut off')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    check_load(load_glaive(path))


def test_parse_system_variants() -> None:
    assert parse_system(NO_FUNCTIONS) == []
    assert parse_system(system_with(SPLIT_BILL, FIND_NOVEL, PLAN_ROUTE)) == [
        SPLIT_BILL,
        FIND_NOVEL,
        PLAN_ROUTE,
    ]
    with pytest.raises(GlaiveSchemaError):
        parse_system(HEADER + '{\n    "name": "x",\n    oops\n}')


def test_standardise_function_rejects() -> None:
    base = {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}
    assert standardise_function(base)["parameters"]["required"] == []
    assert "required" not in base["parameters"]  # input untouched
    bad = [
        {"parameters": {"type": "object", "properties": {}}},
        {"name": "f"},
        {"name": "f", "parameters": {"type": "object", "properties": []}},
        {"name": "f", "parameters": {"type": "object", "properties": {}, "required": "a"}},
        {"name": "f", "parameters": {"type": "object", "properties": {"a": "string"}}},
    ]
    for spec in bad:
        with pytest.raises(GlaiveSchemaError):
            standardise_function(spec)


def test_parse_chat_roles_and_endoftext() -> None:
    turns = parse_chat(
        "USER: Hi there\n\n\nASSISTANT: Hello! <|endoftext|>\n\n\n"
        'FUNCTION RESPONSE: {"a": 1}\n\n\nASSISTANT: Bye <|endoftext|>\n'
    )
    assert [(t.role, t.content) for t in turns] == [
        ("USER", "Hi there"),
        ("ASSISTANT", "Hello!"),
        ("FUNCTION RESPONSE", '{"a": 1}'),
        ("ASSISTANT", "Bye"),
    ]


@pytest.mark.parametrize(
    ("text", "name", "arguments"),
    [
        ('{"name": "a", "arguments": \'{"x": 1}\'} <|endoftext|>', "a", {"x": 1}),
        ('{"name": "a", "arguments": \'{\n"x": "two\nlines"\n}\'\n}', "a", {"x": "two\nlines"}),
        ('{"name": "a", "arguments": {"x": [1, 2]}}', "a", {"x": [1, 2]}),
        ('{"name": "a", "arguments": "{\\"x\\": true}"}', "a", {"x": True}),
        ('{"name": "a"}', "a", {}),
        ('{"name": "a", "arguments": \'\'}', "a", {}),
        ('{"name": "a", "arguments": \'{"t": "Mo\'s Diner"}\'}', "a", {"t": "Mo's Diner"}),
        # an apostrophe followed by "}" inside a value: the first candidate quote is wrong
        ('{"name": "a", "arguments": \'{"t": "x\'}y"}\'}', "a", {"t": "x'}y"}),
        # an escaped apostrophe, which JSON does not allow
        ('{"name": "a", "arguments": \'{"t": "it\\\'s"}\'}', "a", {"t": "it's"}),
    ],
)
def test_parse_functioncall_quirks(text: str, name: str, arguments: dict) -> None:
    call = parse_functioncall(text)
    assert (call.name, call.arguments) == (name, arguments)


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        # an apostrophe inside a value, as written and escaped as \'
        ("""{"name": "a", "arguments": '{"t": "it's"}'}""", {"t": "it's"}),
        ("""{"name": "a", "arguments": '{"t": "it\\'s"}'}""", {"t": "it's"}),
        # "'}" inside a value, alone and after an apostrophe
        ("""{"name": "a", "arguments": '{"t": "x'}"}'}""", {"t": "x'}"}),
        (
            """{"name": "a", "arguments": '{"t": "it's", "u": "'}"}'} <|endoftext|>""",
            {"t": "it's", "u": "'}"},
        ),
        ("""{"name": "a", "arguments": '{\n"t": "it's\nfine'}"\n}'\n}""", {"t": "it's\nfine'}"}),
    ],
)
def test_loader_and_output_parser_read_functioncall_alike(text: str, arguments: dict) -> None:
    """One reader (callscope.parse.read_functioncall) for the corpus and for model output."""
    call = parse_functioncall(text)
    assert (call.name, call.arguments) == ("a", arguments)
    parsed = parse_text("<functioncall> " + text)
    assert parsed.form == "functioncall"
    assert parsed.calls == (call,)


@pytest.mark.parametrize(
    "text",
    [
        "no object here",
        '{"arguments": {"x": 1}}',
        '{"name": "a", "arguments": \'{"x": \'}',
        '{"name": "a", "arguments": \'[1, 2]\'}',
        '{"name": "a", "arguments": 5}',
        '{"name": "a", "arguments": \'{"x": 1}',
    ],
)
def test_parse_functioncall_failures(text: str) -> None:
    with pytest.raises(GlaiveCallError):
        parse_functioncall(text)


def test_missing_local_file_is_clear(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="allow-download"):
        load_glaive(tmp_path / "absent.json")


def test_broken_json_list_raises(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[{"system": "x", "chat": ', encoding="utf-8")
    with pytest.raises(GlaiveSourceError, match="not a valid JSON list"):
        load_glaive(path)


# --- hub path, against a local HTTP server -----------------------------------------------


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)


@pytest.fixture
def hub_server(tmp_path: Path, no_proxy: None):
    """Serve <root>/datasets/<repo>/resolve/main/<file> like the hub's resolve URLs."""
    root = tmp_path / "hub"
    target = root / "datasets" / HUB_DATASET / "resolve" / "main" / HUB_FILE
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(build_rows()), encoding="utf-8")

    class QuietHandler(SimpleHTTPRequestHandler):
        def log_message(self, fmt: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_hub_refused_without_allow(tmp_path: Path) -> None:
    with pytest.raises(GlaiveSourceError, match="--allow-download"):
        load_glaive(f"hf:{HUB_DATASET}", cache=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_hub_download_then_cache(tmp_path: Path, hub_server) -> None:
    server, base = hub_server
    cache = tmp_path / "cache"
    load = load_glaive(f"hf:{HUB_DATASET}", allow_hub=True, hub_base_url=base, cache=cache)
    check_load(load)
    cached = cache / HUB_DATASET / HUB_FILE
    assert json.loads(cached.read_text(encoding="utf-8")) == build_rows()
    assert [p.name for p in cached.parent.iterdir() if p.name.endswith(".part")] == []
    # with the server gone the cached copy is used
    server.shutdown()
    check_load(load_glaive(f"hf:{HUB_DATASET}", allow_hub=True, hub_base_url=base, cache=cache))


def test_hub_http_error_is_clear(tmp_path: Path, hub_server) -> None:
    _server, base = hub_server
    with pytest.raises(GlaiveSourceError, match="HTTP 404"):
        load_glaive(
            "hf:someone/other-set/missing.json",
            allow_hub=True,
            hub_base_url=base,
            cache=tmp_path / "cache",
        )
    assert not (tmp_path / "cache" / "someone" / "other-set" / "missing.json").exists()


def test_hub_unreachable_is_clear(tmp_path: Path, no_proxy: None) -> None:
    # port 9 (discard) on loopback: nothing listens there in a test sandbox
    with pytest.raises(GlaiveSourceError, match="local path"):
        load_glaive(
            f"hf:{HUB_DATASET}",
            allow_hub=True,
            hub_base_url="http://127.0.0.1:9",
            cache=tmp_path / "cache",
        )


def test_hub_url_and_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert hub_url(HUB_DATASET, HUB_FILE) == (
        "https://huggingface.co/datasets/glaiveai/glaive-function-calling-v2/resolve/main/"
        "glaive-function-calling-v2.json"
    )
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example/")
    assert hub_url("a/b", "c.json") == "http://mirror.example/datasets/a/b/resolve/main/c.json"
    monkeypatch.setenv("CALLSCOPE_CACHE", str(tmp_path))
    assert datasets_dir() == tmp_path / "datasets"
    monkeypatch.delenv("CALLSCOPE_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert datasets_dir() == tmp_path / "home" / ".cache" / "callscope" / "datasets"


def test_hub_source_needs_a_file_for_other_repos() -> None:
    with pytest.raises(GlaiveSourceError, match="name the file"):
        load_glaive("hf:someone/other-set", allow_hub=True)


# --- io helpers ------------------------------------------------------------------------


def test_read_jsonl_reports_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n[1, 2]\nnot json\n{"b": "é"}\n', encoding="utf-8")
    out = list(read_jsonl(path))
    assert [n for n, _ in out] == [1, 3, 4, 5]
    assert out[0][1] == {"a": 1}
    assert isinstance(out[1][1], ValueError) and not isinstance(out[1][1], json.JSONDecodeError)
    assert isinstance(out[2][1], json.JSONDecodeError)
    assert out[3][1] == {"b": "é"}


def test_write_jsonl_format_and_atomic_replace(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "out.jsonl"
    assert write_jsonl(path, [{"z": 1, "a": "café"}, {"k": [1]}]) == 2
    assert path.read_bytes() == '{"z": 1, "a": "café"}\n{"k": [1]}\n'.encode()

    def failing():
        yield {"x": 1}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_jsonl(path, failing())
    assert path.read_bytes() == '{"z": 1, "a": "café"}\n{"k": [1]}\n'.encode()
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.jsonl"]
