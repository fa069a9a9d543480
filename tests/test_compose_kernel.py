"""The mask composition kernel (`pda.kernels.compose`) against the plain loop it replaced.

Parser nodes, groups and classifications are stand-ins with the attributes the
kernel reads, so every branch is reached on purpose: probes that refuse, groups
the node does not take (no probe), memo hits and misses, second boundaries,
terminal sets past 64 bits, inside tokens as a mask or as ids; then its errors, and
that it leaks no reference.
Whole masks against the reference path are tests/test_masks*.py.
"""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest

from pda.kernels import compose

WORDS = 7


class Classif:
    def __init__(self, inside: np.ndarray | None, groups: tuple, tokens: np.ndarray | None = None) -> None:
        self.inside, self.groups, self.tokens = inside, groups, tokens


class Group:
    def __init__(self, terminals: int) -> None:
        self.terminals, self.after = terminals, {}


class Node:
    """A stand-in parser node: `allowed`, and `probe` read off a table (None: the parser refuses)."""

    def __init__(self, allowed: int, moves: dict[int, "Node | None"] | None = None) -> None:
        self.allowed, self.moves, self.probes = allowed, moves or {}, 0

    def probe(self, terminals: int) -> "Node | None":
        self.probes += 1
        return self.moves.get(terminals)


def plain_loop(acc: np.ndarray, node: Node, groups: tuple, ignore: int, after_boundary) -> None:
    """The Python loop the kernel replaced (`pda.masks` before), the oracle."""
    stack = [(node, groups)]
    while stack:
        at, groups = stack.pop()
        for group in groups:
            after = at.probe(group.terminals) if group.terminals & at.allowed else at
            if after is None:
                continue
            live = after.allowed | ignore
            sub = group.after.get(live)
            if sub is None:
                sub = after_boundary(group, live)
            if sub.tokens is not None:
                for t in sub.tokens.tolist():
                    acc[t >> 5] |= np.int32(np.uint32(1 << (t & 31)).view(np.int32))
            elif sub.inside is not None:
                np.bitwise_or(acc, sub.inside, out=acc)
            if sub.groups:
                stack.append((after, sub.groups))


def random_case(rng: random.Random) -> tuple[Node, tuple, dict]:
    """A random parser (nodes and moves), groups nested a few levels, and each miss's classification."""
    bits = [1 << rng.choice([0, 1, 2, 3, 63, 64, 65, 130]) for _ in range(6)]
    nodes = [Node(sum(b for b in bits if rng.random() < 0.5)) for _ in range(6)]
    for n in nodes:
        n.moves = {b: rng.choice(nodes + [None]) for b in bits}
    made: dict = {}

    def groups(depth: int) -> tuple:
        return tuple(Group(rng.choice(bits)) for _ in range(rng.randint(0, 3 if depth < 3 else 0)))

    def classification(depth: int) -> Classif:
        if rng.random() < 0.3:  # a few token ids (a walk after a boundary)
            ids = sorted(rng.sample(range(32 * WORDS), rng.randint(1, 6)))
            return Classif(None, groups(depth + 1), np.array(ids, dtype=np.int32))
        inside = None if rng.random() < 0.3 else rng.getrandbits(32 * WORDS).to_bytes(4 * WORDS, "little")
        return Classif(None if inside is None else np.frombuffer(inside, dtype=np.int32), groups(depth + 1))

    top = groups(0)
    for g in top:
        if rng.random() < 0.5:  # some memo hits up front
            g.after[rng.choice(nodes).allowed] = classification(1)
    made["classification"] = classification
    return rng.choice(nodes), top, made


@pytest.mark.parametrize("seed", range(40))
def test_kernel_equals_the_plain_loop(seed: int) -> None:
    rng = random.Random(seed)
    node, groups, made = random_case(rng)
    ignore = rng.choice([0, 1 << 2, 1 << 64])
    answers: dict = {}

    def after_boundary(group: Group, live: int) -> Classif:
        key = (id(group), live)
        if key not in answers:
            answers[key] = made["classification"](2)
        group.after[live] = answers[key]
        return answers[key]

    base = None if seed % 2 else np.frombuffer(rng.getrandbits(32 * WORDS).to_bytes(4 * WORDS, "little"), np.int32)
    got = np.full(WORDS, -1, dtype=np.int32)  # the kernel first: it meets the misses (the loop then finds memos)
    fp = compose.compose(got, base, node, groups, ignore, after_boundary)
    want = np.zeros(WORDS, dtype=np.int32) if base is None else base.copy()
    plain_loop(want, node, groups, ignore, after_boundary)
    assert got.tobytes() == want.tobytes() and fp == compose.fingerprint(want)


