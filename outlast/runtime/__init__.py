"""outlast.runtime."""
