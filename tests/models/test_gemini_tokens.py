"""Ephemeral token sources (models/gemini/tokens.py) and the settings that name them: what
counts as a token, and the one-line refusals of a setting that cannot work."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from live.model import ConnectionLost
from models.gemini.tokens import (
    TokenFile,
    TokenRefused,
    TokenUnavailable,
    token_from_text,
    with_fresh_token,
)
from tests.cli import lookout, lookout_in_process
from tests.datafiles import REPO_ROOT, data_file

TOKEN = "auth_tokens/abc123"
README = REPO_ROOT / "README.md"


def test_a_token_is_the_first_line_or_a_json_auth_tokens_name() -> None:
    assert token_from_text(f"\ufeff{TOKEN}\nrest\n", "f") == TOKEN
    assert token_from_text(f'{{"name": "{TOKEN}", "expireTime": "x"}}', "f") == TOKEN
    for text, said in (
        ("", "no token in it"),
        ("{not json", "not JSON with a token name"),
        ("AIzaSyA-not-a-token-0123456789abcdef", "not an ephemeral token"),
    ):
        with pytest.raises(TokenUnavailable, match=said) as caught:
            token_from_text(text, "--token-file t")
        assert "AIza" not in str(caught.value)  # what was read is never said


def test_a_json_token_says_its_times_and_uses_where_given() -> None:
    import datetime as dt

    from models.gemini.tokens import details_from_text

    text = (f'{{"name": "{TOKEN}", "expireTime": "2026-12-02T10:40:00Z", '
            '"newSessionExpireTime": "2026-12-02T10:11:00+00:00", "uses": 3}')  # fmt: skip
    token = details_from_text(text, "f")
    assert token.name == TOKEN and token.uses == 3
    assert token.expires == dt.datetime(2026, 12, 2, 10, 40, tzinfo=dt.UTC)
    assert token.new_sessions_until == dt.datetime(2026, 12, 2, 10, 11, tzinfo=dt.UTC)
    # Unreadable times or uses are unknown, not a refusal: the service decides.
    odd = details_from_text(f'{{"name": "{TOKEN}", "expireTime": "soon", "uses": true}}', "f")
    assert (odd.expires, odd.new_sessions_until, odd.uses) == (None, None, None)
    assert details_from_text(TOKEN, "f").expires is None


def test_a_refused_token_is_fetched_again_once_and_the_same_one_is_a_retryable_loss(
    tmp_path: Path,
) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    tried: list[str] = []

    async def refuse(token: str) -> str:
        tried.append(token)
        raise TokenRefused("the ephemeral token was refused")

    with pytest.raises(ConnectionLost) as caught:
        anyio.run(with_fresh_token, TokenFile(path), refuse)
    assert tried == [TOKEN] and caught.value.retryable
    assert "has no new token yet" in caught.value.reason and TOKEN not in caught.value.reason

    async def renew_then_accept(token: str) -> str:
        tried.append(token)
        if token == TOKEN:
            path.write_text("auth_tokens/renewed")
            raise TokenRefused("expired")
        return token

    tried.clear()
    assert anyio.run(with_fresh_token, TokenFile(path), renew_then_accept) == "auth_tokens/renewed"
    assert tried == [TOKEN, "auth_tokens/renewed"]


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (("--token-file", "/nonexistent/token"), {}, "--token-file /nonexistent/token: no such"),
        (("--token-file", str(README), "--token-url", "https://x/t"), {}, "not both"),
        (("--token-url", "ftp://x/t"), {}, "--token-url 'ftp://x/t': must start with http:// or https://"),
        (
            ("--token-url", "https://x/t"),
            {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p",
             "GOOGLE_CLOUD_LOCATION": "us-central1"},
            "ephemeral tokens (--token-file, --token-url) are for the Gemini API",
        ),
    ],
)  # fmt: skip
def test_token_settings_that_cannot_work_are_refused_in_one_line(
    args: tuple[str, ...], env: dict[str, str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = lookout_in_process("run", "--no-http", "--model", "gemini-3.8-live", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert said in line


def test_a_model_on_tokens_takes_no_key_and_keeps_v1alpha(tmp_path: Path) -> None:
    from live.model import LiveSetup
    from models.gemini.model import GeminiLiveModel, GeminiOptions

    source = TokenFile(tmp_path / "token")
    with pytest.raises(ValueError, match="replace the API key"):
        GeminiLiveModel(GeminiOptions(), api_key="a-key", tokens=source)
    model = GeminiLiveModel(GeminiOptions(api_version="v1beta"), tokens=source)
    # No per-connection version over the token client's v1alpha.
    assert model.connect_config(LiveSetup()).http_options is None


def test_ask_on_tokens_alone_says_they_cannot_ask_gemini(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ephemeral tokens open Live sessions only: ask (requests) cannot use them. Naming a
    Gemini model is refused in one line; without a name the local model answers, and says
    why it is the local one."""
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    token = tmp_path / "token"
    token.write_text(TOKEN)
    monkeypatch.setenv("LOOKOUT_TOKEN_FILE", str(token))
    source = str(data_file("messi5.jpg"))
    named = lookout_in_process("ask", "how many people?", "--model", "gemini-2.5-flash",
                               "--source", source)  # fmt: skip
    assert named.returncode == 2
    (line,) = named.stderr.strip().splitlines()
    assert "ephemeral tokens (--token-file, --token-url) open Live sessions only" in line
    assert "--model local" in line
    # A whole ask (perceived, answered): in its own process, the tokens from a config file.
    config = tmp_path / "lookout.toml"
    config.write_text(f'[model]\ntoken-file = "{token}"\n')
    unnamed = lookout("ask", "how many people?", "--source", source, "--config", str(config))
    assert unnamed.returncode == 0, unnamed.stdout + unnamed.stderr
    said = unnamed.stdout + unnamed.stderr
    assert "the local model answers: ephemeral tokens open Live sessions only" in said
    assert "people" in unnamed.stdout and TOKEN not in said


def test_a_token_that_cannot_be_fetched_is_said_with_where_it_was_looked_for(
    tmp_path: Path,
) -> None:
    """The console and the logs redact what they say: the reason must still name the file
    or URL (the redaction hides the value after "token:", so it is not worded so)."""
    from live.util.redact import redact

    async def never(token: str) -> str:
        raise AssertionError("nothing to open with")

    with pytest.raises(ConnectionLost) as caught:
        anyio.run(with_fresh_token, TokenFile(tmp_path / "missing"), never)
    said = redact(caught.value.reason, ())
    assert f"no ephemeral token from --token-file {tmp_path / 'missing'}" in said
    assert "***" not in said


def test_a_token_url_ending_in_token_keeps_its_failures_reason_readable() -> None:
    """``…/lookout/token: [Errno 111] Connection refused``: the path's last word is no
    label of a secret (it was said ``…/lookout/token: *** 111] Connection refused``)."""
    import socket

    from live.util.redact import redact
    from models.gemini.tokens import TokenUrl

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/lookout/token"

    async def never(token: str) -> str:
        raise AssertionError("nothing to open with")

    with pytest.raises(ConnectionLost) as caught:
        anyio.run(with_fresh_token, TokenUrl(url, timeout_s=2.0), never)
    said = redact(caught.value.reason, ())
    assert f"--token-url {url}: " in said and "Connection refused" in said, said
    assert "***" not in said, said
