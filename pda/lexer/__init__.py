"""The regular half at run time: the contextual greedy lexer's tables (it knows nothing of the parser)."""
