"""The terminal client: ``outlast run | attach | answer | cancel | status | runs``.

It talks to a server over the public HTTP API only, so it works the same against a local
``outlast serve`` and a remote deployment, and it survives that server restarting.
"""
