"""Benchmarks for mnemo-mcp. Not shipped with the package; the data sets stay outside the repository."""
