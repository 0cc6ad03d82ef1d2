"""Vertex AI settings (models/gemini/vertex.py) and the token accounting on both backends: the
real google-genai SDK against the fake Live server, each backend's spelling of the response's
tokens and the other's (which the SDK drops)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from google import genai
from google.genai import types

from live.model import LiveSetup, ModelUsage
from models.gemini.events import response_tokens
from models.gemini.model import GeminiLiveModel, GeminiOptions
from models.gemini.vertex import VertexError, VertexSettings, vertex_api_version, vertex_from_env
from tests.fakelive import FakeLiveServer, TestCerts, client_for

ON = {"GOOGLE_GENAI_USE_VERTEXAI": "true"}


def test_vertex_settings_come_from_the_sdks_variables() -> None:
    assert vertex_from_env({}) is None
    assert (
        vertex_from_env({"GOOGLE_GENAI_USE_VERTEXAI": "false", "GOOGLE_CLOUD_PROJECT": "p"}) is None
    )
    env = {**ON, "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "europe-west4"}
    assert vertex_from_env(env) == VertexSettings("p", "europe-west4")
    url = "https://proxy.example"
    assert vertex_from_env({**env, "GOOGLE_VERTEX_BASE_URL": url}) == VertexSettings(
        "p", "europe-west4", url
    )
    # The SDK reads GOOGLE_GENAI_USE_ENTERPRISE first.
    assert vertex_from_env({**env, "GOOGLE_GENAI_USE_ENTERPRISE": "0"}) is None
    with pytest.raises(VertexError, match="GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION are"):
        vertex_from_env(ON)


def test_the_vertex_api_version_is_v1beta1_unless_configured() -> None:
    assert vertex_api_version(environ={}) == "v1beta1"
    assert vertex_api_version(environ={"GOOGLE_GENAI_API_VERSION": "beta"}) == "v1beta1"
    assert vertex_api_version(environ={"GOOGLE_GENAI_API_VERSION": "v1"}) == "v1"
    assert vertex_api_version("v1beta1", environ={"GOOGLE_GENAI_API_VERSION": "v1"}) == "v1beta1"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            types.UsageMetadata(
                prompt_token_count=10, response_token_count=5, total_token_count=15
            ),
            5,
        ),
        # The response's count dropped: what the total leaves after the prompt, tools, thoughts.
        (
            types.UsageMetadata(
                prompt_token_count=10,
                tool_use_prompt_token_count=2,
                thoughts_token_count=3,
                total_token_count=20,
            ),
            5,
        ),
        (types.UsageMetadata(prompt_token_count=10), 0),
        (types.UsageMetadata(total_token_count=3), 0),
        (types.UsageMetadata(prompt_token_count=30, total_token_count=20), 0),
    ],
)
def test_response_tokens_read_the_field_else_the_total(
    usage: types.UsageMetadata, expected: int
) -> None:
    assert response_tokens(usage) == expected


async def usage_seen(
    client: genai.Client, srv: FakeLiveServer, usage: dict[str, Any]
) -> ModelUsage:
    model = GeminiLiveModel(GeminiOptions("gemini-2.5-flash-native-audio-preview"), client=client)
    conn = await model.connect(LiveSetup())
    try:
        await srv.send_usage_metadata(usage)
        with anyio.fail_after(10):
            async for event in conn.receive():
                if isinstance(event, ModelUsage):
                    return event
    finally:
        await conn.close()
    raise AssertionError("no usage event")


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["gemini_api", "vertex"])
@pytest.mark.parametrize("spelling", ["responseTokenCount", "candidatesTokenCount"])
async def test_the_response_tokens_are_counted_whichever_spelling_either_backend_sends(
    certs: TestCerts, backend: str, spelling: str
) -> None:
    async with FakeLiveServer(certs=certs) as srv:
        client = srv.endpoint.vertex_client() if backend == "vertex" else client_for(srv)
        usage = await usage_seen(
            client, srv, {"promptTokenCount": 10, spelling: 5, "totalTokenCount": 15}
        )
    assert (usage.prompt_tokens, usage.response_tokens, usage.total_tokens) == (10, 5, 15)
