"""The store contract, run against every backend, one module per capability."""
