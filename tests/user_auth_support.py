"""What the tests of an app's own ``auth.py`` share: the tokens of its users (the fixture
``tests/user_auth_app.py``) and a ``langgraph.json`` that names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.harness import make_settings

TESTS = Path(__file__).resolve().parent
ALICE = {"Authorization": "Bearer token-alice"}
BOB = {"Authorization": "Bearer token-bob"}
CAROL_P1 = {"Authorization": "Bearer token-carol-p1"}
CAROL_P2 = {"Authorization": "Bearer token-carol-p2"}
READ_ONLY = {"Authorization": "Bearer token-rita"}


def manifest(tmp_path: Path, auth_path: str = f"{TESTS}/user_auth_app.py:auth") -> Path:
    path = tmp_path / "langgraph.json"
    graphs = {
        "hitl": f"{TESTS}/lg_graphs.py:hitl",
        "whoami": "tests.user_auth_graphs:whoami",  # the module this test reads SEEN from
    }
    path.write_text(json.dumps({"graphs": graphs, "auth": {"path": auth_path}}))
    return path


def settings(tmp_path: Path) -> Any:
    return make_settings(graphs_file=manifest(tmp_path))
