"""The mask fuzzer: random grammars × random vocabularies × random walks, fast mask vs reference.

A case is one random grammar (`fuzz.random_grammars`), one random vocabulary
built for it, and one random constrained walk. At every state of the walk the
fast mask (`CompiledGrammar.text_mask`, the token index and its caches) is
compared with the reference path (`pda.reference`: every token's bytes fed one
at a time through the lexer and parser) on every token id, EOS included. The
two must be equal: sound and complete (docs/design.md, "Correctness oracle").

Vocabularies mix what real tokenizers have and what breaks engines: single
bytes of the grammar's alphabet; terminal strings, fragments of them and
concatenations (tokens that cross zero, one, two or more lexeme boundaries);
slices of sampled sentences; multi-byte UTF-8 and partial UTF-8 sequences;
whitespace; duplicates, an empty token, EOS ids and a non-EOS special id.
Sizes are log-uniform in 20..300.

Case `i` of seed `S` is reproducible on its own (`--seed S --case i`). A
grammar pda refuses (`GrammarError`) is skipped and counted; any other
exception is a crash and is reported with its case. A mismatch is shrunk
(vocabulary to the walk's tokens, then the walk, then the grammar's
alternatives and symbols) and printed as a reproducer.

    python fuzz/mask_fuzz.py --cases 10000 --seed 0
    python fuzz/mask_fuzz.py --cases 1000000 --seed 7 --time-limit 3600   # long mode

The compile caches go to a scratch folder (deleted at exit) unless
$PDA_CACHE_DIR is set, so thousands of tiny grammars leave no files behind.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

if __package__ in (None, ""):  # run as a script: make `fuzz` and `pda` importable from the repo root
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import pda
from fuzz.random_grammars import random_grammar
from pda.compiler import CompiledGrammar
from pda.errors import GrammarError, LimitExceeded
from pda.reference import mask_mismatches, random_walk_states
from pda.testing.sampler import GrammarSampler, RandomChoices, TerminalGenerator

Token = bytes | None
T = TypeVar("T")

# Pieces every vocabulary may draw from, whatever the grammar: multi-byte
# characters (whole and split at every byte), whitespace, bytes outside the alphabet.
MULTIBYTE = ["é", "€", "😀", "aé", "é€"]
WHITESPACE = [b" ", b"  ", b"\n", b"\t", b" \n"]
FOREIGN = [b"x", b"#", b";", b"\xff", b"\x00", b"#a;"]

MIN_VOCAB, MAX_VOCAB = 20, 300


@dataclass
class Case:
    """One (grammar, vocabulary) pair and the seed of its walk."""

    label: str
    grammar: str
    tokens: list[Token]
    eos_ids: list[int]
    special_ids: list[int]
    walk_seed: int
    max_steps: int
    mask_width: int | None = None

    def vocabulary(self) -> pda.Vocabulary:
        return pda.Vocabulary.from_tokens(list(self.tokens), eos_ids=self.eos_ids, special_ids=self.special_ids)


@dataclass
class Mismatch:
    """The fast mask and the reference disagree after `path` (token ids from the start)."""

    case: Case
    path: list[int]
    tokens: list[tuple[int, bool, bool]]  # (id, fast, reference)

    def reproducer(self) -> str:
        """Python text that rebuilds the state and shows the disagreement."""
        vocab = self.case.tokens
        lines = [
            f"# mask mismatch, case {self.case.label}",
            f"grammar = {self.case.grammar!r}",
            f"tokens = {vocab!r}",
            f"eos_ids = {self.case.eos_ids!r}; special_ids = {self.case.special_ids!r}",
            f"path = {self.path!r}  # {[vocab[i] for i in self.path]!r}",
        ]
        for i, fast, ref in self.tokens:
            data = vocab[i] if i < len(vocab) else "(past the vocabulary)"
            lines.append(f"# token {i} {data!r}: fast mask {'allows' if fast else 'rejects'}, "
                         f"reference {'allows' if ref else 'rejects'}")
        lines += [
            "import numpy as np",
            "import pda",
            "from pda.compiler import CompiledGrammar",
            "from pda.reference import mask_mismatches",
            "v = pda.Vocabulary.from_tokens(tokens, eos_ids=eos_ids, special_ids=special_ids)",
            f"cg = CompiledGrammar(pda.Grammar.from_lark(grammar), v, mask_width={self.case.mask_width!r}, "
            "warmup_seconds=0, disk_cache=False)",
            "node, q = cg.initial_state()",
            "for t in path:",
            "    node, q = cg.scanner.feed(node, q, tokens[t])",
            "print(mask_mismatches(cg, node, q))",
        ]
        if self.case.mask_width is not None:
            lines.append("print('allowed past the vocabulary:', np.flatnonzero("
                         "np.unpackbits(cg.text_mask(node, q).view(np.uint8), bitorder='little')[v.size:]) + v.size)")
        return "\n".join(lines)


@dataclass
class Crash:
    """An exception other than a grammar refusal, with the case that raised it."""

    case: Case
    path: list[int]
    error: str

    def report(self) -> str:
        return (
            f"# crash, case {self.case.label}\n# path {self.path!r}\n"
            f"grammar = {self.case.grammar!r}\ntokens = {self.case.tokens!r}\n"
            f"eos_ids = {self.case.eos_ids!r}; special_ids = {self.case.special_ids!r}\n{self.error}"
        )


@dataclass
class FuzzReport:
    """What a run did: counts, and every mismatch and crash found."""

    seed: int
    cases: int = 0
    refused: int = 0
    states: int = 0
    tokens_checked: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    crashes: list[Crash] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.crashes

    def summary(self) -> str:
        return (
            f"seed {self.seed}: {self.cases} cases ({self.refused} grammars refused), "
            f"{self.states} states, {self.tokens_checked} token checks, "
            f"{len(self.mismatches)} mismatches, {len(self.crashes)} crashes, {self.seconds:.1f} s"
        )


# -- cases ---------------------------------------------------------------------------


def case_rng(seed: int, index: int) -> random.Random:
    """The random source of case `index` of a run: independent of every other case."""
    return random.Random(f"mask-fuzz:{seed}:{index}")


def case_grammar(rng: random.Random) -> str:
    """A case's grammar: 1 to 5 rules over 1 to 6 literals (plus random regexes)."""
    return random_grammar(rng, rules=rng.randint(1, 5), terminals=rng.randint(1, 6))


