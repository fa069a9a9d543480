"""The mask composition kernel (`pda.kernels.compose`) against the plain loop it replaced, and its objects.

Parser nodes are stand-ins with the attributes the kernel reads, groups and
classifications the kernel's own types, so every branch is reached on purpose:
probes that refuse, groups the node does not take (no probe), memo hits and
misses, second boundaries, terminal sets past 64 bits, inside tokens as a mask or
as ids, and each form of the result (the root's own mask, an `ExtendedMask`, a
dense mask); then its errors, that it leaks no reference, and that its objects are
what their constructors promise and untracked by the garbage collector.
Whole masks against the reference path are tests/test_masks*.py.
"""

from __future__ import annotations

import array
import gc
import random
import sys

import numpy as np
import pytest

from pda import rows
from pda.kernels import compose
from pda.kernels.compose import BoundaryGroup, Classification, ExtendedMask

WORDS = 7


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


def dense(mask: np.ndarray | ExtendedMask | None) -> np.ndarray:
    """A result of the kernel as WORDS words, written as a row writer writes it."""
    out = np.full((1, WORDS), -1, dtype=np.int32)
    rows.copy_row(out, 0, np.zeros(WORDS, dtype=np.int32) if mask is None else mask)
    return out[0]


def random_mask(rng: random.Random) -> np.ndarray:
    return np.frombuffer(rng.getrandbits(32 * WORDS).to_bytes(4 * WORDS, "little"), dtype=np.int32)


def random_case(rng: random.Random) -> tuple[Node, tuple, dict]:
    """A random parser (nodes and moves), groups nested a few levels, and each miss's classification."""
    bits = [1 << rng.choice([0, 1, 2, 3, 63, 64, 65, 130]) for _ in range(6)]
    nodes = [Node(sum(b for b in bits if rng.random() < 0.5)) for _ in range(6)]
    for n in nodes:
        n.moves = {b: rng.choice(nodes + [None]) for b in bits}
    made: dict = {}

    def groups(depth: int) -> tuple:
        return tuple(BoundaryGroup(rng.choice(bits)) for _ in range(rng.randint(0, 3 if depth < 3 else 0)))

    def classification(depth: int) -> Classification:
        if rng.random() < 0.3:  # a few token ids (a walk after a boundary)
            ids = sorted(rng.sample(range(32 * WORDS), rng.randint(1, 6)))
            return Classification(None, groups(depth + 1), np.array(ids, dtype=np.int32))
        return Classification(None if rng.random() < 0.3 else random_mask(rng), groups(depth + 1))

    top = groups(0)
    for g in top:
        if rng.random() < 0.5:  # some memo hits up front
            g.after[rng.choice(nodes).allowed] = classification(1)
    made["classification"] = classification
    return rng.choice(nodes), top, made


@pytest.mark.parametrize("seed", range(60))
def test_kernel_equals_the_plain_loop(seed: int) -> None:
    rng = random.Random(seed)
    node, groups, made = random_case(rng)
    ignore = rng.choice([0, 1 << 2, 1 << 64])
    answers: dict = {}

    def after_boundary(group: BoundaryGroup, live: int) -> Classification:
        key = (id(group), live)
        if key not in answers:
            answers[key] = made["classification"](2)
        group.after[live] = answers[key]
        return answers[key]

    base = None if seed % 2 else random_mask(rng)
    root = Classification(base, groups)
    sparse_max = (0, 4, 10 * WORDS, 32 * WORDS)[seed % 4]
    acc = np.full(WORDS, -1, dtype=np.int32)  # the kernel first: it meets the misses (the loop then finds memos)
    found = compose.compose(acc, root, node, ignore, after_boundary, sparse_max)
    want = np.zeros(WORDS, dtype=np.int32) if base is None else base.copy()
    plain_loop(want, node, groups, ignore, after_boundary)
    added = int(np.unpackbits((want ^ dense(base)).view(np.uint8)).sum())
    if added == 0:
        assert found is base
    elif added <= sparse_max:
        assert type(found) is ExtendedMask and found.base is base
        assert np.frombuffer(found.ids, dtype=np.int32).tolist() == [
            i for i in range(32 * WORDS) if (want ^ dense(base)).view(np.uint32)[i >> 5] >> (i & 31) & 1]
        assert dense(found).tobytes() == want.tobytes()
    else:
        assert found == compose.fingerprint(want) and acc.tobytes() == want.tobytes()


