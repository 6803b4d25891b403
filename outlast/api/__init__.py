"""outlast.api."""
