"""What pda leaves to the garbage collector: few tracked objects per accepted token and per lexer state.

Every object the collector tracks is work for each of its full collections, and a long
text keeps one parser node per position alive (docs/limits.md, "The garbage collector").
The bounds hold with margin: 2.5 tracked objects a token on the deep JSON below (4.4 while
parser nodes were tracked, before their core's arena owned them; 19 while nodes memoised their
kernel scans and waiting lists), and no lexer row is tracked.
"""

from __future__ import annotations

import gc

import pda
from pda.integrations.bitmask import allocate_token_bitmask
from pda.lexer.lexer import START
from pda.parser.earley import RECENT_PROBES
from pda.reference import reference_scan

TOKENS = [b"[", b"]", b"1", b",", b"[1", b"[[", b"[]", b"[\"", b"[{", b"1]", b"],", b"{", b"}", b"\"a\"", b":", b"\":", b" ", None]
EOS = len(TOKENS) - 1


def tracked_objects() -> int:
    gc.collect()
    return len(gc.get_objects())


def test_deep_json_keeps_few_tracked_objects_per_token() -> None:
    vocab = pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS])
    m = pda.Matcher(pda.compile(pda.Grammar.load("json"), vocab))
    bitmask = allocate_token_bitmask(1, vocab.size)
    # Past the first nodes and the memos the first steps fill (the parser's probe memo, bounded
    # at RECENT_PROBES, fills within as many tokens: each token probes at least once).
    for _ in range(100 + RECENT_PROBES):
        m.fill_bitmask(bitmask)
        assert m.accept_token(0)
    tokens = 2000
    before = tracked_objects()
    for _ in range(tokens):
        m.fill_bitmask(bitmask)
        assert m.accept_token(0)
    per_token = (tracked_objects() - before) / tokens
    # One parser node a token, which the collector does not track (its core's arena owns it).
    assert per_token <= 4, per_token


def test_lexer_rows_are_not_tracked() -> None:
    """The Python byte loops' rows (`Scanner.only_byte`, the reference scan; the compiled loop reads `trans`)
    are tuples of ints, which the collector stops tracking after one pass (each built when first read, as a
    candidate set's view builds its accept/live rows)."""
    grammar = pda.Grammar.load("sqlite")
    recognizer = grammar.recognizer
    lexer = recognizer.lexer
    tables = lexer.tables(recognizer.root.allowed | lexer.ignore)
    assert reference_scan(recognizer.scanner, recognizer.root, START, b"SELECT a FROM t WHERE b = 'x'")[2] == 29
    assert len(tables.rows) >= 5, "the byte loop built rows"
    rows = (tables.rows, tables.cls, tables.accept, tables.live, tables.extends, tables.live_flags)
    gc.collect()
    gc.collect()
    for table in rows:
        assert not gc.is_tracked(table)
    assert not any(gc.is_tracked(row) for row in tables.rows.values())


def test_a_loaded_grammar_keeps_no_regex_parses() -> None:
    """The terminals' regex parses (lists: tracked) are released once the lexer's DFAs exist.

    python.lark's were ~90k tracked objects, kept for the life of the process; without
    them loading it leaves ~4k.
    """
    before = tracked_objects()
    grammar = pda.Grammar.load("python")
    assert grammar.recognizer.lexer.dfas
    assert tracked_objects() - before <= 20_000


def test_the_compile_memo_frees_grammars_nobody_holds() -> None:
    """`pda.compile` keeps the most recent strongly, up to the `compiled_grammars` budget; the rest only while used."""
    import weakref

    vocab = pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS])
    limits = pda.Limits(warmup_seconds=0)
    held = pda.compile(pda.Grammar.from_choices(["held"]), vocab, limits=limits)
    dropped = weakref.ref(pda.compile(pda.Grammar.from_choices(["dropped"]), vocab, limits=limits))
    assert pda.compile(pda.Grammar.from_choices(["dropped"]), vocab, limits=limits) is dropped()  # a recent one: kept
    budget = pda.memory_budgets()["compiled_grammars"]["max_bytes"]
    try:
        pda.set_memory_budget("compiled_grammars", 0)  # only the newest is kept
        pda.compile(pda.Grammar.from_choices(["other"]), vocab, limits=limits)
        gc.collect()
        assert dropped() is None
    finally:
        pda.set_memory_budget("compiled_grammars", budget)
    assert pda.compile(pda.Grammar.from_choices(["held"]), vocab, limits=limits) is held


