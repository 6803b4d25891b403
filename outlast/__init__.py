"""outlast: a durable runtime for LangGraph agents.

The connection can die; the agent does not. A run is a durable entity with an identity
from the moment it is accepted; HTTP requests and streams are only views of it.
"""

__version__ = "0.1.0"
