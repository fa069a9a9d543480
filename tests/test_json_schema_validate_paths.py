"""`validate`'s two ways through an object node: an exact `dict` whose keys are exact strings is
checked by a type test per key; anything else (a subclass, a non-string key) goes through the
full check, which names the place and the bad key as before."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from pda.errors import GrammarError
from pda.grammar.json_schema.validate import validate


class Key(str):
    pass


@pytest.mark.parametrize(("schema", "message"), [
    ({1: {}}, "#: object keys must be strings, got 1"),
    ({"properties": {"a": {2.5: True}}}, "#/properties/a: object keys must be strings, got 2.5"),
    (OrderedDict([(None, 1)]), "#: object keys must be strings, got None"),
    ({"default": OrderedDict([("x", OrderedDict([(3, 1)]))])}, "#/default/x: object keys must be strings, got 3"),
    ({"enum": [{"k": float("nan")}]}, "#/enum/0/k: nan is not a JSON number"),
    ({"type": 5}, "#/type: must be a type name"),
])
def test_bad_objects_are_named_at_their_place(schema: object, message: str) -> None:
    with pytest.raises(GrammarError) as info:
        validate(schema)
    assert str(info.value).startswith(message), str(info.value)


def test_string_subclass_keys_and_dict_subclasses_are_json() -> None:
    assert validate({Key("properties"): OrderedDict([(Key("a"), {"type": "string"})])}) is False
    assert validate(OrderedDict([("$id", "x"), ("type", "object")])) is True
