"""Random small context-free grammars over a small alphabet, for the mask fuzzer.

Each grammar is Lark text that pda loads: a handful of rules over terminals that
are literals or small regexes on the alphabet {a, b, c, (, ), ,} plus optional
ignored spaces. Terminals deliberately overlap (prefixes of each other,
keyword-versus-class ties, a priority now and then) so greedy contextual lexing
is exercised; rules mix recursion, optional parts, repetition and nullable
symbols. Every start symbol derives at least one sentence (checked).

    python fuzz/random_grammars.py --seed 3 -n 5      # print five grammars
"""

from __future__ import annotations

import argparse
import random

ALPHABET = "abc(),"
LITERALS = ["a", "b", "c", "ab", "abc", "ba", "(", ")", ","]
REGEXES = ["/a+/", "/[ab]+/", "/b?c/", "/[a-c]/", "/a[bc]*/", "/c+b/"]


def random_grammar(rng: random.Random, *, rules: int = 4, terminals: int = 4) -> str:
    """Lark text of one random grammar (start symbol `start`)."""
    names = [f"r{i}" for i in range(rules)]
    terms = rng.sample(LITERALS, k=min(terminals, len(LITERALS)))
    regexes = rng.sample(REGEXES, k=rng.randrange(0, 3))
    defs = []
    symbols: list[str] = []
    for i, literal in enumerate(terms):
        name = f"T{i}"
        priority = ".2" if rng.random() < 0.1 else ""
        defs.append(f'{name}{priority}: "{literal}"')
        symbols.append(name)
    for i, regex in enumerate(regexes):
        name = f"R{i}"
        defs.append(f"{name}: {regex}")
        symbols.append(name)
    lines = [f"start: {names[0]}"]
    for index, name in enumerate(names):
        alternatives = []
        # The first alternative uses only terminals and later rules: the grammar is productive.
        later = names[index + 1 :]
        alternatives.append(_expansion(rng, symbols, later, allow_empty=False))
        for _ in range(rng.randrange(0, 3)):
            alternatives.append(_expansion(rng, symbols, names, allow_empty=True))
        lines.append(f"{name}: " + " | ".join(alternatives))
    text = "\n".join(lines + defs)
    if rng.random() < 0.5:
        text += '\n%ignore " "'
    return text + "\n"


def _expansion(rng: random.Random, symbols: list[str], rules: list[str], *, allow_empty: bool) -> str:
    items = []
    for _ in range(rng.randrange(0 if allow_empty else 1, 4)):
        pool = symbols + rules if rules and rng.random() < 0.4 else symbols
        item = rng.choice(pool)
        op = rng.choice(["", "", "", "?", "*", "+"])
        items.append(item + op)
    return " ".join(items)  # empty: an epsilon alternative


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-n", type=int, default=3)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    for i in range(args.n):
        print(f"// grammar {i}\n{random_grammar(rng)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
