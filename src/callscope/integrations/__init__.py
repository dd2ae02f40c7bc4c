"""callscope inside the tools people already use (issue 30): one module per host, each an
optional extra, none imported by ``import callscope``.

- :mod:`callscope.integrations.inspect_ai_scorer` (extra ``inspect``): an Inspect AI scorer
  and approver, registered through Inspect's ``inspect_ai`` entry point
  (``callscope/tool_calls``, ``callscope/guard``).
- :mod:`callscope.integrations.agents` (extra ``agents``): an OpenAI Agents SDK tool input
  guardrail.
- :mod:`callscope.integrations.verdicts`: what every integration shares (host-free): the
  correction a failing call gets, the verdict of a call as plain data.

The package sits above ``guard`` (it may import ``guard`` and below) and below ``report``.
"""
