"""Graphs: which ones run (``registry``, from ``langgraph.json``), the reference agent and
the kit it is built with (``agent``, ``kit``, ``tools``), chat models by name (``models``,
``scripted``), and the ``steps`` example (``example``)."""
