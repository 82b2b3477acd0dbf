"""The checks a case's nodes pass before its first launch: the backend's framework in one version
(frameworks.py), node 0 reaching the others over SSH (reach.py), the hardware fingerprint (hardware.py)."""
