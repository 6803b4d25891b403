"""outlast.graph."""
