"""The supervisor: what to do when an activity lease expires or a budget checkpoint opens.

``ladder.supervisor`` is the compiled LangGraph subgraph (heuristic → probe → model
verdict → intervention); ``judge`` asks a model for a verdict on quoted data;
``scripted`` is the offline deterministic judge.
"""