def test_a_memo_hit_calls_nothing_and_a_refused_probe_drops_the_group() -> None:
    inside = np.arange(WORDS, dtype=np.int32)
    after = Node(allowed=0b100)
    node = Node(allowed=0b11, moves={0b1: after, 0b10: None})
    hit, refused, untaken = Group(0b1), Group(0b10), Group(0b1000)
    hit.after[0b100 | 0b10000] = Classif(inside, ())
    untaken.after[0b11 | 0b10000] = Classif(inside * 2, ())
    calls = []
    acc = np.zeros(WORDS, dtype=np.int32)
    compose.compose(acc, None, node, (hit, refused, untaken), 0b10000, lambda g, live: calls.append((g, live)))
    assert calls == [] and node.probes == 2  # the untaken group is not probed: its node is the node itself
    assert acc.tolist() == (inside | inside * 2).tolist()


def test_errors_name_what_is_wrong_and_leak_nothing() -> None:
    node, group = Node(allowed=1), Group(1)
    node.moves = {1: node}
    sub = Classif(np.ones(WORDS, dtype=np.int32), ())
    group.after[1] = sub
    acc = np.zeros(WORDS, dtype=np.int32)
    before = [sys.getrefcount(x) for x in (node, group, sub, sub.inside)]
    for _ in range(100):
        compose.compose(acc, None, node, (group,), 0, lambda g, live: sub)
    with pytest.raises(ValueError, match="int32"):
        compose.compose(np.zeros(WORDS, dtype=np.int64), None, node, (group,), 0, lambda g, live: sub)
    with pytest.raises(ValueError, match="base is not 7 int32 words"):
        compose.compose(acc, np.ones(WORDS + 1, dtype=np.int32), node, (group,), 0, lambda g, live: sub)
    with pytest.raises(ValueError, match="base is not 7 int32 words"):
        compose.compose(acc, np.ones(WORDS, dtype=np.int64), node, (group,), 0, lambda g, live: sub)
    with pytest.raises(TypeError, match="tuple"):
        compose.compose(acc, None, node, [group], 0, lambda g, live: sub)
    group.after[1] = Classif(np.ones(WORDS + 1, dtype=np.int32), ())
    with pytest.raises(ValueError, match="inside mask"):
        compose.compose(acc, None, node, (group,), 0, lambda g, live: sub)
    group.after[1] = Classif(None, (), np.array([32 * WORDS], dtype=np.int32))
    with pytest.raises(ValueError, match="outside the mask"):
        compose.compose(acc, None, node, (group,), 0, lambda g, live: sub)
    group.after[1] = Classif(None, (), np.array([1], dtype=np.int64))
    with pytest.raises(ValueError, match="int32 ids"):
        compose.compose(acc, None, node, (group,), 0, lambda g, live: sub)
    group.after.clear()

    def failing(g: Group, live: int) -> Classif:
        raise KeyError("a walk failed")

    with pytest.raises(KeyError, match="a walk failed"):
        compose.compose(acc, None, node, (group,), 0, failing)
    group.after[1] = sub
    assert [sys.getrefcount(x) for x in (node, group, sub, sub.inside)] == before


def test_the_base_is_copied_then_ored_into() -> None:
    """acc's old words are gone (the base, or zeros, first); the base itself is not written; acc may be the base."""

    def no_miss(g: Group, live: int) -> Classif:
        raise AssertionError("every group here has its memo")

    node, group = Node(allowed=0), Group(1)
    group.after[0] = Classif(np.full(WORDS, 0b100, dtype=np.int32), ())
    base = np.arange(WORDS, dtype=np.int32)
    acc = np.full(WORDS, -1, dtype=np.int32)
    assert compose.compose(acc, base, node, (group,), 0, no_miss) == compose.fingerprint(base | 0b100)
    assert acc.tolist() == (base | 0b100).tolist() and base.tolist() == list(range(WORDS))
    acc[:] = -1
    compose.compose(acc, None, node, (), 0, no_miss)
    assert acc.tolist() == [0] * WORDS
    compose.compose(base, base, node, (group,), 0, no_miss)
    assert base.tolist() == (np.arange(WORDS) | 0b100).tolist()


def test_fingerprint_is_a_function_of_every_word() -> None:
    rng = np.random.default_rng(7)
    for words in (0, 1, 7, 8, 9, 4748):
        mask = rng.integers(-(2**31), 2**31, size=words, dtype=np.int32)
        fp = compose.fingerprint(mask)
        assert 0 <= fp < 2**64 and compose.fingerprint(mask.copy()) == fp
        for i in range(words):  # every word position (the lanes' and the tail's) changes it
            flipped = mask.copy()
            flipped.view(np.uint32)[i] ^= np.uint32(1 << (i % 32))
            assert compose.fingerprint(flipped) != fp, (words, i)
    with pytest.raises(ValueError, match="int32"):
        compose.fingerprint(np.zeros(8, dtype=np.int64))
    with pytest.raises(ValueError, match="contiguous"):
        compose.fingerprint(np.zeros(16, dtype=np.int32)[::2])
