"""Small grammars that exercise the lexer's corners, shared by the mask and lexer tests."""

from __future__ import annotations

KEYWORDS = r"""
// Keywords tie with NAME (same priority): the parser receives both and picks.
start: stmt+
stmt: "let" NAME "=" expr ";"
    | "print" expr ";"
    | "if" expr "then" stmt* "end"
?expr: expr "+" term | term
?term: NAME | NUMBER | "(" expr ")" | STRING
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
STRING: /"([^"\\\n]|\\.)*"/
COMMENT: /#[^\n]*/
%ignore /[ \t\n]+/
%ignore COMMENT
"""

LAZY_COMMENTS = r"""
// A lazy terminal (C comment) as %ignore, and a terminal priority.
start: item ("," item)*
item: WORD | INT | KEY
KEY.2: /[a-z]+:/
WORD: /[a-z]+/
INT: /-?[0-9]+/
C_COMMENT: /\/\*(.|\n)*?\*\//
%ignore C_COMMENT
%ignore " "
"""

ARITH = r"""
// Left and right recursion, nullable rules, a choice of multi-byte literals.
?start: sum
?sum: sum ("+" | "−") prod | prod
?prod: atom ("*" | "×") prod | atom
?atom: NUMBER | "(" sum ")" | "-" atom | fn
fn: NAME "(" [sum ("," sum)*] ")"
NAME: /[a-zé北京]+/
NUMBER: /[0-9]+/
"""
