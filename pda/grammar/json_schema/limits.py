"""The JSON Schema front end's defaults and limits, one constant each, read where they apply.

Every bound the lowering enforces (document size, nesting, counts, the sizes past
which a construction is approximated or refused) and every generation default
(white space, number ranges) is a constant here with the reason for its value.
The lowering reads them as `limits.NAME` when it runs, so a test or a benchmark
may change one for a while (`pda.grammar.json_schema.limits.MAX_ANY_ORDER_PROPERTIES = 10`).
Nothing else lives here.
"""

MAX_WHITESPACE_RUN = 65
"""Default longest run of JSON white space between two tokens with ``whitespace="flexible"``
(``max_whitespace``): a newline and 64 spaces, what ``json.dumps(indent=4)`` writes before a
value at depth 16 (indent 2 needs 33 there). A bound, so a model cannot loop on spaces."""

MAX_NUMBER_INTEGER_DIGITS = 20
"""Generation default (``exact=False``): most digits of a ``number``'s integer part (the
mantissa's, in exponent notation), enough for any 64-bit integer."""

MAX_NUMBER_EXPONENT = 308 - MAX_NUMBER_INTEGER_DIGITS
"""Generation default: largest positive exponent of a ``number``, so that every number is
below 10^20 x 10^288 = 10^308, under the largest double (1.797e308): ``float()`` of any
generated number is finite. Negative exponents have at most 3 digits (they underflow to 0.0
at worst, still finite)."""

MAX_ENUMERATED_MULTIPLES = 1000
"""A `multipleOf` whose automaton is over `multiples`' limits is enumerated on a bounded range
of up to this many multiples."""

MAX_COUNTED_PROPERTIES = 64
"""Largest `minProperties`/`maxProperties` bound tracked (rules grow with bound x properties)."""

MAX_BRANCHES = 64
"""Most `anyOf` branches one merge may multiply out (conditionals and dependencies add some)."""

MAX_DEPENDENCIES = 4
"""Most property dependencies lowered per object: each doubles the object's alternatives."""

MAX_EXACT_KEY_NAMES = 16
"""Most declared names an object with `patternProperties` may have for its key terminals to be
built exactly (patterns minus names, through automata) instead of ranked by priority."""

MAX_EXACT_KEY_PATTERNS = 200
"""Longest total source of one object's `patternProperties` patterns tried for exact keys
(BCP 47-style patterns of 300 characters cost ~0.3 s each in the automata)."""

MAX_EXACT_KEY_STATES = 2000
"""Most states of one object's exact key automata together; past it the keys exclude each other
by look-aheads. The corpus's largest key set has 530 (`^[0-9a-zA-Z_-]{1,255}$` minus the names,
and the keys matching neither, 0.04 s); at the bound, `^.{1,2000}$` minus a name takes 0.16 s and
its 62,006-state byte DFA 2.6 s."""

MAX_ANY_ORDER_PROPERTIES = 6
"""Objects with at most this many declared properties accept them in any order
(``property_order="any"``): the grammar has 2^n states for n properties."""

MAX_TRACKED_REQUIRED = 8
"""Under ``exact=True`` an object with more declared properties than `MAX_ANY_ORDER_PROPERTIES`
still takes them in any order: when at most this many are required, 2^r states track which
required ones are written, and an optional one may repeat (a duplicate key, which no parsed
instance holds, is accepted under a warning); past it, r + 1 states count how many are
written, and a required one may repeat too. Exact for texts without duplicate keys."""

MAX_OBJECT_STATES = 4096
"""Most rules `exact=True` spends on one object's members in any order with
`minProperties`/`maxProperties` (states: what is written x the count x started); past it the
counts are dropped with a warning (the grammar accepts more) rather than binding the
properties to schema order (which would refuse valid instances)."""

MAX_UNIQUE_VALUES = 10
"""`uniqueItems` is exact when the items have at most this many possible values (an `enum`, a
`const`, booleans, null): one rule per set of values written, 2^k of them. Past it, and for
items of infinitely many values, duplicates are accepted under a warning."""

MAX_PROPERTY_NAMES = 128
"""A `propertyNames` that lists at most this many names (`enum`/`const`) makes them the object's
declared properties and closes it (exact, no ranked key terminals); longer lists stay a key
terminal beside the others."""

LONG_STRING_UNITS = 256
"""Strings whose length bounds exceed this are counted in chunks (`strings.long_string`)."""

STRING_CHUNK = 64
"""Code points per chunk terminal of a long string."""

MAX_LITERAL_SPELLINGS = 8
"""Most spellings (`/` or `\\/`) a string enum value may have to join the finite-set terminal."""

MAX_SUBSCHEMAS = 10_000
"""Distinct subschemas one lowering may visit: `anyOf`s under `allOf` multiply out."""

MAX_JSON_DEPTH = 128
"""Deepest nesting of arrays and objects in a schema document (`validate` checks it first):
the lowering and `json.dumps` recurse on the document, and Python's stack is bounded."""

MAX_NESTING = 64
"""Deepest nesting of subschemas the lowering follows (`Context.nested`; through `$ref`s
too, which the document depth does not bound). Measured: a level costs at most 7 Python
frames, so 64 levels stay far below Python's default recursion limit of 1,000 with room
for the caller and the leaves; without the limit 175 nested arrays raised RecursionError."""

MAX_STEPS = 200_000
"""Most subschemas one lowering may enter (`Context.nested`, summed over the whole lowering):
negation and `anyOf` products grow exponentially with nesting (six nested
`{"not": {"properties": {"a": S, "b": S}}}` ran for minutes). Measured on 360 corpus
schemas: those that compile enter at most 3,476; 200,000 take about 5 s."""

MAX_SCHEMA_NODES = 1_000_000
"""Most values in a schema document (`validate`); a Python dict that shares subschemas can
hold exponentially many."""

MAX_COUNT = 2**128
"""Largest length, item or property count (`minLength`, `maxItems`...): repetitions are
rules of depth log2(count)."""

MAX_NUMBER_DIGITS = 1000
"""Most digits of an integer anywhere in a schema (Python's int-to-text conversion stops at 4,300)."""
