"""Workloads: training scripts that run on the nodes, writing through steplog.py (the contract)."""
