"""outlast.supervisor."""