def random_case(seed: int, index: int) -> Case:
    """Case `index` of seed `seed`: a grammar, a vocabulary for it, a walk seed.

    Raises `GrammarError` when pda refuses the grammar.
    """
    rng = case_rng(seed, index)
    text = case_grammar(rng)
    grammar = pda.Grammar.from_lark(text)
    tokens, eos_ids, special_ids = random_vocabulary(rng, grammar)
    return Case(
        label=f"--seed {seed} --case {index}",
        grammar=text,
        tokens=tokens,
        eos_ids=eos_ids,
        special_ids=special_ids,
        walk_seed=rng.randrange(2**32),
        max_steps=rng.choice([4, 12, 24, 40]),
        # Logits wider than the vocabulary: the ids past it must never be allowed.
        mask_width=len(tokens) + rng.randint(1, 40) if rng.random() < 0.25 else None,
    )


def random_vocabulary(rng: random.Random, grammar: pda.Grammar) -> tuple[list[Token], list[int], list[int]]:
    """A random vocabulary for `grammar`: (tokens, EOS ids, other special ids)."""
    size = int(MIN_VOCAB * (MAX_VOCAB / MIN_VOCAB) ** rng.random())
    choices = RandomChoices(rng)
    strings = _terminal_strings(grammar, choices)
    sentences = _sentences(grammar, choices)
    alphabet = sorted({bytes([b]) for s in strings + sentences for b in s.encode()})
    pieces = [s.encode() for s in strings] + [s.encode() for s in MULTIBYTE]
    texts = [s.encode() for s in sentences] + pieces

    tokens: list[bytes] = [b for b in alphabet if rng.random() < 0.9]
    tokens += [w for w in WHITESPACE if rng.random() < 0.3]
    while len(tokens) < size:
        kind = rng.random()
        if kind < 0.3:  # concatenations: tokens crossing one or more lexeme boundaries
            parts = [rng.choice(pieces) for _ in range(rng.randint(1, 3))]
            glue = rng.choice([b"", b"", b" "])
            tokens.append(glue.join(parts))
        elif kind < 0.55:  # a slice of a sentence or piece, at byte offsets (may split a character)
            data = rng.choice(texts)
            i = rng.randrange(len(data))
            tokens.append(data[i : i + rng.randint(1, 8)])
        elif kind < 0.7:  # a fragment of a terminal string
            data = rng.choice(pieces)
            i, j = sorted(rng.sample(range(len(data) + 1), 2))
            tokens.append(data[i:j])
        elif kind < 0.8:  # a mix of alphabet bytes and multi-byte pieces
            tokens.append(b"".join(rng.choice(alphabet + pieces[-len(MULTIBYTE):]) for _ in range(rng.randint(1, 4))))
        elif kind < 0.88:
            tokens.append(rng.choice(FOREIGN + WHITESPACE))
        elif kind < 0.96 and tokens:  # a duplicate id
            tokens.append(rng.choice(tokens))
        else:
            tokens.append(rng.choice(alphabet))
    out: list[Token] = list(tokens[:size])
    rng.shuffle(out)
    if rng.random() < 0.05:
        out[rng.randrange(len(out))] = b""  # an unused id with no bytes
    eos_ids = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        i = rng.randrange(len(out) + 1)
        out.insert(i, None)
        eos_ids = [e + (e >= i) for e in eos_ids] + [i]
    special_ids = []
    if rng.random() < 0.2:
        i = rng.randrange(len(out) + 1)
        out.insert(i, None)
        eos_ids = [e + (e >= i) for e in eos_ids]
        special_ids = [i]
    return out, sorted(eos_ids), special_ids


