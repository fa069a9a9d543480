"""`structure_key` keeps a compound node's key on the node (`syntax._Keyed`): the kept key, and any key built
from kept keys of subtrees, must equal the key listed from scratch, respect `max_nodes`, and leave equality and
hashing of nodes alone."""

import dataclasses
import random

from pda.regex import syntax
from pda.regex.syntax import Alt, Chars, FirstMatch, Guard, Repeat, Seq, structure_key, translate


def _fresh(node):
    """A deep copy of the tree with no key kept anywhere (the nodes rebuilt)."""
    if isinstance(node, Chars):
        return Chars(node.chars)
    if isinstance(node, (Seq, Alt)):
        return type(node)(tuple(_fresh(x) for x in node.items))
    if isinstance(node, Repeat):
        return Repeat(_fresh(node.item), node.lo, node.hi)
    if isinstance(node, FirstMatch):
        return FirstMatch(_fresh(node.item))
    return Guard(node.negate, _fresh(node.look), _fresh(node.body))


def _nodes(node):
    out, stack = [], [node]
    while stack:
        item = stack.pop()
        out.append(item)
        if isinstance(item, (Seq, Alt)):
            stack.extend(item.items)
        elif isinstance(item, (Repeat, FirstMatch)):
            stack.append(item.item)
        elif isinstance(item, Guard):
            stack += [item.look, item.body]
    return out


PATTERNS = [
    r'"(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9A-Fa-f]{4}){0,64}"',
    r"(?:ab|cd)*e{2,5}(?:f|g)?",
    r"(?=ab)a[a-z]+",
    r"(?!x)(?:[0-9]{1,3}\.){3}[0-9]{1,3}",
    r"(?:(?:a|b)(?:c|d)){3}|xyz",
]


def test_kept_keys_equal_keys_from_scratch():
    rng = random.Random(5)
    for pattern in PATTERNS:
        tree = translate(pattern)
        expected = structure_key(_fresh(tree), 4096)
        compound = [n for n in _nodes(tree) if not isinstance(n, Chars)]
        # keys kept on random subtrees first: the whole key is then built from them
        for node in rng.sample(compound, min(3, len(compound))):
            assert structure_key(node, 4096) == structure_key(_fresh(node), 4096)
        assert structure_key(tree, 4096) == expected
        assert tree._key == expected  # kept
        assert structure_key(tree, 4096) is tree._key  # and served again


def test_kept_key_respects_max_nodes():
    tree = translate(r"(?:ab|cd)*e{2,5}")
    full = structure_key(tree, 4096)
    assert structure_key(tree, len(full)) == full
    assert structure_key(tree, len(full) - 1) is None
    # a subtree's kept key counts its nodes in a larger tree's limit
    outer = Seq((tree, Chars(((120, 120),))))
    assert structure_key(outer, len(full) + 1) is None
    assert structure_key(outer, len(full) + 2) == (("Seq", 2), *full, ((120, 120),))


def test_too_large_is_not_kept():
    tree = _fresh(translate(r"(?:ab|cd)*e{2,5}"))
    assert structure_key(tree, 3) is None
    assert tree._key is None


def test_kept_key_leaves_equality_and_hash():
    tree = translate(r"(?:ab|cd)*e{2,5}")
    other = _fresh(tree)
    structure_key(tree, 4096)
    assert tree == other and hash(tree) == hash(other)
    assert "_key" not in {f.name for f in dataclasses.fields(tree)}
    assert syntax.EMPTY == Seq(())
