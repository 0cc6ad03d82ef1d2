"""models/gemini/turns.py: the real google-genai SDK against the fake generateContent server.

Everything goes over TLS to ``tests/fakelive/rest.py``; waits are on events or on the
model's own deadline, never a fixed sleep.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import pytest
from google import genai
from google.genai import types

from live.model import FunctionCallRequest, ModelUsage
from live.turns.model import TurnModel, TurnModelError, TurnRequest
from models.gemini.model import MissingApiKey
from models.gemini.turns import DEFAULT_TURN_MODEL, GeminiTurnModel
from tests.fakelive import (
    NO_ANSWER,
    FakeGenerateServer,
    FakeHttpError,
    GenerateRequest,
    TestCerts,
    error_response,
    function_call_response,
    model_response,
    text_response,
)

# The SDK subclasses aiohttp.ClientSession, which aiohttp frowns upon; nothing of ours.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"
)

SECRET_KEY = "sekrit-turns-0123456789-abcdef"
SIGNATURE = "c2lnbmF0dXJl"  # base64 of b"signature"

COUNT_PEOPLE = types.FunctionDeclaration(
    name="count_people",
    description="Stream the number of people in view.",
    parameters=types.Schema(
        type=types.Type.OBJECT,
        properties={"min_score": types.Schema(type=types.Type.NUMBER)},
        required=["min_score"],
    ),
    behavior=types.Behavior.NON_BLOCKING,
)
STOP_STREAMING = types.FunctionDeclaration(
    name="stop_streaming",
    description="Stop a streaming function.",
    parameters=types.Schema(
        type=types.Type.OBJECT,
        properties={"function_name": types.Schema(type=types.Type.STRING)},
    ),
)


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def request(*contents: types.Content, system: str | None = None) -> TurnRequest:
    return TurnRequest(
        contents=contents, declarations=(COUNT_PEOPLE, STOP_STREAMING), system_instruction=system
    )


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK's aiohttp session trusts the proxy variables, and async_client_args
    # {"proxy": None} does not turn that off (docs/gemini-rest-wire.md): keep loopback direct.
    for name in (
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def srv(certs: TestCerts) -> AsyncIterator[FakeGenerateServer]:
    async with FakeGenerateServer(certs=certs) as server:
        yield server


def model_for(srv: FakeGenerateServer, **options: Any) -> GeminiTurnModel:
    return GeminiTurnModel(client=srv.client(api_key=SECRET_KEY), **options)


def assert_secret_absent(records: Sequence[logging.LogRecord]) -> None:
    formatter = logging.Formatter()
    for record in records:
        assert SECRET_KEY not in formatter.format(record), record.name


# --------------------------------------------------------------------------------------------
# What goes out


@pytest.mark.anyio
async def test_declarations_and_system_instruction_arrive(srv: FakeGenerateServer) -> None:
    srv.queue(text_response("fine"))
    model: TurnModel = model_for(srv)
    await model.generate(request(user("how many?"), system="You watch a camera."))

    sent = srv.requests[0]
    assert (sent.method, sent.version, sent.model) == ("POST", "v1beta", DEFAULT_TURN_MODEL)
    assert sent.path == f"/v1beta/models/{DEFAULT_TURN_MODEL}:generateContent"
    assert sent.api_key == SECRET_KEY
    assert sent.system_instruction() == "You watch a camera."
    assert sent.user_texts() == ["how many?"]
    assert sent.declaration_names() == ["count_people", "stop_streaming"]
    count = sent.declaration("count_people")
    assert "behavior" not in count
    assert count["parameters"] == {
        "type": "OBJECT",
        "properties": {"min_score": {"type": "NUMBER"}},
        "required": ["min_score"],
    }
    assert sent.declaration("stop_streaming")["parameters"]["properties"] == {
        "function_name": {"type": "STRING"}
    }
    # The caller's declaration is left as it was (the Live path still needs behavior).
    assert COUNT_PEOPLE.behavior == types.Behavior.NON_BLOCKING


@pytest.mark.anyio
async def test_no_tools_no_system_instruction(srv: FakeGenerateServer) -> None:
    srv.queue(text_response("hi"))
    reply = await model_for(srv, model="my-proxy-model").generate(TurnRequest((user("hi"),)))
    sent = srv.requests[0]
    assert sent.model == "my-proxy-model"
    assert sent.tools == [] and sent.system_instruction() is None
    assert reply.text == "hi"


# --------------------------------------------------------------------------------------------
# Function calls, and the wire format of the answer


@pytest.mark.anyio
async def test_function_call_round_trip_keeps_id_name_and_signature(
    srv: FakeGenerateServer,
) -> None:
    srv.queue(
        function_call_response(
            [("fc-1", "count_people", {"min_score": 0.5})],
            text="Let me look.",
            thought_signature=SIGNATURE,
        ),
        text_response("Two people."),
    )
    model = model_for(srv)
    question = user("how many people?")
    reply = await model.generate(request(question))
    assert reply.calls == (FunctionCallRequest("fc-1", "count_people", {"min_score": 0.5}),)
    assert reply.text == "Let me look."
    assert reply.content is not None and reply.content.role == "model"
    calls = [p.function_call for p in reply.content.parts if p.function_call is not None]
    assert [c.name for c in calls] == ["count_people"]
    # The reply as the SDK read it goes back as it came: its thought signature with it.
    assert reply.content.sdk.parts[1].thought_signature == b"signature"

    answer = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id="fc-1", name="count_people", response={"people": 2}
                )
            )
        ],
    )
    final = await model.generate(request(question, reply.content, answer))
    assert final.text == "Two people." and final.calls == ()

    sent = srv.requests[1]
    responses = sent.function_responses()
    assert [(r.id, r.name, r.response) for r in responses] == [
        ("fc-1", "count_people", {"people": 2})
    ]
    calls = sent.function_calls()
    assert [(c.id, c.name, c.args, c.thought_signature) for c in calls] == [
        ("fc-1", "count_people", {"min_score": 0.5}, SIGNATURE)
    ]
    assert sent.texts("model") == ["Let me look."]


@pytest.mark.anyio
async def test_function_call_without_id_gets_empty_id(srv: FakeGenerateServer) -> None:
    srv.queue(
        function_call_response([(None, "count_people", {}), (None, "stop_streaming", {"x": 1})])
    )
    reply = await model_for(srv).generate(request(user("count")))
    assert reply.calls == (
        FunctionCallRequest("", "count_people", {}),
        FunctionCallRequest("", "stop_streaming", {"x": 1}),
    )


@pytest.mark.anyio
async def test_text_reply_usage_and_thoughts(srv: FakeGenerateServer) -> None:
    srv.queue(
        model_response(
            [{"text": "thinking hard", "thought": True}, {"text": "Nobody "}, {"text": "there."}],
            usage=(12, 3, 20),
        )
    )
    reply = await model_for(srv).generate(request(user("anyone?")))
    assert reply.text == "Nobody there."
    assert reply.calls == ()
    assert reply.usage == ModelUsage(prompt_tokens=12, response_tokens=3, total_tokens=20)
    assert reply.content is not None and reply.content.parts is not None
    assert len(reply.content.parts) == 3  # thoughts stay in the history


@pytest.mark.anyio
async def test_responder_sees_each_request(srv: FakeGenerateServer) -> None:
    def responder(req: GenerateRequest) -> dict[str, Any]:
        return text_response(f"{req.index}:{req.user_texts()[-1]}")

    srv.responder = responder
    model = model_for(srv)
    assert (await model.generate(request(user("a")))).text == "0:a"
    assert (await model.generate(request(user("b")))).text == "1:b"


# --------------------------------------------------------------------------------------------
# Refusals and failures


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "retryable"), [(500, True), (503, True), (429, True), (400, False), (403, False)]
)
async def test_http_errors(
    srv: FakeGenerateServer, caplog: pytest.LogCaptureFixture, status: int, retryable: bool
) -> None:
    caplog.set_level(logging.DEBUG)
    srv.queue(error_response(status, f"API key {SECRET_KEY} said no\nsecond line"))
    with pytest.raises(TurnModelError) as info:
        await model_for(srv).generate(request(user("hi")))
    message = str(info.value)
    assert info.value.retryable is retryable
    assert f"HTTP {status}" in message and "said no second line" in message
    assert "\n" not in message and SECRET_KEY not in message and "***" in message
    assert len(srv.requests) == 1  # the SDK did not retry on its own
    assert_secret_absent(caplog.records)


@pytest.mark.anyio
async def test_long_error_is_cut(srv: FakeGenerateServer) -> None:
    srv.queue(error_response(400, "x" * 5000))
    with pytest.raises(TurnModelError) as info:
        await model_for(srv).generate(request(user("hi")))
    assert len(str(info.value)) <= 200


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "expected", "retryable"),
    [
        ({"promptFeedback": {"blockReason": "SAFETY"}}, "prompt blocked (SAFETY)", False),
        ({"candidates": []}, "no candidates", True),
        (model_response([], finish_reason="SAFETY"), "(SAFETY)", False),
        (model_response([], finish_reason="MALFORMED_FUNCTION_CALL"), "MALFORMED", True),
    ],
)
async def test_no_answer_in_response(
    srv: FakeGenerateServer, answer: dict[str, Any], expected: str, retryable: bool
) -> None:
    srv.queue(answer)
    with pytest.raises(TurnModelError, match=re.escape(expected)) as i:
        await model_for(srv).generate(request(user("hi")))
    assert i.value.retryable is retryable


@pytest.mark.anyio
async def test_max_tokens_is_an_answer(srv: FakeGenerateServer) -> None:
    srv.queue(text_response("Two peo", finish_reason="MAX_TOKENS"))
    assert (await model_for(srv).generate(request(user("hi")))).text == "Two peo"


@pytest.mark.anyio
async def test_server_that_never_answers_times_out(srv: FakeGenerateServer) -> None:
    srv.queue(NO_ANSWER)
    model = model_for(srv, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(TurnModelError, match=re.escape("no answer within 0.5 s")) as info:
        await model.generate(request(user("hi")))
    assert time.monotonic() - started < 10  # not the SDK's own minutes; generous for a busy CPU
    assert info.value.retryable
    # The client hung up: the fake saw the request abandoned.
    await srv.wait_for(lambda: srv.abandoned == [0])


@pytest.mark.anyio
async def test_connection_refused_is_retryable_and_quick(certs: TestCerts) -> None:
    async with FakeGenerateServer(certs=certs) as gone:
        client = gone.client(api_key=SECRET_KEY)
    model = GeminiTurnModel(client=client, timeout_s=5)
    started = time.monotonic()
    with pytest.raises(TurnModelError) as info:
        await model.generate(request(user("hi")))
    # No hidden SDK retry (it sleeps 1-10 s first).
    assert time.monotonic() - started < 1
    assert info.value.retryable
    assert SECRET_KEY not in str(info.value)


@pytest.mark.anyio
async def test_untrusted_certificate_is_not_retryable(
    srv: FakeGenerateServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    client = genai.Client(
        vertexai=False,
        api_key=SECRET_KEY,
        http_options=types.HttpOptions(base_url=srv.base_url, async_client_args={"proxy": None}),
    )
    with pytest.raises(TurnModelError, match="TLS") as info:
        await GeminiTurnModel(client=client).generate(request(user("hi")))
    assert not info.value.retryable
    assert srv.requests == []


# --------------------------------------------------------------------------------------------
# Building the client


def test_missing_api_key_and_bad_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(MissingApiKey):
        GeminiTurnModel()
    with pytest.raises(ValueError, match="empty"):
        GeminiTurnModel(" ", api_key="k")
    with pytest.raises(ValueError, match="timeout"):
        GeminiTurnModel(api_key="k", timeout_s=0)


@pytest.mark.anyio
async def test_client_from_environment_honours_sdk_variables(
    srv: FakeGenerateServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GOOGLE_GEMINI_BASE_URL + SSL_CERT_FILE are the only route to the fake: a client built
    # any other way would fail on the address or on TLS.
    for name in srv.endpoint.subprocess_env({}).keys() | {"GOOGLE_API_KEY", "SSL_CERT_DIR"}:
        monkeypatch.delenv(name, raising=False)
    for name, value in srv.env(api_version="v1alpha", api_key=SECRET_KEY).items():
        monkeypatch.setenv(name, value)
    srv.queue(text_response("hello"))
    model = GeminiTurnModel("gemini-env-model")
    assert model.name == "gemini-env-model"
    try:
        with anyio.fail_after(5):
            reply = await model.generate(request(user("hi")))
    finally:
        await model.aclose()
    assert reply.text == "hello"
    sent = srv.requests[0]
    assert sent.version == "v1alpha"  # GOOGLE_GENAI_API_VERSION honoured
    assert sent.api_key == SECRET_KEY
    assert sent.path == "/v1alpha/models/gemini-env-model:generateContent"


@pytest.mark.anyio
async def test_explicit_api_version_overrides_a_given_client(srv: FakeGenerateServer) -> None:
    srv.queue(text_response("ok"))
    await model_for(srv, api_version="v1").generate(request(user("hi")))
    assert srv.requests[0].version == "v1"


# --------------------------------------------------------------------------------------------
# The threaded fake (for the CLI in a subprocess)


def test_threaded_fake_serves_another_loop(certs: TestCerts) -> None:
    with FakeGenerateServer.run_in_thread(certs=certs) as fake:
        fake.queue(function_call_response([("fc-9", "count_people", {"min_score": 1})]))
        fake.set_responder(lambda req: text_response(f"seen {len(req.function_responses())}"))
        env = fake.subprocess_env({"HTTPS_PROXY": "http://proxy.invalid:1", "PATH": "/bin"})
        assert "HTTPS_PROXY" not in env and env["GOOGLE_GEMINI_BASE_URL"] == fake.base_url
        assert env["SSL_CERT_FILE"] == str(certs.ca_path)

        async def talk() -> list[str]:
            model = GeminiTurnModel(client=fake.endpoint.client(api_key=SECRET_KEY))
            first = await model.generate(request(user("count")))
            answer = types.Part(
                function_response=types.FunctionResponse(
                    id=first.calls[0].id, name=first.calls[0].name, response={"people": 1}
                )
            )
            assert first.content is not None
            history = (user("count"), first.content, types.Content(role="user", parts=[answer]))
            second = await model.generate(request(*history))
            return [first.calls[0].id, second.text]

        assert anyio.run(talk) == ["fc-9", "seen 1"]
        last = fake.wait_requests(2)
        assert [(r.id, r.name) for r in last.function_responses()] == [("fc-9", "count_people")]
        assert len(fake.requests) == 2 and fake.rejected_paths == []


# --------------------------------------------------------------------------------------------
# A reply with no answer in it: an error, never an empty success (lookout ask would exit 0
# with nothing to say)

NO_ANSWER_REPLIES: dict[str, Any] = {
    "candidates a string": {"candidates": "x"},
    "candidates a list of numbers": {"candidates": [1]},
    "an empty candidate": {"candidates": [{}]},
    "content a string": {"candidates": [{"content": "x"}]},
    "parts a string": {"candidates": [{"content": {"parts": "x"}}]},
    "an empty part": {"candidates": [{"content": {"parts": [{}]}, "finishReason": "STOP"}]},
    "only a thought": {"candidates": [{"content": {"parts": [{"text": "hm", "thought": True}]}}]},
    "an empty text": {"candidates": [{"content": {"parts": [{"text": ""}]}}]},
    "a list": [1],
    "a string": '"str"',
    "null": "null",
    "not JSON": "{not json",
    "invalid UTF-8": b"\xff\xfe{",
    "nested arrays": "[" * 100_000 + "]" * 100_000,
    "block reason a number": {"promptFeedback": {"blockReason": 5}},
}


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(NO_ANSWER_REPLIES))
async def test_a_reply_without_an_answer_is_an_error(srv: FakeGenerateServer, name: str) -> None:
    srv.queue(FakeHttpError(200, body=NO_ANSWER_REPLIES[name]))
    with pytest.raises(TurnModelError) as info:
        await model_for(srv).generate(request(user("how many?")))
    message = str(info.value)
    assert message and "\n" not in message and len(message) <= 200
