"""A scripted chat model for multi-turn tests: answers from a fixed list, records requests."""

from __future__ import annotations

import json
from typing import Any

from callscope.models.base import ChatModel, Decoding, RequestContext
from callscope.types import ModelError, ModelReply


class Scripted(ChatModel):
    """Answers from a fixed list (an ``Exception`` in it is raised); records every request;
    raises ``ModelError(kind="replay_missing")`` when the script is exhausted."""

    spec = "scripted:test"

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []

    def chat(self, messages, tools=None, decoding: Decoding | None = None,
             context: RequestContext | None = None) -> ModelReply:
        self.requests.append((json.loads(json.dumps(messages)), tools))
        if not self.replies:
            raise ModelError("script exhausted", kind="replay_missing")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply
