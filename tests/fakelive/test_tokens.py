"""The fake's ephemeral tokens, through the real SDK: the constrained endpoint answers only a
token it issued, unexpired, with a use left; resuming spends no use."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types

from tests.fakelive import FakeLiveServer, TestCerts
from tests.fakelive.tokens import TOKEN_METHOD, TOKEN_REFUSED_CODE

MODEL = "gemini-3.8-live"


def token_client(srv: FakeLiveServer, token: str, version: str = "v1alpha") -> genai.Client:
    options = srv.endpoint.http_options(version)
    return genai.Client(vertexai=False, api_key=token, http_options=options)


async def opens(client: genai.Client, handle: str | None = None) -> bool:
    config = types.LiveConnectConfig(
        session_resumption=types.SessionResumptionConfig(handle=handle)
    )
    try:
        async with client.aio.live.connect(model=MODEL, config=config) as session:
            return session.setup_complete is not None
    except errors.APIError as exc:
        assert exc.code == TOKEN_REFUSED_CODE
        return False


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::google.genai.errors.ExperimentalWarning")
async def test_the_fake_checks_the_token_its_uses_and_its_expiry(certs: TestCerts) -> None:
    async with FakeLiveServer(certs=certs) as srv:
        once = srv.issue_token(uses=1)
        assert await opens(token_client(srv, once))
        assert not await opens(token_client(srv, once))  # used up for a new session
        assert await opens(token_client(srv, once), handle="h-1")  # resuming is no use
        assert not await opens(token_client(srv, "auth_tokens/never-issued"))
        late = srv.issue_token()
        srv.expire_token(late)
        assert not await opens(token_client(srv, late))
        fresh = srv.issue_token()
        assert not await opens(token_client(srv, fresh, version="v1beta"))  # v1alpha only
        await srv.wait_for(lambda: all(c.closed for c in srv.connections))
        reasons = [c.close_reason for c in srv.connections if c.close_code == TOKEN_REFUSED_CODE]
    assert all(c.method == TOKEN_METHOD for c in srv.connections)
    assert reasons == [
        "fake live: ephemeral token has no use left",
        "fake live: unknown ephemeral token",
        "fake live: ephemeral token expired",
        "fake live: ephemeral tokens need v1alpha, not v1beta",
    ]
