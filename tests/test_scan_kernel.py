"""The compiled byte loop (`pda.kernels.scan`: `Scanner.scan`, `feed`, `commit`, `can_end`) against its oracles
(`pda.reference.reference_scan`, `reference_commit`, `reference_can_end`).

Every shipped grammar (json, sqlite, postgresql, python: the basic lexer mode and the
indenter; lua: byte-mode terminals), JSON Schemas whose lexers grow a shared product
(lazy terminals among them) and a grammar with every terminal lazy, over corpus texts,
random mutations of them (refused at every kind of place) and random chunkings (a text
fed token-like, each chunk from the state the last left). Both loops must stop at the
same byte in the same state: the same parser node object (nodes are interned, and an
indenter state's advances memoised) and lexer state.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import pda
from pda.errors import LimitExceeded
from pda.lexer import terminals
from pda.lexer.lexer import START
from pda.limits import Limits
from pda.recognizer import Recognizer
from pda.reference import reference_can_end, reference_commit, reference_feed, reference_scan
from tests.conftest import CORPUS, GRAMMARS

ALPHABET = b" \t\n\r{}[]():;,.=<>+-*/%\"'\\#@!?_|&^~`$0123456789abcdefxyzABCDEFXYZ\x80\xc3\xa9\xe2\x82\xac\xff"


def _texts(name: str) -> list[bytes]:
    """A few corpus texts for a shipped grammar (short ones, or the heads of long ones)."""
    if name == "json":
        folder = CORPUS / "json_test_suite" / "test_parsing"
        return [p.read_bytes()[:3000] for p in sorted(folder.glob("*.json"))]
    if name in ("sqlite", "postgresql"):
        path = CORPUS / ("sql_sqlite" if name == "sqlite" else "sql_postgres") / "valid.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()[:40]
        return [json.loads(line)["sql"].encode() for line in lines]
    if name == "python":
        folder = CORPUS / "python" / "valid"
        return [p.read_bytes()[:3000] for p in sorted(folder.glob("*.py"))[:12]]
    folder = CORPUS / "lua"
    return [p.read_bytes()[:3000] for p in sorted(folder.glob("*.lua"))[:12]]


def _mutations(text: bytes, rng: random.Random, n: int) -> list[bytes]:
    """`text` with a random byte changed, inserted or deleted, or cut short: refused (or not) anywhere."""
    out = []
    for _ in range(n):
        data = bytearray(text)
        at = rng.randrange(len(data) + 1)
        kind = rng.randrange(4)
        if kind == 0 and at < len(data):
            data[at] = rng.choice(ALPHABET)
        elif kind == 1:
            data[at:at] = bytes([rng.choice(ALPHABET)])
        elif kind == 2 and at < len(data):
            del data[at]
        else:
            data = data[:at]
        out.append(bytes(data))
    return out


def _chunks(text: bytes, rng: random.Random) -> list[bytes]:
    """`text` cut into token-like pieces of 1-8 bytes."""
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 8)
        out.append(text[i : i + n])
        i += n
    return out


def assert_same_scans(recognizer: Recognizer, texts: list[bytes], rng: random.Random, mutations: int = 3) -> int:
    """Kernel and reference agree on every text and mutation from the start, and chunk by chunk (with the commit
    and `can_end` where each chunk leaves); the number of bytes compared."""
    scanner, root = recognizer.scanner, recognizer.root
    compared = 0
    for text in texts:
        for data in [text, *_mutations(text, rng, mutations)]:
            ref = reference_scan(scanner, root, START, data)
            got = scanner.scan(root, START, data)
            assert got[0] is ref[0] and got[1:] == ref[1:], (data[: ref[2] + 1], got, ref)
            compared += len(data)
            node, q = root, START
            for chunk in _chunks(data, rng):
                ref = reference_scan(scanner, node, q, chunk)
                got = scanner.scan(node, q, chunk)
                assert got[0] is ref[0] and got[1:] == ref[1:], (chunk, got, ref)
                fed = scanner.feed(node, q, chunk)
                assert fed == reference_feed(scanner, node, q, chunk)
                if fed is None:
                    break
                node, q = fed
                assert scanner.commit(node, q) is reference_commit(scanner, node, q)
                assert scanner.can_end(node, q) is reference_can_end(scanner, node, q)
    return compared


@pytest.mark.parametrize("name", ["json", "sqlite", "postgresql", "python", "lua"])
def test_shipped_grammars(name: str) -> None:
    if not CORPUS.exists():
        pytest.skip("test corpus not available")
    grammar = pda.Grammar.load(str(GRAMMARS / f"{name}.lark"))
    rng = random.Random(f"scan-kernel:{name}")
    assert assert_same_scans(grammar.recognizer, _texts(name), rng) > 5_000


def test_random_bytes() -> None:
    """Texts of random bytes over the grammar's punctuation: refusals at the first bytes, commits of odd lexemes."""
    rng = random.Random(7)
    for name in ("json", "sqlite", "python"):
        grammar = pda.Grammar.load(str(GRAMMARS / f"{name}.lark"))
        texts = [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12))) for _ in range(300)]
        assert_same_scans(grammar.recognizer, texts, rng, mutations=1)


SCHEMA_IDS = ("Github_hard---o79409",)  # a shared product with lazy terminals (`Lexer._all` is None)


def _schema_cases() -> list[tuple[dict, list[bytes]]]:
    path = CORPUS / "jsonschemabench" / "schemas" / "Github_hard.jsonl"
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] in SCHEMA_IDS:
            docs = [json.dumps(t["data"], indent=2).encode() for t in row["tests"]]
            cases.append((row["schema"], docs))
    return cases


