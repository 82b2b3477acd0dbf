"""A tiny engine for the harness's mechanism tests: a launcher plugin and a standard-library workload."""
