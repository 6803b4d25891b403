"""outlast.nodes."""
