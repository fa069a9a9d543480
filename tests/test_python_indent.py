"""Exact masks where the indenter reads more than widths: tabs and spaces mixed
(`TabError`: widths with tabs of 8 and of 1), line continuations inside a line's
indentation, and lone `\\r` line breaks (pda/parser/indent.py).

Each text is fed byte by byte through the compiled grammar's lexer, and at every
prefix the fast mask (Qwen2 vocabulary) is compared with the reference on sampled
token ids and every one-byte token; the text's verdict must be `ast.parse`'s.
"""

from __future__ import annotations

import ast
import sys
import warnings

import numpy as np
import pytest

import pda
from pda.reference import mask_mismatches
from tests.conftest import GRAMMARS

TEXTS = [
    "if x:\n\ty\n        z\n",  # TabError: same width with tabs of 8, not of 1
    "if x:\n  \ty\n\tz\n",  # same widths (8, 3) and (8, 1): TabError
    "if x:\n\tif y:\n\t\tz\n\tw\n",
    "def h():\n\t\\\nd\n\te",  # the continuation makes the line (8, 8): TabError at `e`
    "if 1:\n\\\n  x\n",  # a continuation at column 0: the next line's white space counts
    "if x:\n  y\n\t\\\n#c\n  z\n",  # a blank line with a continuation in it
    "x = 1\n\\\n",  # the text may not end after a continuation
    "if x:\r  y\r  z\r",  # lone \r line breaks
    "x = (1,\n\t\\\n 2)\n",
]
TOKENS_PER_STATE = 400


@pytest.fixture(scope="module")
def compiled() -> pda.CompiledGrammar:
    from pda.demo.qwen import load_qwen2_tokenizer

    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    return pda.compile(pda.Grammar.load(str(GRAMMARS / "python.lark")), vocab)


def python_accepts(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize("text", TEXTS)
def test_masks_along_text_equal_reference(compiled: pda.CompiledGrammar, text: str) -> None:
    vocab = compiled.vocab
    byte_token = {data: i for i, data in enumerate(vocab.tokens) if data is not None and len(data) == 1}
    nprng = np.random.default_rng(10)
    node, q = compiled.initial_state()
    failures = []
    completed = True
    for byte in text.encode("utf-8"):
        allowed = np.flatnonzero(np.unpackbits(compiled.text_mask(node, q).view(np.uint8), bitorder="little"))
        sample = np.concatenate([
            nprng.integers(0, vocab.size, TOKENS_PER_STATE),
            nprng.choice(allowed, min(len(allowed), TOKENS_PER_STATE), replace=False) if len(allowed) else [],
            sorted(vocab.eos_ids),
            list(byte_token.values()),
        ]).astype(np.int64)
        bad = mask_mismatches(compiled, node, q, np.unique(sample))
        if bad:
            failures.append((len(failures), bad[:5]))
        step = compiled.scanner.feed(node, q, bytes((byte,)))
        if step is None:
            completed = False
            break
        node, q = step
    assert failures == []
    assert (completed and compiled.scanner.can_end(node, q)) == python_accepts(text)


PROBE_TEXTS = [*TEXTS, "def f(a, b=[1, (2, {3: 4})]):\n    if a:\n        return b[0]\n    x = f(\n        1)\n"]


def _fields(state: object) -> tuple | None:
    if state is None:
        return None
    return (type(state), state.earley, state.stack, state.depth, state.line_start, state.mode, state.may_end,
            state.continued, state.allowed)


def _terminal_sets(allowed: int) -> list[int]:
    """Each terminal of `allowed` alone, neighbours together, all of them, and a set it does not meet."""
    bits = [1 << i for i in range(allowed.bit_length()) if allowed >> i & 1]
    return [*bits, *(a | b for a, b in zip(bits, bits[1:])), allowed, ~allowed & ((1 << allowed.bit_length()) - 1)]


@pytest.mark.parametrize("text", PROBE_TEXTS)
def test_compiled_probe_equals_the_python_step(compiled: pda.CompiledGrammar, text: str) -> None:
    """`IndentedNode.probe` (pda/kernels/_indent.c) against `_step(..., probe=True)`, its Python oracle, from
    every state along the text and one probe further: the same fields, the same interned Earley node."""
    node, q = compiled.initial_state()
    states = [node]
    for byte in text.encode("utf-8"):
        step = compiled.scanner.feed(node, q, bytes((byte,)))
        if step is None:
            break
        node, q = step
        if node is not states[-1]:
            states.append(node)
    compared = 0
    for state in states:
        for i, terminals in enumerate(_terminal_sets(state.allowed)):
            got = state.probe(terminals)
            masked = terminals & state.allowed
            assert _fields(got) == (_fields(state._step(masked, probe=True)) if masked else None)
            compared += 1
            if got is not None and i < 8:
                for further in _terminal_sets(got.allowed):
                    masked = further & got.allowed
                    assert _fields(got.probe(further)) == (
                        _fields(got._step(masked, probe=True)) if masked else None)
                    compared += 1
    assert compared > 1000


def test_compiled_probe_refuses_what_it_cannot_read(compiled: pda.CompiledGrammar) -> None:
    node, _ = compiled.initial_state()
    with pytest.raises(TypeError, match="int bitmask"):
        node.probe("1")
    bare = type(node).__new__(type(node))
    with pytest.raises(TypeError, match="without its indenter"):
        bare.probe(1)


def test_compiled_probe_leaks_no_reference(compiled: pda.CompiledGrammar) -> None:
    node, q = compiled.initial_state()
    for byte in b"x = f(a, [":
        node, q = compiled.scanner.feed(node, q, bytes((byte,)))
    assert node.depth > 0
    terminals = _terminal_sets(node.allowed)
    for t in terminals:  # the Earley probes remembered first
        node.probe(t)
    before = [sys.getrefcount(x) for x in (node, node.earley, node.stack, node.depth, node.indenter)]
    for _ in range(100):
        for t in terminals:
            node.probe(t)
    assert [sys.getrefcount(x) for x in (node, node.earley, node.stack, node.depth, node.indenter)] == before
