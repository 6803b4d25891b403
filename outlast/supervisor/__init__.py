"""The supervisor: what to decide when an activity lease expires or a soft budget limit
is reached. It decides; ``runtime/policy.py`` reads and writes what it needs, and the
execution (``runtime/execution.py``) carries the decision out.

``ladder.supervisor`` is the compiled LangGraph subgraph for an expired activity lease
(heuristic → probe → model verdict → intervention); ``judge`` asks a model for a verdict
on quoted data; ``scripted`` is the offline deterministic judge; ``decisions`` holds the
pure decisions around the ladder (the automatic tranche at a soft limit, whether a
verdict stops the node, the reminder's text) and ``Supervision``, what the supervisor
remembers about a run between its attempts.
"""
