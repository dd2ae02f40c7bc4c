"""An OpenAI-compatible chat server (POST /v1/chat/completions) replaying a real FC model's
recorded BFCL multi-turn emissions (glyphh-ada-1.1's result files in shared/external/bfcl) as
native tool_calls, so callscope's multi-turn loop can run it over HTTP with --style native.

The situation is found from the request: the case = the BFCL case whose user turns so far
equal the request's user messages (ties, e.g. base_N and miss_param_N before their texts
differ, go to the first category given); turn = number of user messages - 1; step = assistant
messages since the last user message. The recorded step (a list of {tool: "json args"}) is
answered as parallel tool_calls; past the last recorded step of the turn the reply is empty
text, which ends the turn. Usage: python replay_server.py PORT base,miss_param
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from callscope.benchmarks.bfcl.multi_turn import load_multi_turn

ROOT = (
    Path(__file__).resolve().parents[3]
    / "shared/external/bfcl/glyphh/result/glyphh-ada-1.1/multi_turn"
)


def load(categories: list[str]):
    recorded = {}
    for cat in categories:
        for line in (ROOT / f"BFCL_v4_multi_turn_{cat}_result.json").read_text().splitlines():
            row = json.loads(line)
            recorded[row["id"]] = row["result"]
    cases = [c for c in load_multi_turn() if c.id in recorded]
    order = {f"multi_turn_{c}": i for i, c in enumerate(categories)}
    cases.sort(key=lambda c: order.get(c.category, 99))
    return cases, recorded


def main() -> None:
    port, cats = int(sys.argv[1]), sys.argv[2].split(",")
    cases, recorded = load(cats)
    turn_texts = {c.id: [[m["content"] for m in t] for t in c.turns] for c in cases}

    def answer(body: dict) -> dict:
        msgs = body.get("messages") or []
        users = [m for m in msgs if m.get("role") == "user"]
        turn = len(users) - 1
        last_user = max(i for i, m in enumerate(msgs) if m.get("role") == "user")
        step = sum(m.get("role") == "assistant" for m in msgs[last_user + 1 :])
        sent = [u.get("content") for u in users]
        case_id = None
        for c in cases:
            flat = [x for t in turn_texts[c.id][: turn + 1] for x in t]
            if len(flat) == len(sent) and flat == sent:
                case_id = c.id
                break
        message: dict = {"role": "assistant", "content": ""}
        if case_id is not None:
            result = recorded[case_id]
            steps = result[turn] if turn < len(result) and isinstance(result[turn], list) else []
            if step < len(steps) and isinstance(steps[step], list) and steps[step]:
                calls = []
                for j, item in enumerate(steps[step]):
                    ((name, args),) = item.items()
                    calls.append(
                        {
                            "id": f"r{turn}_{step}_{j}",
                            "type": "function",
                            "function": {
                                "name": name,
                                "arguments": args if isinstance(args, str) else json.dumps(args),
                            },
                        }
                    )
                message = {"role": "assistant", "content": None, "tool_calls": calls}
        return {
            "id": "replay",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            data = json.dumps(answer(json.loads(raw))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
