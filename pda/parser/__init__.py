"""The context-free half: the Earley recogniser over terminal sets, and the indenter that wraps its nodes."""
