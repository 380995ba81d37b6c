"""The transport floor: an ASGI app (same uvicorn as the service) that reads the whole body and
answers a canned body of a given size. ``python bench/noop_server.py PORT ANSWER_BYTES``."""

from __future__ import annotations

import sys
from typing import Any

import uvicorn


def make_app(answer: bytes) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    return app


if __name__ == "__main__":
    port, size = int(sys.argv[1]), int(sys.argv[2])
    uvicorn.run(make_app(b"[" + b" " * max(size - 2, 0) + b"]"), host="127.0.0.1", port=port, log_level="warning")
