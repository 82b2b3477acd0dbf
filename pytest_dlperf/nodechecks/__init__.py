"""The checks a case's nodes pass before its first launch, each a node script run on every node at
once through ``Cluster.run_everywhere``: the backend's framework in one version (frameworks.py),
node 0 reaching the others over SSH (reach.py), the hardware fingerprint (hardware.py), a compiled
case's compiler (compiler.py) and the software each node trains with (software.py)."""
