"""Oversized requests are refused as problem documents, like every other error.

FastAPI's ``max_body_size`` enforces the limit (also on chunked bodies, while they
stream in), but answers in its own format. This layer sits outside the whole app: it
refuses a too-large ``Content-Length`` before anything reads the body, and turns any
other 413 from inside into ``application/problem+json``.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from outlast.api.problems import PROBLEM, send_problem


class BodyLimitProblems:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._refuse(send)
                return
        replaced = False

        async def send_or_replace(message: Message) -> None:
            nonlocal replaced
            if (
                message["type"] == "http.response.start"
                and message["status"] == 413
                and (b"content-type", PROBLEM.encode()) not in message["headers"]
            ):
                # FastAPI's own 413 (the body limit); a problem from a route stays as is.
                replaced = True
                await self._refuse(send)
                return
            if replaced:
                return  # the inner body of the replaced response
            await send(message)

        await self.app(scope, receive, send_or_replace)

    async def _refuse(self, send: Send) -> None:
        await send_problem(
            send,
            413,
            f"request body exceeds the limit of {self.max_bytes} bytes (OUTLAST_MAX_BODY_BYTES)",
            title="Request body too large",
            headers={"Connection": "close"},
            limit="max_body_bytes",
        )
