"""The user an app's ``auth.py`` returns, as a run's config keeps it: what LangGraph's
server puts there, less the fields that are credentials (a run's config is stored)."""

from __future__ import annotations

from outlast.graph.users import configurable_of, user_in, user_of


def test_a_runs_config_keeps_the_user_but_never_its_credentials() -> None:
    user = user_of(
        {
            "identity": "alice",
            "permissions": ["read"],
            "org": "acme",
            "access_token": "eyJ-secret",
            "github_api_key": "ghp-secret",
            "Password": "hunter2",
        }
    )
    config = {"configurable": configurable_of(user)}
    kept = config["configurable"]["langgraph_auth_user"]
    assert kept["org"] == "acme" and kept["permissions"] == ["read"]
    assert "secret" not in repr(config) and "hunter2" not in repr(config)
    assert config["configurable"]["langgraph_auth_user_id"] == "alice"
    again = user_in(config)
    assert again is not None and again.identity == "alice" and again["org"] == "acme"
    assert user.access_token == "eyJ-secret"  # the request's own user still has it
