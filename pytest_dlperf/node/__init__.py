"""Everything that runs on the nodes: copied there as single files, each imports nothing from the
harness (standard library, or the framework it trains with). Workloads, probes and the watchdogs."""
