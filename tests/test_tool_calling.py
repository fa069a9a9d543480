"""`pda.Grammar.from_tools`: OpenAI-style tool definitions in the hermes, json and llama formats."""

from __future__ import annotations

import json

import pytest

import pda

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "add", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"], "additionalProperties": False}}},
    {"name": "now"},  # the inner object alone, no parameters: an empty object
]


def hermes(name: str, args: dict) -> str:
    return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {json.dumps(args)}}}\n</tool_call>'


def test_hermes_modes() -> None:
    call, call2 = hermes("get_weather", {"city": "Oslo"}), hermes("add", {"b": 2, "a": 1})
    auto = pda.Grammar.from_tools(TOOLS)
    assert auto.accepts("No tool needed.") and auto.accepts(f"Let me check. {call}") and auto.accepts(f"{call}{call2}")
    assert not auto.accepts(hermes("get_weather", {"town": "Oslo"}))  # arguments follow the named tool's schema
    assert not auto.accepts(hermes("add", {"city": "Oslo"}))
    assert not auto.accepts(hermes("delete_all", {}))
    assert auto.accepts(hermes("now", {}))
    required = pda.Grammar.from_tools(TOOLS, mode="required")
    assert required.accepts(call) and required.accepts(f"Sure: {call}")
    assert not required.accepts("No.") and not required.accepts(f"{call}{call2}") and not required.accepts(f"{call} ok")
    parallel = pda.Grammar.from_tools(TOOLS, mode="parallel")
    assert parallel.accepts(f"{call}\n{call2}") and parallel.accepts(call) and not parallel.accepts("text only")
    none = pda.Grammar.from_tools(TOOLS, mode="none")
    assert none.accepts("I cannot call tools <tool_") and not none.accepts(f"x {call}")


@pytest.mark.parametrize(("fmt", "key"), [("json", "arguments"), ("llama", "parameters")])
def test_json_formats(fmt: str, key: str) -> None:
    one = pda.Grammar.from_tools(TOOLS, format=fmt, mode="required")
    call = json.dumps({"name": "add", key: {"a": 1, "b": 2}})
    assert one.accepts(call) and not one.accepts(call.replace('"b": 2', '"b": "2"'))
    assert not one.accepts(json.dumps({"name": "add", "other": {"a": 1, "b": 2}}))
    many = pda.Grammar.from_tools(TOOLS, format=fmt, mode="parallel")
    assert many.accepts(f"[{call}, {call}]") and many.accepts(f"[{call}]") and not many.accepts("[]")


@pytest.mark.parametrize(("tools", "kwargs", "where"), [
    ([], {}, "tools is empty"),
    ({"name": "x"}, {}, "list of tool definitions"),
    ([{"type": "function", "function": {"name": ""}}], {}, "tools[0].function.name"),
    ([{"name": "a"}, {"name": "a"}], {}, "tools[1].name"),
    ([{"name": "a", "parameters": 3}], {}, "tools[0].parameters"),
    ([{"name": "a", "parameters": {"type": 5}}], {}, "json_schema"),
    ([{"name": "a"}], {"format": "xml"}, "format must be"),
    ([{"name": "a"}], {"mode": "maybe"}, "mode must be"),
    ([{"name": "a"}], {"format": "json", "mode": "auto"}, "has no trigger"),
])
def test_bad_tools_are_named(tools, kwargs, where: str) -> None:
    with pytest.raises(pda.GrammarError) as info:
        pda.Grammar.from_tools(tools, **kwargs)
    assert where in str(info.value)
