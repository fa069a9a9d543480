"""A JSON Schema lowering is freed when dropped: it leaves no reference cycle for the cyclic collector, which
would otherwise traverse all of a large schema's builder (`Lowering.unlink`)."""

from __future__ import annotations

import gc

import pytest

from pda.grammar.json_schema import json_schema_to_ir, json_schema_to_lark

SCHEMA = {
    "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}}}},
    "type": "object",
    "properties": {
        "small": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
                  "required": ["a"]},
        "large": {"type": "object", "properties": {f"p{i}": {"type": "boolean"} for i in range(12)}},
        "keys": {"type": "object", "patternProperties": {"^x-": {"type": "string"}},
                 "additionalProperties": {"type": "integer"}},
        "list": {"type": "array", "items": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}},
        "named": {"type": "string", "pattern": "^[a-z]+$", "format": "hostname"},
        "tree": {"$ref": "#/$defs/node"},
        "pick": {"enum": [[1], [1, 2], "a"], "maxItems": 1},  # values decided by a checker lowering
    },
    "required": ["small"],
}


@pytest.mark.filterwarnings("ignore::pda.grammar.json_schema.JsonSchemaWarning")  # exact=True: 12 properties
@pytest.mark.parametrize("lower", [json_schema_to_ir, json_schema_to_lark])
@pytest.mark.parametrize("exact", [False, True])
def test_a_lowering_leaves_no_cyclic_garbage(lower, exact) -> None:
    lower(SCHEMA, exact=exact)  # memos outside the lowering filled first
    while gc.collect():  # earlier tests' garbage: a parser core that garbage held a node of goes a pass later
        pass
    enabled = gc.isenabled()
    gc.disable()
    try:
        lower(SCHEMA, exact=exact)
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
