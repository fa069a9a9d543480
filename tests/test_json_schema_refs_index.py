"""`References`' index of `$id`/`id`/`$anchor` names, built only when `validate` saw a name.

`validate` reports whether any object of the document holds one of those keywords as a string; when
none does, `References` never walks the document for names. The report may be true where the index
is still empty (a name inside `examples`, data the index skips), never false where it is not."""

from __future__ import annotations

import json

import pytest

from pda.errors import GrammarError
from pda.grammar.json_schema.refs import References
from pda.grammar.json_schema.validate import validate
from tests.conftest import corpus_path

CATEGORIES = ["Github_easy", "Github_hard", "Github_medium", "Github_trivial", "Github_ultra", "Glaiveai2K",
              "Handwritten", "JsonSchemaStore", "Kubernetes", "Snowplow", "Synthesized", "WashingtonPost"]


@pytest.mark.parametrize("category", CATEGORIES)
def test_no_name_seen_means_an_empty_index(category: str) -> None:
    with corpus_path("jsonschemabench", "schemas", f"{category}.jsonl").open() as rows:
        for row in map(json.loads, rows):
            schema = row["schema"]
            try:
                names = validate(schema)
            except GrammarError:  # a malformed corpus schema: validate's errors are other tests' subject
                continue
            anchors = References(schema).anchors
            assert names or not anchors, row["id"]
            assert References(schema, names=names).anchors == anchors, row["id"]


def test_names_as_data_are_seen_but_not_indexed() -> None:
    schema = {"examples": [{"$id": "x"}], "properties": {"id": {"type": "string"}}}
    assert validate(schema) and References(schema).anchors == {}
    assert not validate({"properties": {"id": {"type": "string"}, "$id": {"const": "y"}}})


def test_a_named_subschema_resolves() -> None:
    schema = {"$defs": {"a": {"$id": "urn:a", "type": "string"}, "b": {"$anchor": "bee", "type": "integer"}}}
    refs = References(schema, names=validate(schema))
    assert refs.resolve("urn:a", ()) is schema["$defs"]["a"]
    assert refs.resolve("#bee", ()) is schema["$defs"]["b"]