def test_json_schemas_on_a_shared_product() -> None:
    if not CORPUS.exists():
        pytest.skip("test corpus not available")
    rng = random.Random(11)
    for schema, docs in _schema_cases():
        grammar = pda.Grammar.from_json_schema(json.dumps(schema), whitespace="flexible")
        recognizer = grammar.recognizer
        assert recognizer.lexer._all is None and recognizer.lexer.has_lazy
        assert_same_scans(recognizer, docs, rng, mutations=20)


def test_lazy_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every terminal lazy: lazy rows' entries are filled as the loops read them (in either loop first)."""
    monkeypatch.setattr(terminals, "LAZY_MIN_COUNT", 0)
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 300},
                                               "b": {"type": "string", "pattern": "^[a-z]{2,250}$"},
                                               "c": {"type": "array", "items": {"type": "number"}}}}
    grammar = pda.Grammar.from_json_schema(json.dumps(schema), whitespace="flexible")
    assert grammar.recognizer.lexer.has_lazy
    docs = [b'{"a": "x\\u00e9y", "b": "abc", "c": [1, -2.5e3, 0]}', b'{"b": "zz" , "a":"' + b"q" * 280 + b'"}']
    assert_same_scans(grammar.recognizer, docs, random.Random(3), mutations=40)
    lark = pda.Grammar.load(str(GRAMMARS / "json.lark"), lexer="contextual")
    assert lark.recognizer.lexer.has_lazy
    assert_same_scans(lark.recognizer, [b'{"k": [1, 2.5, "s\\n", true, null, {}]}'], random.Random(4), mutations=40)


def test_limit_exceeded_propagates() -> None:
    """A lazy terminal's states past `max_lexer_states`, made as the loop reads them: LimitExceeded from both
    loops, at the same byte (the states before it are the same)."""
    grammar = pda.Grammar.from_lark("start: WORD\nWORD: /[a-z]{1,300}/\n")
    for scan in ("kernel", "reference"):
        recognizer = Recognizer(grammar.ir, limits=Limits(max_lexer_states=100))
        scanner = recognizer.scanner
        run = scanner.scan if scan == "kernel" else lambda *a: reference_scan(scanner, *a)
        node, q, consumed = run(recognizer.root, START, b"a" * 90)
        assert consumed == 90
        with pytest.raises(LimitExceeded):
            run(node, q, b"a" * 20)


def test_bad_arguments() -> None:
    recognizer = pda.Grammar.load(str(GRAMMARS / "json.lark")).recognizer
    scanner, root = recognizer.scanner, recognizer.root
    with pytest.raises(ValueError, match="lexer state"):
        scanner.scan(root, -1, b"1")
    with pytest.raises(TypeError):
        scanner.feed(root, START, "1")
    with pytest.raises(TypeError, match="3 arguments"):
        scanner.scan(root, START)
    with pytest.raises(ValueError, match="lexer state"):
        scanner.can_end(root, 1 << 40)
    assert scanner.commit(root, START) is root
    assert scanner.scan(root, START, b"") == (root, START, 0)
    assert scanner.feed(root, START, bytearray(b"[1")) == reference_feed(scanner, root, START, b"[1")


def test_matcher_accepts_through_the_kernel() -> None:
    """A matcher's accepted tokens are the kernel's feeds: the history equals the oracle's states token by token."""
    tokens = ["{", "}", '"', "a", "b", ":", " ", "1", "2", ",", '":', '"a', "12", "[", "]", "1,", None]
    vocab = pda.Vocabulary.from_tokens(tokens, eos_ids=[len(tokens) - 1])
    compiled = pda.compile(pda.Grammar.load(str(GRAMMARS / "json.lark")), vocab)
    rng = random.Random(5)
    for _ in range(50):
        matcher = pda.Matcher(compiled)
        for _ in range(30):
            allowed = [int(i) for i in matcher.allowed_token_ids() if i not in vocab.eos_ids]
            if not allowed:
                break
            token = rng.choice(allowed)
            node, q = matcher._history[-1]
            expected = reference_feed(compiled.scanner, node, q, vocab.tokens[token])
            assert matcher.accept_token(token)
            assert matcher._history[-1] == expected
        refused = [i for i in range(vocab.size) if i not in vocab.eos_ids and vocab.tokens[i] is not None
                   and reference_feed(compiled.scanner, *matcher._history[-1], vocab.tokens[i]) is None]
        for token in refused:
            assert not matcher.accept_token(token)


def test_priorities_type_a_lexeme() -> None:
    """Overlapping terminals of different priorities, contextual mode: a commit hands the top-priority ones
    (several when tied), and the parser may take only some of them."""
    grammar = pda.Grammar.from_lark(
        "start: item+\nitem: KEY \"=\" WORD | WORD | PAIR | LOW\n"
        "KEY.3: \"ab\" | \"ba\"\nWORD.1: /[ab]+/\nPAIR.1: /a[ab]/\nLOW.0: /b+a?/\n%ignore \" \"\n",
        lexer="contextual")
    rng = random.Random(9)
    texts = [bytes(rng.choice(b"ab= ") for _ in range(rng.randint(1, 14))) for _ in range(400)]
    assert_same_scans(grammar.recognizer, texts, rng, mutations=1)
    assert grammar.accepts("ab=ba bb") and not grammar.accepts("ab")  # KEY, not WORD or PAIR; WORD, not LOW
