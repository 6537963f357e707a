"""One request before a run: is the model server there, and does it serve the model?

Without it an unreachable server costs every episode its retries and ends the run as a
table of ``agent_error``; with it the user reads one line and nothing is recorded.
"""

from __future__ import annotations

import os

import httpx

from agentharness.agents.base import AgentError


def check_endpoint(
    base_url: str, model: str, *, api_key: str | None = None, timeout_s: float = 10.0
) -> None:
    """Raise :class:`AgentError` with one line when ``base_url`` cannot serve ``model``.

    ``GET {base_url}/models`` must answer; when it lists models, ``model`` must be one of
    them. A server without the route (404/405) is given the benefit of the doubt.
    """
    url = base_url.rstrip("/") + "/models"
    key = api_key or os.environ.get("OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as e:
        raise AgentError(
            f"cannot reach the model server at {base_url} ({type(e).__name__}: {e}); "
            "is it running, and is --base-url right (it usually ends in /v1)?"
        ) from None
    if response.status_code in (401, 403):
        raise AgentError(
            f"the model server at {base_url} refused the API key (HTTP {response.status_code}); "
            "set OPENAI_API_KEY"
        )
    if response.status_code in (404, 405):
        return
    if response.status_code >= 400:
        raise AgentError(
            f"the model server at {base_url} answered GET /models with HTTP "
            f"{response.status_code}; check --base-url"
        )
    try:
        served = [m["id"] for m in response.json().get("data", []) if isinstance(m, dict)]
    except (ValueError, AttributeError, KeyError, TypeError):
        return  # not an OpenAI model list; the chat requests will tell
    if served and model not in served:
        listed = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
        raise AgentError(
            f"the model server at {base_url} does not serve model {model!r}; it serves: {listed}"
        )
