"""What the parts of one JSON Schema lowering share: its options as settings, its grammar builder, its budgets.

A `Context` is made per lowering and handed to every part (normalisation, numbers,
strings, containers). It holds no schema logic: the settings derived from the
options (white space symbols, formats, exactness), the `GrammarBuilder` every part
names its rules and terminals with, the nesting and step budgets (`enter`/`leave`
around every subschema visited, `MAX_NESTING`, `MAX_STEPS`), the two ways to
report a keyword the grammar cannot express exactly (`unsupported`, which raises
or warns by `on_unsupported`; `approximate`, which always warns), and the facts
parts record for the lowering's later checks (long strings, whether some
object is bound to schema order).
"""

from __future__ import annotations

import functools
import warnings

from pda.errors import GrammarError
from pda.grammar.builder import GrammarBuilder
from pda.grammar.ecma_regex import py_char
from pda.grammar.json_schema import limits
from pda.grammar.json_schema.formats import FORMATS, GENERATION_FORMATS
from pda.grammar.json_schema.keywords import pointer
from pda.grammar.json_schema.options import Options


class JsonSchemaWarning(UserWarning):
    """A schema keyword was relaxed (``on_unsupported="relax"``) or approximated; the message says how."""


class Context:
    """One lowering's settings, grammar builder, budgets and warnings."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.exact = options.exact
        self.raise_unsupported = options.on_unsupported == "raise"
        self.any_order = options.property_order == "any"
        self.formats = FORMATS if options.exact else GENERATION_FORMATS
        self.builder = GrammarBuilder()
        # The symbols of an optional run of white space between two tokens: none when compact.
        self.ws: list[str] = []
        if options.whitespace != "compact":
            ws_regex = r"[ \t\n\r]+" if options.whitespace == "any" else rf"[ \t\n\r]{{1,{options.max_whitespace}}}"
            self.ws = [self.builder.optional(self.builder.fixed_terminal("WS", ws_regex))]
        # The rules reserved for long strings by length bounds: defined once the whole lowering is known
        # (`strings.define_long_strings`), as chunks unless a chunk head would compete with another string.
        self.long_strings: dict[tuple[int, int | None], str] = {}
        self.order_bound = False  # whether some object only takes its declared properties in schema order
        # Subschemas being lowered, flattened or negated inside one another, and entered in all.
        self.depth = 0
        self.steps = 0

    def enter(self, path: tuple[str, ...]) -> None:
        """Enter one more level of subschema nesting (`leave` when done): the lowering recurses per
        level, and `$ref` chains can nest far deeper than the document (`MAX_NESTING`)."""
        self.depth += 1
        self.steps += 1
        if self.depth > limits.MAX_NESTING:
            raise GrammarError(f"{pointer(path)}: the schema nests deeper than MAX_NESTING = {limits.MAX_NESTING} "
                               "subschemas (counting through $ref)")
        if self.steps > limits.MAX_STEPS:
            raise GrammarError(f"{pointer(path)}: the lowering entered more than MAX_STEPS = {limits.MAX_STEPS:,} "
                               "subschemas (nested not/anyOf multiply out); the schema is too complex")

    def leave(self) -> None:
        self.depth -= 1

    def unsupported(self, keyword: str, path: tuple[str, ...], relaxation: str) -> None:
        """A keyword the grammar does not express: a GrammarError, or with `on_unsupported="relax"` a warning."""
        msg = f"JSON Schema keyword {keyword!r} at {pointer(path)} is not supported"
        if self.raise_unsupported:
            raise GrammarError(f"{msg}; with on_unsupported='relax' it is relaxed: {relaxation}")
        warnings.warn(f"{msg}; relaxed: {relaxation}", JsonSchemaWarning, stacklevel=4)

    def approximate(self, keyword: str, path: tuple[str, ...], how: str) -> None:
        """A keyword the grammar expresses only approximately, as `how` says: always a warning."""
        warnings.warn(f"JSON Schema keyword {keyword!r} at {pointer(path)} is approximated: {how}",
                      JsonSchemaWarning, stacklevel=4)

    def literal(self, text: str) -> str:
        """The terminal for exactly `text` (JSON punctuation and keywords)."""
        return self.builder.terminal(literal_regex(text), "LIT")


@functools.lru_cache(maxsize=256)
def literal_regex(text: str) -> str:
    """The regex for exactly `text`, spelled once: every object and array asks for its brackets again."""
    return "".join(py_char(ord(c)) for c in text)
