"""Core-level pyuvm environment: programs loaded through the TensorCore's load ports, a monitor of
retired instructions, a scoreboard running the golden interpreter (doc/core.md)."""