def test_every_form_of_the_result_is_met() -> None:
    """Over the random cases, each form of the result comes up (so the test above checks each)."""
    forms = set()
    for seed in range(60):
        rng = random.Random(seed)
        node, groups, made = random_case(rng)
        answers: dict = {}

        def after_boundary(group: BoundaryGroup, live: int) -> Classification:
            answers.setdefault((id(group), live), made["classification"](2))
            return answers[(id(group), live)]

        base = None if seed % 2 else random_mask(rng)
        found = compose.compose(np.zeros(WORDS, dtype=np.int32), Classification(base, groups), node, 0,
                                after_boundary, (0, 4, 10 * WORDS, 32 * WORDS)[seed % 4])
        forms.add("own" if found is base else type(found).__name__)
    assert forms == {"own", "ExtendedMask", "int"}


@pytest.mark.parametrize("groups", [2, 5, 40, 90])
def test_ids_from_interleaved_groups_come_sorted_and_distinct(groups: int) -> None:
    """Ids from several groups (each ascending, overlapping each other and the root's mask) come out ascending,
    distinct and only those the root's mask lacks: a few runs or many merged (the kernel's sort_noted), more than
    it merges (90) sorted by radix (pda/kernels/sort_ids.h)."""
    rng = random.Random(groups)
    words = 40
    node, base = Node(allowed=0), np.frombuffer(rng.getrandbits(32 * words).to_bytes(4 * words, "little"), np.int32)
    tops = []
    for _ in range(groups):
        group = BoundaryGroup(1)
        ids = sorted(rng.sample(range(32 * words), rng.randint(1, 40)))
        group.after[0] = Classification(None, (), np.array(ids, dtype=np.int32))
        tops.append(group)
    acc = np.zeros(words, dtype=np.int32)
    found = compose.compose(acc, Classification(base, tops), node, 0, len, 32 * words)
    want = base.copy()
    plain_loop(want, node, tuple(tops), 0, len)
    added = [i for i in range(32 * words) if (want ^ base).view(np.uint32)[i >> 5] >> (i & 31) & 1]
    assert type(found) is ExtendedMask and np.frombuffer(found.ids, dtype=np.int32).tolist() == added
    assert groups != 5 or 32 < len(added) <= 256
    assert groups < 40 or len(added) > 256
    # the runs seen: each group's ids ascending (those the root lacks), a new run wherever one starts lower
    noted = [t for g in tops for t in g.after[0].tokens.tolist() if not base.view(np.uint32)[t >> 5] >> (t & 31) & 1]
    runs = 1 + sum(b < a for a, b in zip(noted, noted[1:]))
    assert groups != 40 or runs <= 64
    assert groups != 90 or runs > 64


def test_a_memo_hit_calls_nothing_and_a_refused_probe_drops_the_group() -> None:
    inside = np.arange(WORDS, dtype=np.int32)
    after = Node(allowed=0b100)
    node = Node(allowed=0b11, moves={0b1: after, 0b10: None})
    hit, refused, untaken = BoundaryGroup(0b1), BoundaryGroup(0b10), BoundaryGroup(0b1000)
    hit.after[0b100 | 0b10000] = Classification(inside, ())
    untaken.after[0b11 | 0b10000] = Classification(inside * 2, ())
    calls = []
    acc = np.zeros(WORDS, dtype=np.int32)
    found = compose.compose(acc, Classification(None, (hit, refused, untaken)), node, 0b10000,
                            lambda g, live: calls.append((g, live)), 0)
    assert calls == [] and node.probes == 2  # the untaken group is not probed: its node is the node itself
    assert found == compose.fingerprint(inside | inside * 2) and acc.tolist() == (inside | inside * 2).tolist()


