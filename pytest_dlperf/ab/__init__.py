"""A/B comparison of a reference and a candidate side on the same nodes (docs/ab.md): ``sequential``
holds the paired, sequential verdict."""
