"""Side environments (``pip=`` and ``hide=`` in a side's spec): made on every node through the cluster's own
channel, cached per node and reused (docs/ab.md, "Compare two stacks"). ``envs.options`` is read in every
pytest session and imports nothing heavy; ``envs.make`` makes them, in an A/B session or a confirmation."""
