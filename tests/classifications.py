"""Comparing two token-index classifications by what masks depend on (shared by the tests)."""

from __future__ import annotations

import numpy as np


def mask_ids(mask: np.ndarray) -> np.ndarray:
    """The token ids set in a packed int32 mask, ascending."""
    return np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))


def inside_ids(c) -> np.ndarray:
    """The ids of the tokens a classification allows outright, ascending, from its mask or its `tokens`."""
    if getattr(c, "tokens", None) is not None:
        return np.asarray(c.tokens, dtype=np.int64)
    if c.inside is None:
        return np.zeros(0, np.int64)
    return mask_ids(c.inside)


def classification_parts(c) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """A classification as (inside token ids, boundary nodes per terminal set).

    The walk puts a state's boundary nodes in one group per terminal set; the finite-set
    lookup hands the same nodes as groups shared between states, so groups are compared
    by union; a walk after a boundary may hold its few inside tokens as ids, not a mask.
    """
    inside = inside_ids(c)
    nodes: dict[int, list[np.ndarray]] = {}
    for g in c.groups:
        nodes.setdefault(g.terminals, []).append(g.nodes)
    return inside, {e: np.sort(np.concatenate(parts)) for e, parts in nodes.items()}


def assert_same_classification(got, want, where: str) -> None:
    """Equal inside tokens and equal boundary nodes per terminal set."""
    got_inside, got_nodes = classification_parts(got)
    want_inside, want_nodes = classification_parts(want)
    assert np.array_equal(got_inside, want_inside), f"inside tokens differ {where}"
    assert got_nodes.keys() == want_nodes.keys(), f"boundary terminal sets differ {where}: {got_nodes.keys()} vs {want_nodes.keys()}"
    for e in want_nodes:
        assert np.array_equal(got_nodes[e], want_nodes[e]), f"boundary nodes differ {where}"
