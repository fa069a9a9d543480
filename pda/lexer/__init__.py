"""The regular half at run time: the contextual greedy lexer."""
