"""Repository-level conftest: pytest-dlperf itself is loaded through its pytest11 entry point."""
