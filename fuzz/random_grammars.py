"""Random small context-free grammars over a small alphabet, for the mask fuzzer.

Each grammar is Lark text that pda loads: a handful of rules over terminals that
are literals or small regexes on the alphabet {a, b, c, (, ), ,, é, €} plus
optional ignored spaces and lazy comments. The features the lexer and parser
must get right all occur at random:

- overlapping terminals: prefixes of each other, and keyword-versus-class ties
  (a literal and a same-priority regex matching the same lexeme);
- priorities on literals and regexes;
- `%ignore` (a space, a run of spaces, a lazy comment `/#.*?;/`);
- lazy terminals (`/a.*?b/`, `/\\(.*?\\)/`), ending at their first match;
- multi-byte UTF-8 literals and classes (`é`, `€`, `/[aé]+/`);
- nullable rules (epsilon alternatives, `?`, `*`), left and right recursion,
  and ambiguity (`r: r r | ...`).

Every start symbol derives at least one string of terminals: the first
alternative of each rule uses only terminals and later rules.

    python fuzz/random_grammars.py --seed 3 -n 5      # print five grammars
"""

from __future__ import annotations

import argparse
import random

ALPHABET = "abc(),é€"
LITERALS = ["a", "b", "c", "ab", "abc", "ba", "(", ")", ",", "é", "€", "aé", "é€"]
REGEXES = ["/a+/", "/[ab]+/", "/b?c/", "/[a-c]/", "/a[bc]*/", "/c+b/", "/[aé]+/", "/€[a-c]?/"]
LAZY_REGEXES = [r"/a.*?b/", r"/\(.*?\)/", r"/c[a-c]*?a/"]
IGNORES = ['" "', "/ +/"]
COMMENT = "COMMENT: /#.*?;/"


def random_grammar(rng: random.Random, *, rules: int = 4, terminals: int = 4) -> str:
    """Lark text of one random grammar (start symbol `start`)."""
    names = [f"r{i}" for i in range(rules)]
    terms = rng.sample(LITERALS, k=min(terminals, len(LITERALS)))
    regexes = rng.sample(REGEXES, k=rng.randrange(0, 3))
    if rng.random() < 0.25:
        regexes.append(rng.choice(LAZY_REGEXES))
    defs = []
    symbols: list[str] = []
    for i, literal in enumerate(terms):
        defs.append(f'T{i}{_priority(rng)}: "{literal}"')
        symbols.append(f"T{i}")
    for i, regex in enumerate(regexes):
        defs.append(f"R{i}{_priority(rng)}: {regex}")
        symbols.append(f"R{i}")
    lines = [f"start: {names[0]}"]
    for index, name in enumerate(names):
        # The first alternative uses only terminals and later rules: the grammar is productive.
        later = names[index + 1 :]
        alternatives = [_expansion(rng, symbols, later, allow_empty=False)]
        for _ in range(rng.randrange(0, 3)):
            alternatives.append(_expansion(rng, symbols, names, allow_empty=True))
        shape = rng.random()
        if shape < 0.15:
            alternatives.append(f"{name} {rng.choice(symbols)}")  # left recursion
        elif shape < 0.3:
            alternatives.append(f"{rng.choice(symbols)} {name}")  # right recursion
        elif shape < 0.4:
            alternatives.append(f"{name} {name}")  # ambiguous
        lines.append(f"{name}: " + " | ".join(alternatives))
    text = "\n".join(lines + defs)
    if rng.random() < 0.5:
        text += f"\n%ignore {rng.choice(IGNORES)}"
    if rng.random() < 0.15:
        text += f"\n{COMMENT}\n%ignore COMMENT"
    return text + "\n"


def _priority(rng: random.Random) -> str:
    return rng.choice([".2", ".3"]) if rng.random() < 0.15 else ""


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