def _terminal_strings(grammar: pda.Grammar, choices: RandomChoices) -> list[str]:
    out = []
    for term in grammar.ir.terminals:
        generator = TerminalGenerator(term)
        for _ in range(3):
            try:
                out.append(generator.generate(choices))
            except LimitExceeded:
                break
    return out


def _sentences(grammar: pda.Grammar, choices: RandomChoices) -> list[str]:
    """A few sentences (greedy lexing can make the language empty: then none).

    The depth is kept small: the lexeme budget does not bound nullable branching
    recursion (`r: "a"? | r r+ r`), whose derivations grow exponentially with depth.
    """
    sampler = GrammarSampler(grammar, max_depth=8, max_lexemes=8, tries=10, verify=grammar.accepts)
    out = []
    for _ in range(3):
        try:
            out.append(sampler.sample(choices))
        except LimitExceeded:
            break
    return [s for s in out if s]


# -- checking ---------------------------------------------------------------------------


def compile_case(
    grammar: str,
    tokens: list[Token],
    eos_ids: list[int],
    special_ids: list[int],
    mask_width: int | None = None,
) -> CompiledGrammar:
    """Compile without warm-up or index snapshot: the fuzzer's grammars are used once."""
    vocab = pda.Vocabulary.from_tokens(list(tokens), eos_ids=eos_ids, special_ids=special_ids)
    return CompiledGrammar(
        pda.Grammar.from_lark(grammar), vocab, mask_width=mask_width, warmup_seconds=0, disk_cache=False
    )


