"""What software a run ran: a case's software identity and what differs between two (``identity``), the
versions and commit a run reports and what changed since the baseline (``provenance``), and framework
short names (``frameworks``). Empty on purpose: each part is imported from its own module."""
