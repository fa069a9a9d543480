"""ECMA-262 regexes (JSON Schema `pattern`) as Python regexes and as JSON-string lexemes.

JSON Schema patterns are ECMA-262 regexes applied to the *decoded* string value,
as a search (``"a"`` means "contains a") unless anchored. A grammar terminal
instead matches the *encoded* JSON lexeme: ``"a\\u0062"`` decodes to ``ab``. The
package works in three steps, one module each:

1. `to_python`: `ecma_to_python` rewrites ECMA syntax into Python `re` syntax with
   the ECMA meaning (``\\d``/``\\w`` are ASCII, ``\\s`` is ECMA's Unicode white
   space, ``.`` excludes the four line terminators, ``$`` is end of input, ``[^]``,
   ``\\cX``, ``\\u{...}``);
2. Python's own regex parser (`re._parser`) turns that into an AST;
3. `lexeme`: the AST rendered with every character class replaced by the set of
   JSON spellings of its characters (`json_units`: "units", a raw character, a
   short escape, a ``\\uXXXX`` escape in either hex case, or a surrogate-pair escape
   for characters outside the BMP; printable ASCII other than ``"`` and ``\\`` is
   raw only, as serialisers write it). One unit is one code point, so a count
   ``{m,n}`` over units counts code points, as ``minLength``/``maxLength`` do.

What a regex cannot be rewritten into directly (several patterns at once, a
negated pattern, a length bound across several variable pieces) goes through
automata over code-point classes, and stays an automaton: a terminal given as
one (`pda.grammar.ir.TerminalAutomaton`) whose edges are JSON units
(`automata.pattern_set_automaton`), since the regex of an automaton can be
exponentially longer than the automaton.
Below them: `ranges` (code-point sets) and `numeric` (regexes for digit ranges);
beside them, `lark` (a regex quoted for Lark's loader).

Lone surrogates (``\\ud800`` alone) are not Unicode text and are never accepted.
Every regex produced here is ASCII-only Python `re` syntax, without look-around,
so pda's DFA builder can compile it. The names below are the package's interface;
the modules' other names are theirs.
"""

from __future__ import annotations

from pda.grammar.ecma_regex.automata import (
    MAX_PATTERN_DFA_STATES, AutomatonTooLarge, dfa_automaton, explore_states, pattern_set_automaton,
)
from pda.grammar.ecma_regex.json_units import (
    ANY_STRING_BODY, ANY_UNIT, RAW_CHARS, RAW_ONLY, SINGLE_SPELLING, literal_body_regex, literal_string_regex,
    raw_class_regex, unit_regex,
)
from pda.grammar.ecma_regex.lark import lark_regex, regex_to_lark
from pda.grammar.ecma_regex.lexeme import PatternInfo, ecma_pattern_body, python_pattern_body, split_leading_lookahead
from pda.grammar.ecma_regex.numeric import decimal_range_regex, digit_range_alternatives, hex4_regex, hex_set_regex
from pda.grammar.ecma_regex.ranges import (
    ANY, ASCII_DIGIT, ASCII_WORD, ECMA_LINE_TERMINATORS, ECMA_SPACE, MAX_CP, SURROGATES, Ranges, complement,
    intersect, normalize, subtract,
)
from pda.grammar.ecma_regex.to_python import char_class, ecma_to_python, py_char, python_search_regex

__all__ = [
    "ANY", "ANY_STRING_BODY", "ANY_UNIT", "ASCII_DIGIT", "ASCII_WORD", "AutomatonTooLarge", "ECMA_LINE_TERMINATORS",
    "ECMA_SPACE", "MAX_CP", "MAX_PATTERN_DFA_STATES", "PatternInfo", "RAW_CHARS", "RAW_ONLY",
    "Ranges", "SINGLE_SPELLING", "SURROGATES", "char_class", "complement", "decimal_range_regex",
    "dfa_automaton", "digit_range_alternatives", "ecma_pattern_body", "ecma_to_python", "explore_states", "hex4_regex",
    "hex_set_regex", "intersect", "lark_regex", "literal_body_regex", "literal_string_regex", "normalize",
    "pattern_set_automaton", "py_char", "python_pattern_body", "python_search_regex", "raw_class_regex",
    "regex_to_lark", "split_leading_lookahead", "subtract", "unit_regex",
]
