"""The HTTP API (FastAPI): runs, events over SSE, waits and signals, threads, effects."""
