"""The mask fuzzer (fuzz/mask_fuzz.py): fast mask == reference on random grammars, vocabularies, walks.

The seeded short run is the CI check; `--long` runs more cases. The other tests
show the fuzzer covers what it claims (vocabulary and grammar features, tokens
crossing several lexeme boundaries) and that it catches, shrinks and reports a
fault injected into the fast mask.
"""

from __future__ import annotations

import io
import random
import re
from contextlib import redirect_stdout

import numpy as np
import pytest

import pda
from fuzz import mask_fuzz
from fuzz.random_grammars import random_grammar
from pda.compiler import CompiledGrammar
from pda.errors import GrammarError
from pda.reference import random_walk_states
from pda.testing.sampler import GrammarSampler, RandomChoices, ReferenceRecognizer


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of tiny grammars and vocabularies: keep their cache files out of the user's cache."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))


def test_seeded_short_run_finds_no_mismatch() -> None:
    report = mask_fuzz.run_fuzz(400, seed=2024)
    assert report.ok, "\n\n".join([m.reproducer() for m in report.mismatches] + [c.report() for c in report.crashes])
    assert report.cases == 400
    assert report.states > 2000
    assert report.tokens_checked > 100_000


@pytest.mark.slow
def test_long_run_finds_no_mismatch() -> None:
    report = mask_fuzz.run_fuzz(5000, seed=7)
    assert report.ok, "\n\n".join([m.reproducer() for m in report.mismatches] + [c.report() for c in report.crashes])
    assert report.cases == 5000


def test_a_case_is_reproducible_on_its_own() -> None:
    a = mask_fuzz.random_case(3, 17)
    b = mask_fuzz.random_case(3, 17)
    assert (a.grammar, a.tokens, a.eos_ids, a.walk_seed) == (b.grammar, b.tokens, b.eos_ids, b.walk_seed)
    assert a.label == "--seed 3 --case 17"
    assert mask_fuzz.random_case(3, 18).tokens != a.tokens


def _lexemes_committed(compiled: CompiledGrammar, node, q: int, data: bytes) -> int:
    """How many parser-visible lexemes end inside `data` when it is fed at (node, q)."""
    count = 0
    for k in range(len(data)):
        before = compiled.scanner.feed(node, q, data[:k])
        after = compiled.scanner.feed(node, q, data[: k + 1])
        count += before is not None and after is not None and after[0] is not before[0]
    return count


def test_vocabularies_have_the_promised_pieces() -> None:
    sizes, split_utf8, multibyte, whitespace, duplicates, crossings = [], 0, 0, 0, 0, []
    for index in range(60):
        case = mask_fuzz.random_case(11, index)
        tokens = case.tokens
        sizes.append(len(tokens))
        assert case.eos_ids and all(tokens[i] is None for i in case.eos_ids)
        texts = [t for t in tokens if t]
        split_utf8 += any(_not_utf8(t) for t in texts)
        multibyte += any(max(t) >= 0x80 and not _not_utf8(t) for t in texts)
        whitespace += any(t.isspace() for t in texts)
        duplicates += len(set(texts)) < len(texts)
        compiled = mask_fuzz.compile_case(case.grammar, tokens, case.eos_ids, case.special_ids)
        for node, q, token in random_walk_states(compiled, random.Random(case.walk_seed), max_steps=case.max_steps):
            if token is not None:
                crossings.append(_lexemes_committed(compiled, node, q, tokens[token]))
    assert min(sizes) >= mask_fuzz.MIN_VOCAB and max(sizes) <= mask_fuzz.MAX_VOCAB + 3
    assert max(sizes) > 150 and min(sizes) < 40
    assert split_utf8 > 30 and multibyte > 30 and whitespace > 10 and duplicates > 10
    # Walk tokens cross 0, 1 and 2+ lexeme boundaries.
    assert {0, 1, 2} <= set(crossings)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def test_random_grammars_have_the_promised_features() -> None:
    rng = random.Random(5)
    seen = {"lazy": 0, "priority": 0, "ignore": 0, "left": 0, "right": 0, "ambiguous": 0, "tie": 0, "utf8": 0}
    for _ in range(300):
        text = random_grammar(rng)
        ir = pda.Grammar.from_lark(text).ir
        seen["lazy"] += any(t.lazy for t in ir.terminals)
        seen["priority"] += any(t.priority > 0 for t in ir.terminals)
        seen["ignore"] += bool(ir.ignore)
        seen["utf8"] += any(ord(ch) > 127 for ch in text)
        for line in text.splitlines():
            name, _, body = line.partition(": ")
            if name.startswith("r"):
                alternatives = body.split(" | ")
                seen["left"] += f"{name} {name}" not in alternatives and any(a.startswith(name + " ") for a in alternatives)
                seen["right"] += any(a.endswith(" " + name) and not a.startswith(name) for a in alternatives)
                seen["ambiguous"] += f"{name} {name}" in alternatives
        # A literal and a same-priority regex that both match the literal: the parser gets both.
        literals = [t for t in ir.terminals if t.literal and not t.name.startswith("__")]
        regexes = [t for t in ir.terminals if not t.literal]
        seen["tie"] += any(
            a.priority == b.priority and re.fullmatch(b.pattern, re.sub(r"\\(.)", r"\1", a.pattern)) is not None
            for a in literals
            for b in regexes
        )
    assert all(count >= 15 for count in seen.values()), seen