def test_errors_name_what_is_wrong_and_leak_nothing() -> None:
    node, group = Node(allowed=1), BoundaryGroup(1)
    node.moves = {1: node}
    sub = Classification(np.ones(WORDS, dtype=np.int32), ())
    root = Classification(np.zeros(WORDS, dtype=np.int32), (group,))
    group.after[1] = sub
    acc = np.zeros(WORDS, dtype=np.int32)
    compose.compose(acc, root, node, 0, lambda g, live: sub, 0)  # each classification keeps the array it read
    before = [sys.getrefcount(x) for x in (node, group, sub, sub.inside, root, root.inside)]
    for sparse_max in (0, 4, 1000):
        for _ in range(50):
            compose.compose(acc, root, node, 0, lambda g, live: sub, sparse_max)
    with pytest.raises(ValueError, match="int32"):
        compose.compose(np.zeros(WORDS, dtype=np.int64), root, node, 0, lambda g, live: sub, 0)
    with pytest.raises(ValueError, match="inside mask is not 7 int32 words"):
        compose.compose(acc, Classification(np.ones(WORDS + 1, dtype=np.int32), (group,)), node, 0, len, 0)
    with pytest.raises(ValueError, match="inside mask is not 7 int32 words"):
        compose.compose(acc, Classification(np.ones(WORDS, dtype=np.int64), (group,)), node, 0, len, 0)
    with pytest.raises(ValueError, match="must not be the root's inside"):
        compose.compose(root.inside, root, node, 0, lambda g, live: sub, 0)
    with pytest.raises(TypeError, match="root must be a Classification"):
        compose.compose(acc, root.inside, node, 0, lambda g, live: sub, 0)
    with pytest.raises(TypeError, match="not a BoundaryGroup"):
        compose.compose(acc, Classification(None, [object()]), node, 0, len, 0)
    group.after[1] = Classification(np.ones(WORDS + 1, dtype=np.int32), ())
    with pytest.raises(ValueError, match="inside mask"):
        compose.compose(acc, root, node, 0, lambda g, live: sub, 0)
    group.after[1] = Classification(None, (), np.array([32 * WORDS], dtype=np.int32))
    with pytest.raises(ValueError, match="outside the mask"):
        compose.compose(acc, root, node, 0, lambda g, live: sub, 0)
    for sparse_max in (1, 1000):  # after the words are made (past sparse_max), and before
        group.after[1] = Classification(None, (), np.array([1, 2, 3, -1], dtype=np.int32))
        with pytest.raises(ValueError, match="token -1 is outside the mask"):
            compose.compose(acc, root, node, 0, lambda g, live: sub, sparse_max)
    group.after[1] = Classification(None, (), np.array([1], dtype=np.int64))
    with pytest.raises(ValueError, match="int32 ids"):
        compose.compose(acc, root, node, 0, lambda g, live: sub, 0)
    group.after.clear()
    with pytest.raises(TypeError, match="not a Classification"):
        compose.compose(acc, root, node, 0, lambda g, live: sub.inside, 0)

    def failing(g: BoundaryGroup, live: int) -> Classification:
        raise KeyError("a walk failed")

    with pytest.raises(KeyError, match="a walk failed"):
        compose.compose(acc, root, node, 0, failing, 0)
    group.after[1] = sub
    assert [sys.getrefcount(x) for x in (node, group, sub, sub.inside, root, root.inside)] == before


