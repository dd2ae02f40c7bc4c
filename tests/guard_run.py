"""A guard run store as ``callscope serve`` writes it, for the store-upgrade tests: the fake
upstream of ``tests/test_proxy.py`` answers one request per scenario (a call that passes,
one repaired, one never repaired, an invented value, a wrong name), asked one at a time
through the real server with the ``openai`` client; the block's end stops the server, so the
store is complete."""

from __future__ import annotations

import threading
from pathlib import Path

from proxyserve import callscope_serve

#: the fake model's scenarios asked, in order (``tests/test_proxy.py``'s ``_answer``)
SCENARIOS = ("good", "missing", "never", "invented", "wrong_name")


def write_guard_run(run_dir: Path) -> Path:
    """Drive ``callscope serve`` (writing ``run_dir``) through every scenario; ``run_dir``."""
    from test_proxy import FakeUpstream, _ask, _client

    upstream = FakeUpstream()
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    try:
        with callscope_serve(upstream.url, run_dir, "--upstream-timeout", "60") as served:
            client = _client(served)
            for scenario in SCENARIOS:
                _ask(client, scenario)
            served.stop()
    finally:
        upstream.shutdown()
        upstream.server_close()
    return run_dir
