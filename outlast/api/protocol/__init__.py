"""LangGraph's thread protocol v2 (the agent-protocol's streaming spec): a face that only
translates. Commands (``POST /threads/{t}/commands`` and WebSocket frames) go to the run
service; the thread's events are read from the durable run logs and translated on the way
out, so a cursor means the same thing in every process and after every restart."""
