"""The interface through which the token index consults a lookup that answers some lexer states by table.

`TokenIndex.finite_sets` holds such a lookup (or None); `TokenIndex.at_state`
asks it first and walks the trie only where it answers None. The finite-set
engine (`pda.trie.lookup.FiniteSetLookup`, wired in by `pda.compile`)
implements it; the index defines it, so the index never imports the engine.

Invariant: an answer equals what the walk from that state would give (the same
inside mask, boundary groups whose union is the walk's), so a lookup speeds the
index up and never changes a mask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pda.index.token_index import Classification


class StateLookup(Protocol):
    """Answers the classification of some lexer states without a walk."""

    def at_state(self, q: int, live_set: int) -> Classification | None:
        """The classification from lexer state `q` under candidate set `live_set`, or None to walk."""