def test_the_compile_memo_weighs_grammars_by_what_they_hold() -> None:
    """A compiled grammar's weight (what the memo's budget counts) grows with the classifications and masks it computed."""
    vocab = pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS])
    compiled = pda.compile(pda.Grammar.load("json"), vocab, limits=pda.Limits(warmup_seconds=0))
    before = compiled.nbytes()
    m = pda.Matcher(compiled)
    bitmask = allocate_token_bitmask(1, vocab.size)
    for token in [0, 0, 1, 3, 2]:  # "[[]," then "1"
        m.fill_bitmask(bitmask)
        assert m.accept_token(token)
    assert compiled.nbytes() > before


def test_byte_lru_stays_in_its_budget_and_keeps_the_newest() -> None:
    """The memos shared across grammars (terminal DFAs, products, walks) hold at most their budget."""
    from pda.lru import ByteLRU

    memo = ByteLRU(max_bytes=100)
    for k in range(10):
        memo.put(k, str(k), 30)
        assert memo.nbytes <= 100
    assert len(memo) == 3 and memo.get(9) == "9" and memo.get(0) is None
    memo.get(7)  # now more recent than 8, which goes first
    memo.put(10, "10", 30)
    assert memo.get(8) is None and memo.get(7) == "7"
    memo.put("big", "x", 500)  # larger than the budget alone: kept, everything else evicted
    assert len(memo) == 1 and memo.get("big") == "x" and memo.nbytes == 500


def test_byte_lru_reweighs_growing_entries_amortised() -> None:
    """`reweigh` sees entries that grew while held and evicts past the budget, a full pass once the calls
    since the last one have paid for it (`REWEIGH_PER_CALL` entries each): never every call."""
    from pda.lru import REWEIGH_PER_CALL, ByteLRU

    sizes = {k: 10 for k in range(4 * REWEIGH_PER_CALL)}
    weighed: list[int] = []
    memo = ByteLRU(max_bytes=10 * len(sizes))
    for k in sizes:
        memo.put(k, k, sizes[k])
    for k in sizes:
        sizes[k] = 20  # every entry doubled while held
    for call in range(1, len(sizes) // REWEIGH_PER_CALL + 1):
        memo.reweigh(lambda k: weighed.append(k) or sizes[k])
        assert len(weighed) == (len(sizes) if call == len(sizes) // REWEIGH_PER_CALL else 0)
    assert memo.nbytes <= memo.max_bytes and len(memo) == len(sizes) // 2
    assert memo.get(0) is None and memo.get(len(sizes) - 1) == len(sizes) - 1  # the least recently used went


def test_python_masks_keep_few_objects_per_token() -> None:
    """Indented states are interned weakly and masks' probes memoise nothing they build.

    On this text ~55 tracked objects a token stay alive (nodes, their masks, the recent
    states kept for reuse); ~190 while the indenter's states lived forever and probes
    were memoised (python.lark on stdlib files: 4.5 M tracked objects, 0.77 s collections).
    """
    src = "def f(x):\n    if x:\n        return [x, (x + 1)]\n    return None\n\n" * 40
    tokens = sorted({src[i:i + k] for k in (1, 2, 3) for i in range(len(src) - k)})
    ids = {t: i for i, t in enumerate(tokens)}
    vocab = pda.Vocabulary.from_tokens(tokens + [None], eos_ids=[len(tokens)])
    m = pda.Matcher(pda.compile(pda.Grammar.load("python"), vocab, limits=pda.Limits(warmup_seconds=0)))
    bitmask = allocate_token_bitmask(1, vocab.size)
    before = tracked_objects()
    pos = steps = 0
    while pos < len(src):
        piece = next(src[pos:pos + k] for k in (3, 2, 1) if src[pos:pos + k] in ids)
        m.fill_bitmask(bitmask)
        assert m.accept_token(ids[piece])
        pos, steps = pos + len(piece), steps + 1
    assert (tracked_objects() - before) / steps <= 100
