"""The application layer between the faces (``outlast.api``) and the store and runtime:
what a run's business is, decided once (``RunService``), and where a run stands in each
face's words (``standing``)."""

from outlast.service.runs import Accepted, RunService

__all__ = ["Accepted", "RunService"]