def test_a_classification_reads_its_array_once_and_again_when_it_changes() -> None:
    """A classification keeps the numpy array compose read (one reference, until the field holds another or the
    classification dies): a field set anew is read anew, and an exporter with a buffer to release (array.array)
    is read per composition, holding nothing."""

    def no_miss(g: BoundaryGroup, live: int) -> Classification:
        raise AssertionError("every group here has its memo")

    node, group = Node(allowed=0), BoundaryGroup(1)
    first, second = np.array([3, 40], dtype=np.int32), np.array([7, 41], dtype=np.int32)
    sub = Classification(None, (), first)
    group.after[0] = sub
    root = Classification(None, (group,))
    acc = np.zeros(WORDS, dtype=np.int32)

    def ids() -> list[int]:
        return np.frombuffer(compose.compose(acc, root, node, 0, no_miss, 32).ids, dtype=np.int32).tolist()

    held = sys.getrefcount(first)
    assert ids() == [3, 40]
    assert sys.getrefcount(first) == held + 1
    assert ids() == [3, 40]
    assert sys.getrefcount(first) == held + 1  # read once
    sub.tokens = second
    assert ids() == [7, 41]
    assert sys.getrefcount(first) == held - 1 and sys.getrefcount(second) == held + 1
    sub.tokens = None
    sub.inside = np.full(WORDS, 0b10, dtype=np.int32)  # a mask now: ORed in, past sparse_max 0 a dense result
    assert compose.compose(acc, root, node, 0, no_miss, 0) == compose.fingerprint(sub.inside)
    assert sys.getrefcount(second) == held - 1
    released = array.array("i", [9, 5])
    sub.inside, sub.tokens = None, released
    assert ids() == [5, 9]
    assert sys.getrefcount(released) == held  # its name's and the field's
    released.append(12)  # nothing holds its buffer: it may grow
    assert ids() == [5, 9, 12]
    base = np.zeros(WORDS, dtype=np.int32)
    unheld = sys.getrefcount(base)
    own = Classification(base, ())
    assert compose.compose(acc, own, node, 0, no_miss, 32) is base
    assert sys.getrefcount(base) == unheld + 2
    del own  # its field's reference and its read's go with it
    assert sys.getrefcount(base) == unheld


def test_the_root_is_copied_then_ored_into() -> None:
    """A dense result is in acc, its old words gone (the root's inside, or zeros, first, also where ids noted
    before an OR or past sparse_max made the words); the root's inside itself is not written."""

    def no_miss(g: BoundaryGroup, live: int) -> Classification:
        raise AssertionError("every group here has its memo")

    node, group = Node(allowed=0), BoundaryGroup(1)
    group.after[0] = Classification(np.full(WORDS, 0b100, dtype=np.int32), ())
    base = np.arange(WORDS, dtype=np.int32)
    acc = np.full(WORDS, -1, dtype=np.int32)
    assert compose.compose(acc, Classification(base, (group,)), node, 0, no_miss, 0) == compose.fingerprint(base | 0b100)
    assert acc.tolist() == (base | 0b100).tolist() and base.tolist() == list(range(WORDS))
    acc[:] = -1
    assert compose.compose(acc, Classification(None, ()), node, 0, no_miss, 0) is None
    # ids first (noted without the words), then a mask ORed in, then ids past sparse_max: each way to the words
    ids = BoundaryGroup(1)
    ids.after[0] = Classification(None, (), np.array([3, 64, 3, 70], dtype=np.int32))
    for groups, sparse_max, want in (((ids, group), 4, np.zeros(WORDS, np.int32) | 0b100),
                                     ((ids,), 1, np.zeros(WORDS, np.int32))):
        want = want.copy()
        for t in (3, 64, 70):
            want[t >> 5] |= 1 << (t & 31)
        acc[:] = -1
        assert compose.compose(acc, Classification(None, groups), node, 0, no_miss, sparse_max) == \
            compose.fingerprint(want)
        assert acc.tolist() == want.tolist()


