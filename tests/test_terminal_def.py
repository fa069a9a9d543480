"""`TerminalDef`'s own `__init__` (all fields at once) behaves as the dataclass's generated one did."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from pda.grammar.ir import TerminalAutomaton, TerminalDef

FIELDS = ("name", "pattern", "flags", "priority", "literal", "lazy", "line", "automaton")


def test_defaults_and_every_field_by_position_and_by_name() -> None:
    plain = TerminalDef("A", "a+")
    assert [getattr(plain, f) for f in FIELDS] == ["A", "a+", "", 0, False, False, None, None]
    automaton = TerminalAutomaton(1, 0, (0,), ())
    values = ["B", "b", "i", 2, True, True, 7, automaton]
    by_position = TerminalDef(*values)  # type: ignore[arg-type]
    by_name = TerminalDef(**dict(zip(FIELDS, values)))  # type: ignore[arg-type]
    assert [getattr(by_position, f) for f in FIELDS] == values
    assert [getattr(by_name, f) for f in FIELDS] == values
    assert [f.name for f in dataclasses.fields(TerminalDef)] == list(FIELDS)


def test_frozen_equal_and_hashed_by_content_but_the_line() -> None:
    a, b = TerminalDef("A", "a", priority=1, line=3), TerminalDef("A", "a", priority=1, line=9)
    assert a == b and hash(a) == hash(b)
    assert a != TerminalDef("A", "a", priority=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.pattern = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        TerminalDef("A")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        TerminalDef("A", "a", colour="red")  # type: ignore[call-arg]


def test_replace_repr_and_pickle() -> None:
    a = TerminalDef("A", "a", lazy=True)
    changed = dataclasses.replace(a, pattern="b")
    assert (changed.pattern, changed.lazy, changed.name) == ("b", True, "A")
    assert repr(a) == ("TerminalDef(name='A', pattern='a', flags='', priority=0, literal=False, lazy=True, "
                       "line=None, automaton=None)")
    assert pickle.loads(pickle.dumps(a)) == a
