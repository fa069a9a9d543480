"""Valid JSONSchemaBench instances that the generation default refuses, and why.

`bench/json_schema_bench.py` compiles the generation default (`exact=False`, flexible white
space) and saw these documents refused. Each is JSON Schema-valid (`jsonschema` agrees) and
accepted by `exact=True`; the default refuses it exactly at a key that one of its documented
restrictions excludes (docs/json_schema.md, "Defaults"): a key the object's own schema does not
declare where `additionalProperties` is absent ("undeclared": `$schema` in an instance is an
ordinary key; a draft-07 `$ref` ignores its sibling `properties`; a definition declares its own
properties, not those of a same-named property elsewhere), or a declared property out of schema
order in an object of more than `MAX_ANY_ORDER_PROPERTIES` ("order"). Lifting the restriction
(`additionalProperties: true` written out, which is what its absence means in JSON Schema; the
keys in schema order) makes the default accept it, so no other cause hides behind it. Small
schemas below reproduce each cause; property order is `test_large_objects_keep_schema_order`'s.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest

import pda
from pda.errors import ParseError
from tests.conftest import REPO, corpus_path

sys.path.insert(0, str(REPO / "bench"))
from json_schema_coverage import open_objects  # noqa: E402

jsonschema = pytest.importorskip("jsonschema")

# The corpus schemas warn of approximations (overlapping oneOf, large objects under exact=True)
# that no test here is about.
pytestmark = pytest.mark.filterwarnings("ignore::pda.grammar.json_schema.JsonSchemaWarning")

_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')


def refused_key(grammar: pda.Grammar, text: str) -> str:
    """The key at which `grammar` refuses `text`: the first key that ends past the refusal (the
    refusal falls inside it, or at the comma before it)."""
    with pytest.raises(ParseError) as info:
        grammar.check(text)
    offset = len(text.encode()[: info.value.offset].decode())
    return next(json.loads(f'"{m.group(1)}"') for m in _KEY.finditer(text) if m.end() > offset)


def corpus_row(schema_id: str) -> dict[str, Any]:
    category = schema_id.split("---")[0]
    with corpus_path("jsonschemabench", "schemas", f"{category}.jsonl").open() as rows:
        return next(row for row in map(json.loads, rows) if row["id"] == schema_id)


@pytest.mark.parametrize("schema_id,key,cause", [
    ("Github_hard---o79409", "x_forwarded_for", "undeclared"),  # in subsegments: the definition's http.request
    ("Github_ultra---o80208", "$schema", "undeclared"),
    ("JsonSchemaStore---ide.host", "$schema", "undeclared"),
    ("Github_ultra---o21840", "type", "order"),  # declared before "description"
    ("Github_ultra---o41081", "type", "order"),
])
def test_corpus_refusal_is_the_documented_default(schema_id: str, key: str, cause: str) -> None:
    row = corpus_row(schema_id)
    schema, instance = row["schema"], next(t["data"] for t in row["tests"] if t["valid"])
    assert jsonschema.validators.validator_for(schema)(schema).is_valid(instance)
    text = json.dumps(instance, indent=2, ensure_ascii=False)
    assert pda.Grammar.from_json_schema(schema, whitespace="flexible", exact=True).accepts(text)
    default = pda.Grammar.from_json_schema(schema, whitespace="flexible")
    assert refused_key(default, text) == key
    declared = list(schema["properties"])
    in_schema_order = dict(sorted(instance.items(), key=lambda kv: declared.index(kv[0]) if kv[0] in declared
                                  else len(declared)))
    lifted = pda.Grammar.from_json_schema(open_objects(schema), whitespace="flexible")
    if cause == "undeclared":
        assert lifted.accepts(text)
    else:
        assert not lifted.accepts(text) and lifted.accepts(json.dumps(in_schema_order, indent=2, ensure_ascii=False))


def test_corpus_number_with_an_integer_step_written_with_a_fraction() -> None:
    """Github_ultra---o46322 writes `6000.0` for a `number` with `multipleOf: 1` (a bug, fixed: only
    `integer` is written as integer literals by default)."""
    row = corpus_row("Github_ultra---o46322")
    default = pda.Grammar.from_json_schema(row["schema"])
    for test in row["tests"]:
        if test["valid"]:
            assert default.accepts(json.dumps(test["data"], indent=2)) and default.accepts(json.dumps(test["data"]))


def test_an_instance_meta_key_is_an_ordinary_key() -> None:
    """`$schema` in an instance is a key like any other: undeclared unless the schema declares it."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
              "properties": {"name": {"type": "string"}}}
    text = '{"$schema": "http://json-schema.org/draft-04/schema#", "name": "x"}'
    assert refused_key(pda.Grammar.from_json_schema(schema), text) == "$schema"
    assert pda.Grammar.from_json_schema(schema, exact=True).accepts(text)
    assert pda.Grammar.from_json_schema({**schema, "additionalProperties": True}).accepts(text)
    declared = {**schema, "properties": {"$schema": {"type": "string"}, **schema["properties"]}}
    assert pda.Grammar.from_json_schema(declared).accepts(text)


@pytest.mark.parametrize("draft,siblings_apply", [("http://json-schema.org/draft-07/schema#", False),
                                                   ("https://json-schema.org/draft/2020-12/schema", True)])
def test_properties_beside_a_ref_declare_only_from_2019_09(draft: str, siblings_apply: bool) -> None:
    """Up to draft 7 a `$ref` ignores its siblings (JsonSchemaStore's stale, yamllint, codeclimate):
    `pulls` is then not declared, so the default refuses it and JSON Schema takes any value."""
    schema = {"$schema": draft, "$ref": "#/definitions/config",
              "definitions": {"config": {"type": "object", "properties": {"days": {"type": "integer"}}}},
              "properties": {"pulls": {"$ref": "#/definitions/config"}}}
    validator = jsonschema.validators.validator_for(schema)(schema)
    default, exact = pda.Grammar.from_json_schema(schema), pda.Grammar.from_json_schema(schema, exact=True)
    for text in ('{"days": 1, "pulls": {"days": 2}}', '{"pulls": "x"}'):
        assert exact.accepts(text) == validator.is_valid(json.loads(text)), text
    assert validator.is_valid({"pulls": "x"}) != siblings_apply
    if siblings_apply:
        assert default.accepts('{"days": 1, "pulls": {"days": 2}}')
    else:
        assert refused_key(default, '{"days": 1, "pulls": {"days": 2}}') == "pulls"


def test_a_definition_declares_its_own_properties() -> None:
    """Github_hard---o79409's shape: `http.request` declares `xff` at the top, but the subsegment
    definition's `http.request` does not, so `xff` is undeclared there."""
    request = {"type": "object", "properties": {"ua": {"type": "string"}}}
    schema = {"type": "object",
              "definitions": {"sub": {"type": "object", "properties": {"http": request}}},
              "properties": {"http": {**request, "properties": {"ua": {"type": "string"}, "xff": {"type": "boolean"}}},
                             "subs": {"type": "array", "items": {"$ref": "#/definitions/sub"}}}}
    text = '{"http": {"ua": "m", "xff": true}, "subs": [{"http": {"ua": "m", "xff": true}}]}'
    assert pda.Grammar.from_json_schema(schema, exact=True).accepts(text)
    default = pda.Grammar.from_json_schema(schema)
    assert default.accepts_prefix(text[: text.index("subs")]) and refused_key(default, text) == "xff"
    assert pda.Grammar.from_json_schema(open_objects(schema)).accepts(text)
