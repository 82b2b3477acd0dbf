"""Scripts that run on the nodes. They import nothing from the harness and are copied as files."""