def test_ids_noted_before_the_words_are_made_are_counted_once() -> None:
    """Repeated ids (from overlapping groups) count once against sparse_max, whether the words were made or not:
    three distinct ids under a bound of 3 stay an ExtendedMask however often they repeat."""

    def no_miss(g: BoundaryGroup, live: int) -> Classification:
        raise AssertionError("every group here has its memo")

    node = Node(allowed=0)
    groups = []
    for ids in ([5, 9], [9, 5, 40], [40, 40, 5]):
        group = BoundaryGroup(1)
        group.after[0] = Classification(None, (), np.array(ids, dtype=np.int32))
        groups.append(group)
    base = np.zeros(WORDS, dtype=np.int32)
    base[0] = 1 << 5  # id 5 is the root's own
    acc = np.empty(WORDS, dtype=np.int32)
    for sparse_max, form in ((3, ExtendedMask), (2, ExtendedMask), (1, int)):
        found = compose.compose(acc, Classification(base, tuple(groups)), node, 0, no_miss, sparse_max)
        assert type(found) is form
        if form is ExtendedMask:
            assert np.frombuffer(found.ids, dtype=np.int32).tolist() == [9, 40]


def test_the_objects_hold_what_their_constructors_promise() -> None:
    nodes = np.array([3, 9], dtype=np.int64)
    group = BoundaryGroup(1 << 70, nodes)
    assert group.terminals == 1 << 70 and group.nodes is nodes and group.key == nodes.tobytes() and group.after == {}
    assert BoundaryGroup(1, nodes, b"k").key == b"k" and BoundaryGroup(1, nodes).after is not group.after
    bare = BoundaryGroup()  # the walk kernel's way: then every field is set
    assert (bare.terminals, bare.nodes, bare.key, bare.after) == (None, None, None, {})
    inside, tokens = np.ones(WORDS, dtype=np.int32), np.array([2, 5], dtype=np.int32)
    found = Classification(inside, [group])
    assert found.inside is inside and found.tokens is None and found.groups == (group,)
    assert found.nbytes() == inside.nbytes + nodes.nbytes
    assert Classification(inside, (), tokens).nbytes() == tokens.nbytes  # the tokens stand for the allowed ones
    assert (Classification().inside, Classification().groups, Classification().tokens) == (None, (), None)
    with pytest.raises(TypeError):
        Classification(None, 5)
    # Nothing here is tracked by the collector, nor a group's memo of classifications.
    group.after[1] = found
    assert not any(gc.is_tracked(x) for x in (group, found, group.after, Classification(), bare))


def test_an_extended_mask_is_its_base_with_its_ids() -> None:
    base = np.zeros(WORDS, dtype=np.int32)
    base[1] = 0b1010
    mask = ExtendedMask(base, np.array([200, 3, 3, 40], dtype=np.int32))
    assert mask.base is base and np.frombuffer(mask.ids, dtype=np.int32).tolist() == [3, 40, 200]
    assert mask.nbytes == ExtendedMask(None, np.zeros(0, dtype=np.int32)).nbytes + 3 * 4
    want = base.copy().view(np.uint32)
    for t in (3, 40, 200):
        want[t >> 5] |= np.uint32(1 << (t & 31))
    assert dense(mask).tobytes() == want.tobytes()
    more = ExtendedMask(mask, np.array([41, 3], dtype=np.int32))  # flattened: its base, all the ids
    assert more.base is base and np.frombuffer(more.ids, dtype=np.int32).tolist() == [3, 40, 41, 200]
    wide = ExtendedMask(None, np.array([5, 32 * WORDS + 7], dtype=np.int32))  # a row takes the ids it holds
    assert dense(wide).tolist() == [1 << 5] + [0] * (WORDS - 1)
    assert not gc.is_tracked(mask)
    with pytest.raises(ValueError, match="negative"):
        ExtendedMask(base, np.array([-1], dtype=np.int32))
    with pytest.raises(TypeError, match="int32 token ids"):
        ExtendedMask(base, np.array([1], dtype=np.int64))
    with pytest.raises(TypeError, match="int32 mask"):
        ExtendedMask(np.zeros(WORDS, dtype=np.int64), np.array([1], dtype=np.int32))


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
