"""The exceptions pda raises. Each one says what went wrong and where."""

from __future__ import annotations


class PdaError(Exception):
    """Base class of every error pda raises on purpose."""


class GrammarError(PdaError):
    """A grammar cannot be loaded or compiled.

    `line` and `column` locate the construct in the grammar text when known;
    `terminal` names the terminal whose pattern is at fault.
    """

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        terminal: str | None = None,
    ) -> None:
        where = []
        if terminal is not None:
            where.append(f"terminal {terminal}")
        if line is not None:
            where.append(f"line {line}" + (f", column {column}" if column is not None else ""))
        super().__init__(f"{message} ({'; '.join(where)})" if where else message)
        self.line = line
        self.column = column
        self.terminal = terminal


class RegexError(GrammarError):
    """A terminal's regular expression uses a construct a DFA cannot express."""


class ParseError(PdaError):
    """Text is not in (or not a prefix of) a grammar's language.

    `offset` is the byte offset of the first byte that could not be consumed
    (or the text length when the text ended too early); `expected` lists the
    terminal names that could have continued the text there.
    """

    def __init__(self, message: str, *, offset: int, expected: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.offset = offset
        self.expected = expected


class TokenRejected(PdaError):
    """A token id is unknown, special, or not allowed where it was offered."""


class LimitExceeded(PdaError):
    """A resource budget (Earley items, lexer states, DFA size...) was exceeded."""
