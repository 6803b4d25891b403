"""``outlast demo``: a narrated run of the reference agent that shows why it outlasts
the connection (see :mod:`outlast.demo.scenario`)."""
