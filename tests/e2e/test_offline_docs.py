"""/docs and /redoc work without internet: every script, style sheet and icon they load comes from
the server itself (the real server, the embedded default)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.conftest import Server


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_their_assets_from_the_server(default_server: Server, page: str) -> None:
    html = httpx.get(default_server.url + page).text
    assets = re.findall(r"""(?:src|href)\s*[=:]\s*["']([^"']+)["']""", html)
    assets += re.findall(r"""url:\s*['"]([^'"]+)['"]""", html)
    assert assets, html
    for asset in assets:
        assert not re.match(r"^(https?:)?//", asset), f"{page} loads {asset} from another host"
        r = httpx.get(default_server.url + asset)
        assert r.status_code == 200 and r.content, asset
