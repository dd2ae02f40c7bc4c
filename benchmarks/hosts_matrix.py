"""What a user of LiteLLM sees with callscope's guardrail, per route x mode x streamed (issue 46):
the table of ``docs/hosts.md``, measured.

Starts ``litellm --config`` on 127.0.0.1 (the guardrail three times, one per mode, named per
request) in front of the scripted upstream of ``tests/scripted_routes.py``, and asks each route
with the real clients of ``tests/test_integration_litellm_routes.py`` (``openai`` for chat
completions and responses, ``httpx`` for ``/v1/messages``): the user asks about Paris, the
model first answers ``get_weather(city="Berlin")`` (a hard drift), and in ``repair`` then
``city="Paris"``; ``pass`` is a first answer of Paris through ``block``. Also the SDK path
``acompletion(stream=True)`` through the README's hook. Prints one Markdown row per cell.

    LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONPATH=src python benchmarks/hosts_matrix.py
    LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONPATH=src /tmp/venv-litellm108/bin/python \\
        benchmarks/hosts_matrix.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import test_integration_litellm_routes as routes  # noqa: E402
import test_integration_litellm_sdk_stream as sdk  # noqa: E402

from callscope.integrations.litellm_guardrail import CallscopeBlocked  # noqa: E402


def describe(seen: routes.Seen) -> str:
    """One cell: the status and what the client got."""
    if seen.error:
        where = (
            "`error.provider_specific_fields.callscope` (correction, verdict)"
            if seen.blocked
            else "the message only"
        )
        body = "`response.failed` event" if seen.status == 200 else f"HTTP {seen.status}"
        return f"{body}, correction in {where}"
    note = seen.callscope or {}
    verdict = note.get("verdict") or {}
    tail = ""
    if "repair" in note:
        tail = f", repaired={note['repair']['repaired']}"
    stage = verdict.get("stage")
    return f"HTTP {seen.status}, call city={seen.city}, `callscope` verdict stage {stage}{tail}"


def main() -> None:
    cells = [
        ("annotate", ("Berlin",)),
        ("block", ("Berlin",)),
        ("block", ("Paris",)),
        ("repair", ("Berlin", "Paris")),
    ]
    with tempfile.TemporaryDirectory() as tmp, routes.running_proxy(Path(tmp)) as proxy:
        print(f"litellm {_version()}")
        print("| route | streamed | mode | model says | the client sees |")
        print("|---|---|---|---|---|")
        for route in routes.ROUTES:
            for stream in (False, True):
                for mode, cities in cells:
                    seen = routes._ask(proxy, route, mode, stream, *cities)
                    says = " then ".join(cities)
                    print(
                        f"| {route} | {'yes' if stream else 'no'} | {mode} | {says} | {describe(seen)} |"
                    )
        for mode, cities in cells:
            out = sdk._run(mode, *cities)[0]
            if isinstance(out, CallscopeBlocked):
                cell = "`CallscopeBlocked` raised before any chunk (`detail`: correction, verdict)"
            else:
                city, note = out
                rep = f", repaired={note['repair']['repaired']}" if "repair" in note else ""
                cell = f"`GuardedStream`, call city={city}, `.callscope` verdict stage {note['verdict']['stage']}{rep}"
            print(f"| SDK acompletion | yes | {mode} | {' then '.join(cities)} | {cell} |")


def _version() -> str:
    from importlib.metadata import version

    return version("litellm")


if __name__ == "__main__":
    main()
