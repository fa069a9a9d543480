"""`pda.collector.paused`: the cyclic collector is off inside, restored after, shared by nested and concurrent builds."""

from __future__ import annotations

import gc
import threading

import pda
from pda import collector


def test_paused_restores_the_collector_as_it_was() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    gc.disable()
    try:
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # a user's own disable is kept
    finally:
        gc.enable()


def test_an_error_inside_ends_the_pause() -> None:
    try:
        with collector.paused():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()


def test_concurrent_builds_end_with_the_collector_on() -> None:
    barrier = threading.Barrier(4)

    def build(k: int) -> None:
        barrier.wait()
        grammar = pda.Grammar.from_lark(f'start: "a{k}" X\nX: /[0-9]+/')
        assert grammar.accepts(f"a{k}12")

    threads = [threading.Thread(target=build, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gc.isenabled()


def test_building_a_grammar_leaves_the_collector_on() -> None:
    grammar = pda.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "string", "maxLength": 40}}})
    assert grammar.accepts('{"a":"x"}')
    assert gc.isenabled()
