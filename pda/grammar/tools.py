"""Tool calling: OpenAI-style tool definitions to a structural tag, in the common wire formats.

A tool is `{"type": "function", "function": {"name", "parameters", ...}}` (or the inner
object alone). Each tool becomes one tag whose begin names it and whose content is its
`parameters` JSON Schema, so the arguments validate against the tool that was named.

Formats (`FORMATS`):

* `hermes` (Qwen2.5, Hermes): `<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>`,
  anywhere in free text (the trigger is `<tool_call>`);
* `json`: the output is the call object `{"name": "NAME", "arguments": ARGS}`;
* `llama`: Llama 3.1's JSON tool call `{"name": "NAME", "parameters": ARGS}`.

Modes: `auto` (free text, calls where the model wants; hermes only: plain JSON has no
trigger to tell a call from text), `required` (exactly one call), `parallel` (one or
more calls: hermes tags with free text between, a JSON array for the JSON formats) and
`none` (free text that cannot begin a call; hermes only).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pda.errors import GrammarError
from pda.grammar.ir import GrammarIR
from pda.grammar.structural import structural_tag_to_ir

FORMATS = ("hermes", "json", "llama")
MODES = ("auto", "required", "parallel", "none")
HERMES_TRIGGER = "<tool_call>"


def tools_to_ir(tools: Sequence[dict[str, Any]], *, format: str = "hermes", mode: str = "auto") -> GrammarIR:
    """The grammar of tool calls in `format` under `mode` (see the module docstring)."""
    if format not in FORMATS:
        raise GrammarError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if mode not in MODES:
        raise GrammarError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    named = _named_tools(tools)
    if format == "hermes":
        tags = [{"type": "tag", "begin": f'{HERMES_TRIGGER}\n{{"name": {json.dumps(name)}, "arguments": ',
                 "content": {"type": "json_schema", "json_schema": schema, "any_order": True},
                 "end": "}\n</tool_call>"} for name, schema in named]
        if mode == "none":
            spec: dict[str, Any] = {"type": "any_text", "excludes": [HERMES_TRIGGER]}
        else:
            spec = {"type": "triggered_tags", "triggers": [HERMES_TRIGGER], "tags": tags,
                    "at_least_one": mode != "auto", "stop_after_first": mode == "required"}
        return structural_tag_to_ir(spec)
    if mode in ("auto", "none"):
        raise GrammarError(f"mode {mode!r} needs free text around the calls, which the {format!r} format has no "
                           "trigger for; use mode 'required' or 'parallel', or the 'hermes' format")
    key = "arguments" if format == "json" else "parameters"
    call = {"type": "or", "elements": [
        {"type": "sequence", "elements": [
            {"type": "const_string", "value": f'{{"name": {json.dumps(name)}, "{key}": '},
            {"type": "json_schema", "json_schema": schema, "any_order": True},
            {"type": "const_string", "value": "}"}]}
        for name, schema in named]}
    if mode == "required":
        return structural_tag_to_ir(call)
    return structural_tag_to_ir({"type": "sequence", "elements": [
        {"type": "const_string", "value": "["}, call,
        {"type": "star", "content": {"type": "sequence", "elements": [{"type": "const_string", "value": ", "}, call]}},
        {"type": "const_string", "value": "]"}]})


def _named_tools(tools: Any) -> list[tuple[str, dict | bool]]:
    """(name, parameters schema) per tool, checked; errors name the tool's index."""
    if isinstance(tools, (str, bytes, dict)) or not isinstance(tools, Sequence):
        raise GrammarError("tools must be a list of tool definitions")
    if not tools:
        raise GrammarError("tools is empty: there is nothing to call")
    out, seen = [], set()
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if isinstance(tool, dict) and tool.get("type", "function") == "function" and isinstance(tool.get("function"), dict):
            tool, where = tool["function"], f"{where}.function"
        if not isinstance(tool, dict):
            raise GrammarError(f"{where}: a tool is an object with a name and parameters")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise GrammarError(f"{where}.name: must be a non-empty string")
        if name in seen:
            raise GrammarError(f"{where}.name: {name!r} is defined twice")
        seen.add(name)
        schema = tool.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(schema, (dict, bool)):
            raise GrammarError(f"{where}.parameters: must be a JSON Schema object")
        out.append((name, schema))
    return out
