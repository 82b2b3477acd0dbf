"""What a case's launches produced and what is derived from it: one launch's records (``records``), the
figures worked out from them (``comm``, ``mfu``), a case's result over its launches and the set that
derives the scaling figures (``cases``), the gate's verdicts on it (``verdict``), the environment it was
measured in (``environment``) and a results.json read back (``file``). Empty on purpose: each part is
imported from its own module, at its own layer (pyproject.toml's contracts)."""