def walk_case(case: Case, compiled: CompiledGrammar, report: FuzzReport, path: list[int]) -> Mismatch | None:
    """Walk the case's grammar, checking every state; the first mismatch, or None.

    `path` receives the walk's token ids as they are taken (so a crash can say where).
    """
    for node, q, token in random_walk_states(compiled, random.Random(case.walk_seed), max_steps=case.max_steps):
        found = mask_mismatches(compiled, node, q)
        if compiled.vocab_size > compiled.vocab.size:
            bits = np.unpackbits(compiled.text_mask(node, q).view(np.uint8), bitorder="little")
            found += [(int(i), True, False) for i in np.flatnonzero(bits[compiled.vocab.size :]) + compiled.vocab.size]
        report.states += 1
        report.tokens_checked += compiled.vocab.size
        if found:
            return Mismatch(case, list(path), found)
        if token is not None:
            path.append(token)
    return None


def run_fuzz(
    cases: int,
    seed: int = 0,
    *,
    time_limit: float | None = None,
    first: int = 0,
    max_failures: int = 5,
    on_progress: Callable[[FuzzReport], None] | None = None,
) -> FuzzReport:
    """Run cases `first .. first+cases-1` of `seed` (fewer if `time_limit` seconds run out).

    Stops early after `max_failures` mismatches and crashes; mismatches are shrunk.
    """
    report = FuzzReport(seed=seed)
    start = time.perf_counter()
    for index in range(first, first + cases):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
        report.cases += 1
        case: Case | None = None
        try:
            case = random_case(seed, index)
            compiled = compile_case(case.grammar, case.tokens, case.eos_ids, case.special_ids, case.mask_width)
        except GrammarError:
            report.refused += 1
            continue
        except Exception:  # noqa: BLE001 - any other exception is a finding, reported with its case
            if case is None:
                case = Case(f"--seed {seed} --case {index}", case_grammar(case_rng(seed, index)), [], [], [], 0, 0)
            report.crashes.append(Crash(case, [], traceback.format_exc(limit=-6)))
            compiled = None
        mismatch = None
        if compiled is not None:
            path: list[int] = []
            try:
                mismatch = walk_case(case, compiled, report, path)
            except Exception:  # noqa: BLE001 - as above
                report.crashes.append(Crash(case, path, traceback.format_exc(limit=-6)))
        if mismatch is not None:
            try:
                mismatch = shrink(mismatch)
            except Exception:  # noqa: BLE001 - keep the unshrunk mismatch, and report the crash
                report.crashes.append(Crash(mismatch.case, mismatch.path, traceback.format_exc(limit=-6)))
            report.mismatches.append(mismatch)
        if len(report.mismatches) + len(report.crashes) >= max_failures:
            break
        if on_progress is not None and report.cases % 500 == 0:
            report.seconds = time.perf_counter() - start
            on_progress(report)
    report.seconds = time.perf_counter() - start
    return report


# -- shrinking -----------------------------------------------------------------------------


def reproduces(grammar: str, path: list[bytes], token: Token) -> list[tuple[int, bool, bool]] | None:
    """Whether the fast mask and the reference still disagree on `token` after `path`.

    The vocabulary is the path's tokens, `token` and one EOS id. Returns the
    disagreement on `token`, or None (also when the grammar is refused or the
    path is no longer allowed).
    """
    texts = sorted({t for t in [*path, token] if t is not None})
    tokens: list[Token] = [*texts, None]
    eos = len(texts)
    try:
        compiled = compile_case(grammar, tokens, [eos], [])
        node, q = compiled.initial_state()
        for data in path:
            step = compiled.scanner.feed(node, q, data)
            if step is None:
                return None
            node, q = step
        target = eos if token is None else texts.index(token)
        return mask_mismatches(compiled, node, q, token_ids=[target]) or None
    except GrammarError:
        return None


