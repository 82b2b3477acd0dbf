"""Node-side probes: standalone scripts copied to and run on the nodes (they import nothing from pytest_dlperf)."""
