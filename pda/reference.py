"""The slow reference path: the correctness oracle for masks (docs/design.md).

For a state and a token, feed the token's bytes one at a time through the
lexer and parser, with no token index and no mask cache. The fast mask must
equal this exactly: every allowed token keeps the text a viable prefix, and
every token that does is allowed.
"""

from __future__ import annotations

import numpy as np

from pda.compiler import CompiledGrammar
from pda.parser.earley import Node


def reference_allowed(compiled: CompiledGrammar, node: Node, q: int) -> np.ndarray:
    """Allowed token ids at (node, q), ascending, computed token by token."""
    lexer = compiled.lexer
    vocab = compiled.vocab
    allowed = [
        i for i, data in enumerate(vocab.tokens) if data and lexer.feed(node, q, data) is not None
    ]
    if lexer.can_end(node, q):
        allowed.extend(int(i) for i in compiled.eos_ids)
    return np.array(sorted(allowed), dtype=np.int64)


def mask_mismatches(compiled: CompiledGrammar, node: Node, q: int, token_ids=None) -> list[tuple[int, bool, bool]]:
    """Tokens where the fast mask and the reference disagree: (id, fast, reference).

    `token_ids` restricts the check to some ids (for 100k-token vocabularies); by
    default every id of the vocabulary is checked.
    """
    lexer = compiled.lexer
    vocab = compiled.vocab
    mask = compiled.text_mask(node, q)
    fast_bits = np.unpackbits(mask.view(np.uint8), bitorder="little")
    can_end = lexer.can_end(node, q)
    ids = range(vocab.size) if token_ids is None else token_ids
    out = []
    for i in ids:
        i = int(i)
        data = vocab.tokens[i]
        if i in vocab.eos_ids:
            ref = can_end
            fast = bool(compiled.can_end(node, q))
        else:
            ref = bool(data) and lexer.feed(node, q, data) is not None
            fast = bool(fast_bits[i])
        if ref != fast:
            out.append((i, fast, ref))
    return out


def random_walk_states(compiled: CompiledGrammar, rng, *, max_steps: int, eos_probability: float = 0.1):
    """Yield (node, q, token) along one random constrained walk (token None at the end).

    Each step picks a uniformly random allowed token by the fast mask; where the
    text can end, EOS is taken with `eos_probability`.
    """
    node, q = compiled.initial_state()
    lexer = compiled.lexer
    for _ in range(max_steps):
        mask = compiled.text_mask(node, q)
        allowed = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))
        can_end = compiled.can_end(node, q)
        if len(allowed) == 0 or (can_end and rng.random() < eos_probability):
            yield node, q, None
            return
        token = int(allowed[rng.randrange(len(allowed))])
        yield node, q, token
        nxt = lexer.feed(node, q, compiled.vocab.tokens[token])
        assert nxt is not None, f"fast mask allowed token {token} that the lexer rejects"
        node, q = nxt