def _drop_tokens_with(needle: bytes):
    """A fast mask with an injected fault: tokens containing `needle` are never allowed."""
    original = CompiledGrammar.text_mask

    def text_mask(self: CompiledGrammar, node, q: int) -> np.ndarray:
        mask = original(self, node, q).copy()
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")
        for i, data in enumerate(self.vocab.tokens):
            if data and needle in data:
                bits[i] = 0
        return np.packbits(bits, bitorder="little").view(np.int32)

    return text_mask


def test_an_injected_fault_is_caught_shrunk_and_reproducible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CompiledGrammar, "text_mask", _drop_tokens_with(b"b,"))
    report = mask_fuzz.run_fuzz(200, seed=3, max_failures=2)
    assert len(report.mismatches) == 2 and not report.crashes
    for mismatch in report.mismatches:
        case = mismatch.case
        assert case.label.endswith("(shrunk)")
        # Shrunk to the walk's tokens, the wrongly rejected token and EOS; the grammar to a few lines.
        assert len(case.tokens) <= len(mismatch.path) + 2
        assert len(case.grammar.splitlines()) <= 6
        (token_id, fast, reference), = mismatch.tokens
        assert b"b," in case.tokens[token_id] and not fast and reference
        # The printed reproducer runs and shows the same disagreement.
        out = io.StringIO()
        with redirect_stdout(out):
            exec(mismatch.reproducer(), {})
        assert out.getvalue().strip() == repr(mismatch.tokens)


def test_ids_past_the_vocabulary_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    original = CompiledGrammar.text_mask

    def text_mask(self: CompiledGrammar, node, q: int) -> np.ndarray:
        mask = original(self, node, q).copy()
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")
        if self.vocab_size > self.vocab.size:  # logits wider than the vocabulary: allow the last id
            bits[self.vocab_size - 1] = 1
        return np.packbits(bits, bitorder="little").view(np.int32)

    monkeypatch.setattr(CompiledGrammar, "text_mask", text_mask)
    report = mask_fuzz.run_fuzz(40, seed=9, max_failures=1)
    (mismatch,) = report.mismatches
    width = mismatch.case.mask_width
    assert width is not None and width > len(mismatch.case.tokens)
    assert (width - 1, True, False) in mismatch.tokens
    assert "allowed past the vocabulary" in mismatch.reproducer()


def test_refusals_are_counted_and_crashes_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    original = mask_fuzz.compile_case

    def refuse_some(grammar: str, *args) -> CompiledGrammar:
        if "T1" not in grammar:
            raise GrammarError("refused for the test")
        return original(grammar, *args)

    monkeypatch.setattr(mask_fuzz, "compile_case", refuse_some)
    report = mask_fuzz.run_fuzz(30, seed=1)
    assert report.ok and 0 < report.refused < 30 and report.cases == 30

    def explode(compiled, node, q, token_ids=None):
        raise RuntimeError("engine fault")

    monkeypatch.setattr(mask_fuzz, "mask_mismatches", explode)
    report = mask_fuzz.run_fuzz(10, seed=1, max_failures=3)
    assert len(report.crashes) == 3 and not report.mismatches
    assert "RuntimeError: engine fault" in report.crashes[0].report()
    assert "--seed 1 --case" in report.crashes[0].report()


def test_command_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert mask_fuzz.main(["--cases", "5", "--seed", "4"]) == 0
    assert "seed 4: 5 cases" in capsys.readouterr().out
    assert mask_fuzz.main(["--seed", "4", "--case", "2"]) == 0
    assert "seed 4: 1 cases" in capsys.readouterr().out
    monkeypatch.setattr(CompiledGrammar, "text_mask", _drop_tokens_with(b"a"))
    assert mask_fuzz.main(["--cases", "20", "--seed", "4", "--max-failures", "1"]) == 1
    out = capsys.readouterr().out
    assert "# mask mismatch, case --seed 4 --case" in out and "1 mismatches" in out


def test_reference_recognizer_reads_lazy_terminals_exactly() -> None:
    """Found by the fuzzer's walks: the sampler's independent recogniser rejects `"cb "` here.

    `ReferenceRecognizer._reach` asks the `regex` module for partial matches, and
    `regex` reports a partial match of `c[ab]*?a` on "cb " (and on "cx"): with a
    lazy quantifier its partial matching accepts any tail. The recogniser then
    takes "cb " as one lexeme of L and fails, where pda (and greedy lexing) reads
    A then an ignored space. Checking viability with the greedy form of the
    pattern (same language) would avoid it.
    """
    grammar = pda.Grammar.from_lark('start: A | L\nA: "cb"\nL: /c[ab]*?a/\n%ignore " "\n')
    reference = ReferenceRecognizer(grammar.ir)
    for text in ["cb", "cb ", "cba", "cbba ", "c"]:
        assert reference.accepts(text) == grammar.accepts(text), text


@pytest.mark.timeout(30)
def test_sampler_terminates_on_nullable_branching_recursion() -> None:
    """Found by the fuzzer (seed 1, case 603 hung in `GrammarSampler.derive`).

    `r1 r1+ r1` has least length 0 (r1 is nullable), so the lexeme budget never
    rules it out and only the depth budget (40 by default) stops it: a derivation
    tree with up to 3^40 nodes. Sampling this grammar does not finish.
    """
    grammar = pda.Grammar.from_lark('start: r1+\nr1: "a"? | r1 r1+ r1\n')
    sampler = GrammarSampler(grammar)
    choices = RandomChoices(0)
    for _ in range(20):
        assert set(sampler.sample(choices)) <= {"a"}
