"""Mixed states of exactly two terminals in a shared product (the grow kernel's pair path, `grow_pair`).

Most mixed states a JSON Schema's lexer grows hold two terminals side by side, and the
grow kernel reads their rows in one pass instead of its counting sort. Every two-terminal
candidate set of the shared product tests' patterns, grown one after another on one table
(so later sets meet earlier sets' states), must be the set's own product on every text up
to four bytes; and with lazy terminals (whose entries are filled as the grow reads them)
the same DFA as the eager product of the same patterns, state for state.
"""

from __future__ import annotations

from itertools import combinations, product

from pda.bits import iter_bits
from pda.grammar.ir import TerminalDef
from pda.lexer.lexer import START, LexerTables, SharedTables
from pda.lexer.terminals import terminal_dfa
from pda.regex.lazy import lazy_terminal
from pda.regex.product import SharedProduct, combine
from tests.test_shared_product import ALPHABET, DFAS, PATTERNS, assert_same_dfa, own_tables

TEXTS = [bytes(t) for n in range(1, 5) for t in product(ALPHABET, repeat=n)]


def test_every_pair_of_terminals_is_its_own_product() -> None:
    shared = SharedProduct(DFAS, 10_000)
    pairs = [(1 << i) | (1 << j) for i, j in combinations(range(len(PATTERNS)), 2)]
    views = [SharedTables(c, shared, shared.start(list(iter_bits(c)))) for c in pairs]
    assert shared.n_states > shared.mixed_base  # mixed states were grown
    for candidates, view in zip(pairs, views):
        assert_same_dfa(view, own_tables(candidates), TEXTS)


# Counted patterns, lazy or eager: pairs of them run side by side for hundreds of states (sp_372's split strings).
COUNTED = [r"[ab]{0,300}c", r"a[ab]{260}", r"(?:ab){0,150}c?", r"[a-c]{1,280}"]


def assert_same_states(view: SharedTables, own: LexerTables, texts: list[bytes]) -> None:
    """Walk both from START along `texts`: states paired one to one with equal live and accept sets (a lazy
    terminal's key names its lazy state, not the eager DFA's)."""
    pairs: dict[int, int] = {START: START}
    back: dict[int, int] = {START: START}
    for text in texts:
        q, r = START, START
        for byte in text:
            q, r = view.row(q)[view.cls[byte]], own.row(r)[own.cls[byte]]
            assert view.live_flag(q) == own.live_flag(r)
            if not own.live_flag(r):
                break
            assert pairs.setdefault(q, r) == r and back.setdefault(r, q) == q, f"states not one to one at {text!r}"
            assert view.live_at(q) == own.live_at(r) and view.accept_at(q) == own.accept_at(r), text


def test_pairs_with_lazy_terminals_are_their_eager_products() -> None:
    defs = [TerminalDef(name=f"C{i}", pattern=p) for i, p in enumerate(COUNTED)]
    eager = [terminal_dfa(d, lazy=False) for d in defs]
    mixed = [lazy_terminal(d) if i % 2 == 0 else eager[i] for i, d in enumerate(defs)]  # lazy and eager side by side
    shared = SharedProduct(mixed, 10_000)
    # Long texts: the counted states far from the start are reached (a's and b's, then the end).
    texts = [bytes(ALPHABET[(i * 7 + k * k) % 2] for k in range(n)) + end
             for i, n in enumerate(range(0, 320, 9)) for end in (b"", b"c", b"ac")]
    for i, j in combinations(range(len(COUNTED)), 2):
        view = SharedTables((1 << i) | (1 << j), shared, shared.start([i, j]))
        own = LexerTables((1 << i) | (1 << j), combine([eager[i], eager[j]], terminals=[i, j]))
        assert_same_states(view, own, texts + TEXTS)
