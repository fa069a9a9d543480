"""The slow reference path: the correctness oracle for masks (DESIGN.md).

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
