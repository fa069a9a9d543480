"""Exact masks inside indented Python code with the Qwen2 vocabulary (issue 10 "Show").

States come from replaying files of ../shared/corpus/python/valid token by token
(Qwen2's own tokenization, through `pda.Matcher`), from short random walks that
continue from those states, and from random walks from the start. For each state
the fast mask is compared with the reference (the token's bytes fed one at a time
through the lexer and the indenter-wrapped parser) on a random sample of token
ids, a sample of the ids the fast mask allows, and EOS. Line starts after `:`
(an `_INDENT` is due), states inside brackets (newlines are dropped there) and
states at depth (an indentation stack of two levels or more) are checked on
purpose, since those are the stack-dependent cases of the token index.

The default run checks a few dozen states; `--long` runs the full 2,000.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import numpy as np
import pytest

import pda
from pda.parser.indent import IndentedNode
from pda.reference import mask_mismatches, random_walk_states
from tests.conftest import GRAMMARS, corpus_path

LONG_STATES = 2000
SHORT_STATES = 24
TOKENS_PER_STATE = 3000
# Replayed files: nested blocks, classes, brackets over several lines; more with --long.
SHORT_FILES = ("bisect.py", "colorsys.py", "antigravity.py")
LONG_FILES = SHORT_FILES + ("cmd.py", "chunk.py", "_sitebuiltins.py", "cgitb.py", "fnmatch.py", "selectors.py")


@dataclass(frozen=True)
class State:
    """A (parser node, lexer state) to check, and why it was picked."""

    node: IndentedNode
    q: int
    kind: str  # "after_colon", "in_brackets", "nested", "walk", "other"


@pytest.fixture(scope="module")
def compiled() -> pda.CompiledGrammar:
    from pda.demo.qwen import load_qwen2_tokenizer

    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    return pda.compile(pda.Grammar.load(str(GRAMMARS / "python.lark")), vocab)


# A block header's line break and the next line's indentation, read so far: the newline
# lexeme is pending and its width (still growing) decides whether an _INDENT comes.
AFTER_COLON = re.compile(r":[ \t]*(?:#[^\n]*)?\r?\n[ \t\f\r\n]*\Z")


def kind_of(node: IndentedNode, text: str) -> str:
    if node.depth > 0:
        return "in_brackets"
    if AFTER_COLON.search(text):
        return "after_colon"
    if len(node.stack) > 2:
        return "nested"
    return "other"


def replay(compiled: pda.CompiledGrammar, text: str) -> list[State]:
    """Every state along the canonical tokenization of `text` (which must be accepted)."""
    vocab = compiled.vocab
    ids = vocab.encode(text)
    assert ids is not None
    m = pda.Matcher(compiled)
    states = []
    done = b""
    for token in ids:
        node, q = m._history[-1]
        states.append(State(node, q, kind_of(node, done.decode("utf-8", "replace"))))
        assert m.accept_token(token), f"token {token} {vocab.tokens[token]!r} rejected after {done[-80:]!r}"
        done += vocab.tokens[token]
    assert m.can_end()
    return states


def walk_from(compiled: pda.CompiledGrammar, node, q: int, rng: random.Random, steps: int) -> list[State]:
    """A random continuation by the fast mask: states the corpus never reaches, still in indented code."""
    out = []
    for _ in range(steps):
        allowed = np.flatnonzero(np.unpackbits(compiled.text_mask(node, q).view(np.uint8), bitorder="little"))
        if len(allowed) == 0:
            break
        token = int(allowed[rng.randrange(len(allowed))])
        nxt = compiled.scanner.feed(node, q, compiled.vocab.tokens[token])
        assert nxt is not None, f"fast mask allowed token {token} that the lexer rejects"
        node, q = nxt
        out.append(State(node, q, "walk"))
    return out


def pick_states(compiled: pda.CompiledGrammar, n: int, seed: int, files: tuple[str, ...]) -> list[State]:
    """About n states: a quarter each after ':', in brackets, nested, and random walks; the rest other."""
    rng = random.Random(seed)
    folder = corpus_path("python", "valid")
    by_kind: dict[str, list[State]] = {}
    for name in files:
        for state in replay(compiled, (folder / name).read_text(encoding="utf-8")):
            by_kind.setdefault(state.kind, []).append(state)
    quota = n // 4
    chosen: list[State] = []
    for kind in ("after_colon", "in_brackets", "nested"):
        pool = by_kind.get(kind, [])
        assert pool, f"no {kind} state in the replayed files"
        chosen += rng.sample(pool, min(quota, len(pool)))
    indented = by_kind["nested"] + by_kind["after_colon"] + by_kind["in_brackets"]
    walks: list[State] = []
    while len(walks) < quota // 2:
        start = rng.choice(indented)
        walks += walk_from(compiled, start.node, start.q, rng, steps=8)
    while len(walks) < quota:
        walks += [State(node, q, "walk") for node, q, _ in random_walk_states(compiled, rng, max_steps=20)]
    chosen += walks[:quota]
    rest = [s for kind in sorted(by_kind) for s in by_kind[kind]]
    chosen += rng.sample(rest, min(n - len(chosen), len(rest)))
    return chosen


def check(compiled: pda.CompiledGrammar, state: State, nprng: np.random.Generator) -> list[tuple[int, bool, bool]]:
    vocab = compiled.vocab
    allowed = np.flatnonzero(np.unpackbits(compiled.text_mask(state.node, state.q).view(np.uint8), bitorder="little"))
    sample = np.concatenate([
        nprng.integers(0, vocab.size, TOKENS_PER_STATE),
        nprng.choice(allowed, min(len(allowed), TOKENS_PER_STATE), replace=False) if len(allowed) else [],
        sorted(vocab.eos_ids),
    ]).astype(np.int64)
    return mask_mismatches(compiled, state.node, state.q, np.unique(sample))


def test_python_masks_equal_reference(compiled: pda.CompiledGrammar, request: pytest.FixtureRequest) -> None:
    long = request.config.getoption("--long")
    n = LONG_STATES if long else SHORT_STATES
    states = pick_states(compiled, n, seed=10, files=LONG_FILES if long else SHORT_FILES)
    kinds = {kind: sum(s.kind == kind for s in states) for kind in ("after_colon", "in_brackets", "nested", "walk")}
    assert len(states) >= n and min(kinds.values()) >= n // 8, kinds
    nprng = np.random.default_rng(10)
    failures = []
    for state in states:
        bad = check(compiled, state, nprng)
        if bad:
            failures.append((state.kind, state.node.stack, state.node.depth, bad[:5]))
    assert failures == []


def test_line_start_after_colon_masks(compiled: pda.CompiledGrammar) -> None:
    """After `if x:` and a line break, a statement must be indented deeper; inside brackets
    any indentation is allowed (Qwen2 has no token of a newline plus spaces: they are two)."""
    vocab = compiled.vocab
    ids = {data: i for i, data in enumerate(vocab.tokens) if data is not None}
    four, eight, name = ids[b"    "], ids[b"        "], ids[b"pass"]

    def after(text: str, *tokens: int) -> pda.Matcher:
        m = pda.Matcher(compiled)
        for token in [*vocab.encode(text), *tokens]:
            assert m.accept_token(token), (text, token)
        return m

    block = "def f(x):\n    if x:\n"
    assert four in after(block).allowed_token_ids()  # a prefix of deeper indentation
    assert name not in after(block, four).allowed_token_ids()  # same level: no _INDENT
    assert name in after(block, eight).allowed_token_ids()
    assert not after(block, eight).can_end()  # the body of the if is still missing
    inside = "x = f(1,\n"
    assert name in after(inside).allowed_token_ids()
    assert name in after(inside, four).allowed_token_ids()
    assert name in after(inside, eight).allowed_token_ids()


def test_text_start_and_end_masks(compiled: pda.CompiledGrammar) -> None:
    """The first line's indentation may only begin a blank or comment line; the text may end
    after a comment or white space without a last line break, not after a continuation."""
    vocab = compiled.vocab
    ids = {data: i for i, data in enumerate(vocab.tokens) if data is not None}
    four, name, newline, comment = ids[b"    "], ids[b"pass"], ids[b"\n"], ids[b"#"]

    def after(text: str) -> pda.Matcher:
        m = pda.Matcher(compiled)
        for token in vocab.encode(text) if text else []:
            assert m.accept_token(token), (text, token)
        return m

    start = after("")
    assert {four, name, newline, comment} <= set(start.allowed_token_ids().tolist())
    assert start.accept_token(four)
    allowed = set(start.allowed_token_ids().tolist())
    assert newline in allowed and comment in allowed and name not in allowed
    assert start.can_end()
    for text, can_end in (("x = 1\n# end", True), ("x = 1\n\t", True), ("if x:\n    y\n  ", True),
                          ("x = 1 \\\n", False), ("if x:\n    # body?", False)):
        m = after(text)
        assert m.can_end() == can_end, text
        eos = sorted(vocab.eos_ids)[0]
        assert (eos in m.allowed_token_ids()) == can_end, text
