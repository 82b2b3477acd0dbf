"""Workloads: training scripts that run on the nodes, writing through steplog.py (the contract), and
nodefacts.py (what a node has: its CPU model for the workloads, its facts for the clusters' node checks
and the readiness checks)."""
