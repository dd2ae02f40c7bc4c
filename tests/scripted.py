"""The one scripted chat model the tests share: answers from a script, records every request.

* ``Scripted([r1, r2, ...])``: the replies in order, whatever the request.
* ``Scripted({case_id: [r1, r2, ...]})``: per case, reply ``k`` answers attempt ``k`` of the
  request's :class:`~callscope.models.base.RequestContext` (the loop's attempt number, the
  conversation's query number), so the SAAG modes that share attempt 1 see the same script.

A reply is a :class:`ModelReply`, a string (a text reply with 10 prompt and 5 completion
tokens) or an exception (raised). Past the end of a script: ``then`` when given, else the last
reply again when ``repeat_last``, else ``ModelError(kind="replay_missing")``.
"""

from __future__ import annotations

import json
from typing import Any

from callscope.errors import ModelError
from callscope.models.base import ChatModel, Decoding, RequestContext
from callscope.types import ModelReply

Reply = ModelReply | str | Exception


class Scripted(ChatModel):
    def __init__(
        self,
        script: list[Reply] | dict[str, list[Reply]],
        *,
        then: ModelReply | None = None,
        repeat_last: bool = False,
        spec: str = "scripted:test",
        native: bool = True,
        max_concurrency: int = 1,
    ) -> None:
        self.script = script if isinstance(script, dict) else list(script)
        self.then = then
        self.repeat_last = repeat_last
        self.spec = spec
        self.supports_native_tools = native
        self.max_concurrency = max_concurrency
        #: ``(messages, tools, context)`` of every request, in order (messages deep-copied)
        self.requests: list[tuple[list[dict[str, Any]], Any, RequestContext | None]] = []

    def chat(
        self,
        messages,
        tools=None,
        decoding: Decoding | None = None,
        context: RequestContext | None = None,
    ) -> ModelReply:
        self.requests.append((json.loads(json.dumps(messages)), tools, context))
        if isinstance(self.script, dict):
            replies = self.script[context.case_id if context else ""]
            index = (context.attempt if context else 1) - 1
        else:
            replies, index = self.script, len(self.requests) - 1
        if index < len(replies):
            reply = replies[index]
        elif self.then is not None:
            reply = self.then
        elif self.repeat_last and replies:
            reply = replies[-1]
        else:
            raise ModelError("script exhausted", kind="replay_missing")
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, str):
            return ModelReply(text=reply, prompt_tokens=10, completion_tokens=5)
        return reply

    @property
    def messages(self) -> list[list[dict[str, Any]]]:
        """The messages of every request, in order."""
        return [m for m, _, _ in self.requests]
