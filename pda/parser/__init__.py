"""The context-free half: Earley recogniser over terminal sets."""