def shrink(mismatch: Mismatch) -> Mismatch:
    """A smaller mismatch of the same token: fewer vocabulary ids, a shorter walk, a smaller grammar."""
    case = mismatch.case
    if mismatch.tokens[0][0] >= len(case.tokens):
        return mismatch  # an id past the vocabulary: the mask width, not a token, is at fault
    token = case.tokens[mismatch.tokens[0][0]]
    path = [case.tokens[i] for i in mismatch.path]
    grammar = case.grammar
    if reproduces(grammar, path, token) is None:
        return mismatch  # depends on the other tokens (should not happen: masks are per token)
    # Drop steps of the walk, longest chunks first, while the disagreement stays.
    chunk = max(1, len(path) // 2)
    while chunk >= 1:
        i = 0
        while i < len(path):
            shorter = path[:i] + path[i + chunk :]
            if reproduces(grammar, shorter, token) is not None:
                path = shorter
            else:
                i += chunk
        chunk //= 2
    grammar = _first_fixpoint(grammar, _smaller_grammars, lambda g: reproduces(g, path, token) is not None)
    if token is not None:
        # A shorter token that still disagrees is a smaller reproducer of the same fault.
        token = _first_fixpoint(token, _shorter_tokens, lambda t: reproduces(grammar, path, t) is not None)
    texts = sorted({t for t in [*path, token] if t is not None})
    tokens: list[Token] = [*texts, None]
    found = reproduces(grammar, path, token) or []
    small = Case(case.label + " (shrunk)", grammar, tokens, [len(texts)], [], case.walk_seed, len(path))
    return Mismatch(small, [texts.index(t) for t in path], found)


def _first_fixpoint(value: T, smaller: Callable[[T], Iterator[T]], keeps: Callable[[T], bool]) -> T:
    """Take the first smaller value that keeps the property, until none does."""
    progress = True
    while progress:
        progress = False
        for candidate in smaller(value):
            if keeps(candidate):
                value, progress = candidate, True
                break
    return value


def _shorter_tokens(token: bytes) -> Iterator[bytes]:
    for i in range(len(token)):
        if len(token) > 1:
            yield token[:i] + token[i + 1 :]


def _smaller_grammars(text: str) -> Iterator[str]:
    """Grammar texts with one line, alternative or symbol removed (rule `start` kept)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if i > 0 and not line.startswith("start"):
            yield "\n".join(lines[:i] + lines[i + 1 :]) + "\n"
    for i, line in enumerate(lines):
        head, sep, body = line.partition(": ")
        if not sep or head[:1].isupper() or line.startswith("%"):
            continue
        alternatives = body.split(" | ")
        for j in range(len(alternatives)):
            if len(alternatives) > 1:
                rest = alternatives[:j] + alternatives[j + 1 :]
                yield "\n".join(lines[:i] + [f"{head}: {' | '.join(rest)}"] + lines[i + 1 :]) + "\n"
            symbols = alternatives[j].split()
            for k in range(len(symbols)):
                fewer = alternatives[:j] + [" ".join(symbols[:k] + symbols[k + 1 :])] + alternatives[j + 1 :]
                yield "\n".join(lines[:i] + [f"{head}: {' | '.join(fewer)}"] + lines[i + 1 :]) + "\n"


# -- command line ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fast mask vs reference on random grammars, vocabularies and walks.")
    parser.add_argument("--cases", type=int, default=1000, help="number of (grammar, vocabulary, walk) cases")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--case", type=int, default=None, help="run only this case of the seed (a reproducer)")
    parser.add_argument("--time-limit", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--max-failures", type=int, default=5)
    args = parser.parse_args(argv)
    first, count = (args.case, 1) if args.case is not None else (0, args.cases)
    scratch = None
    if not os.environ.get("PDA_CACHE_DIR"):
        scratch = tempfile.TemporaryDirectory(prefix="pda-mask-fuzz-")
        os.environ["PDA_CACHE_DIR"] = scratch.name
    try:
        report = run_fuzz(
            count,
            args.seed,
            time_limit=args.time_limit,
            first=first,
            max_failures=args.max_failures,
            on_progress=lambda r: print(r.summary(), file=sys.stderr, flush=True),
        )
    finally:
        if scratch is not None:
            del os.environ["PDA_CACHE_DIR"]
            scratch.cleanup()
    for mismatch in report.mismatches:
        print(mismatch.reproducer(), end="\n\n")
    for crash in report.crashes:
        print(crash.report(), end="\n\n")
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
