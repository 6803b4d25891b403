"""Graphs: which ones run (``registry``, from ``langgraph.json``) and the example graph."""
