"""Every URL, host name, id and name a device takes is checked at start with the rule of
what uses it (paho and getaddrinfo, http.client, FFmpeg's URLs, the MQTT protocol, a
terminal), whichever way it was given: one line naming the flag, the variable or the
file's key, exit 2, before anything runs. What the URL parser took and the client
refused was a 95-line ExceptionGroup 0.2 s into the run; a device id with ESC or U+202E
was shown as it was."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from device.config import build
from tests.cli import lookout, lookout_in_process

LONG_LABEL = "a" * 64
# (flags, what the line must say): --mqtt, and what paho and the broker refuse.
MQTT = [
    ("mqtt://broker..lan:1883", "the host name 'broker..lan' has an empty label"),
    ("mqtt://.broker:1883", "has an empty label"),
    (f"mqtt://{LONG_LABEL}.lan", "has a label of 64 characters (at most 63)"),
    (f"mqtt://{'a.' * 127}lan", "characters long (a host name has at most 253)"),
    ("mqtt://broker:0", "port '0' is not a number from 1 to 65535"),
    ("mqtt://broker:65536", "port '65536' is not a number from 1 to 65535"),
    ("mqtt://broker:x", "port 'x' is not a number"),
    ("mqtt://bro ker", "has ' ' (SPACE), which no host name holds"),
    ("mqtt://bro%6bker", "has '%' (PERCENT SIGN)"),
    ("mqtt://256.1.1.1", "is not an IPv4 address"),
    ("mqtt://1.2.3", "is not an IPv4 address"),
    ("mqtt://[zz]:1883", "a host in brackets that is not an IPv6 address"),
    ("mqtt://broker\n.lan", "has \\n (a line break)"),
    ("mqtt://broker\u202e.lan", "has \\u202e (RIGHT-TO-LEFT OVERRIDE)"),
    ("mqtt://:1883", "names no host"),
    ("http://broker", "must be mqtt://host[:port] or mqtts://host[:port]"),
    ("mqtt://broker/topic", "takes no path or query"),
    (f"mqtt://{'u' * 65_536}@broker", "the user name is 65,536 bytes in UTF-8"),
    (f"mqtt://u:{'p' * 65_536}@broker", "the password is 65,536 bytes in UTF-8"),
    ("mqtt://u:%ff@broker", "the password, percent-decoded, is not UTF-8 text"),
    ("mqtt://u%c3:p@broker", "the user name, percent-decoded, is not UTF-8 text"),
    ("mqtt://u:p\udcff@broker", "has the byte 0xff (not UTF-8)"),
    ("mqtt://u%00x:p@broker", "the user name has \\x00 (NUL), which MQTT brokers refuse"),
    ("mqtt://u%1bx:p@broker", "the user name has \\x1b (ESC), which MQTT brokers refuse"),
    ("mqtt://u%ef%bf%bf:p@broker", "which MQTT brokers refuse"),
]
# (flag, value, what the line must say) for the other settings.
OTHERS = [
    ("--device-id", "door\nx", "'door\\nx' has \\n (a line break) at character 5"),
    ("--device-id", "a\x1b[2Jb", "has \\x1b (ESC) at character 2"),
    ("--device-id", "door\u202eevil", "has \\u202e (RIGHT-TO-LEFT OVERRIDE) at character 5"),
    ("--device-id", "x\u2066y", "has \\u2066 (LEFT-TO-RIGHT ISOLATE)"),
    ("--device-id", "abc\udcff", "has the byte 0xff (not UTF-8) at character 4"),
    ("--device-id", "d" * 261, "is 261 characters long (at most 260)"),
    ("--device-id", "   ", "must not be empty"),
    ("--model", "gemini 3", "'gemini 3' has a space in it"),
    ("--model", "gemini\x1b", "has \\x1b (ESC)"),
    ("--system-instruction", "be brief\udcff", "is not UTF-8 text"),
    ("--http-token", "tok\x7fen", "has \\x7f (DEL)"),
    ("--http-token", "tok\udcffen", "has the byte 0xff (not UTF-8)"),
    ("--http", "broker..lan:8080", "the host 'broker..lan' has an empty label"),
    ("--http", "\udcff:8080", "has the byte 0xff (not UTF-8)"),
    ("--http", "[zz]:8080", "is in brackets but not an IPv6 address"),
    ("--http", "127.0.0.1:\u00b2", "port must be 0..65535"),
    ("--http-hosts", "http://proxy.lan", "takes host names, not URLs"),
    ("--http-hosts", "proxy.lan,proxy..lan", "'proxy..lan' has an empty label"),
    ("--http-hosts", "proxy.lan:0", "port '0' is not a number from 1 to 65535"),
    ("--http-hosts", "[zz]", "is in brackets but not an IPv6 address"),
    ("--token-url", "https://tok..en/token", "the host name 'tok..en' has an empty label"),
    ("--token-url", "https://issuer.lan:0/token", "port '0' is not a number"),
    ("--token-url", "https://u:pw@issuer.lan/token", "has a user name in it"),
    ("--token-url", "https://issuer.lan/to ken", "has ' ' (SPACE): percent-encode it"),
    ("--token-url", "https://issuer.lan/t\u00f6ken", "LATIN SMALL LETTER O WITH DIAERESIS"),
    ("--token-url", "ftp://issuer.lan/token", "must start with http:// or https://"),
    ("--source", "rtsp://cam..lan/live", "the host name 'cam..lan' has an empty label"),
    ("--source", "rtsp://cam:0/live", "port '0' is not a number from 1 to 65535"),
    ("--source", "rtsp://cam:99999/live", "port '99999' is not a number from 1 to 65535"),
    ("--source", "http://[zz]/video.mjpg", "a host in brackets that is not an IPv6 address"),
    ("--source", "rtsp://ca\tm/live", "has \\t (a tab)"),
    ("--source", "rtsp:///live", "names no host"),
]
RUN = ("run", "--no-http", "--duration", "0.5", "--pace", "fast")


def one_line(result: subprocess.CompletedProcess[str], where: str, said: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"lookout: {where} "), result.stderr
    assert said in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "empty.toml"
    config.write_text("")  # never the machine's /etc/lookout/lookout.toml
    return config


@pytest.mark.parametrize(("url", "said"), MQTT)
def test_a_broker_url_the_client_would_refuse_is_one_line_naming_the_flag(
    clean_env: Path, url: str, said: str
) -> None:
    line = one_line(
        lookout_in_process(*RUN, "--config", str(clean_env), "--mqtt", url), "--mqtt", said
    )
    assert "p" * 100 not in line and "%ff" not in line  # a password is never quoted


@pytest.mark.parametrize(("flag", "value", "said"), OTHERS)
def test_a_value_its_library_would_refuse_or_mis_show_is_one_line_naming_the_flag(
    clean_env: Path, flag: str, value: str, said: str
) -> None:
    args = [a for a in RUN if a != "--no-http" or flag != "--http"]
    one_line(lookout_in_process(*args, "--config", str(clean_env), flag, value), flag, said)


def test_the_line_names_the_variable_or_the_files_key_as_given(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOOKOUT_MQTT", "mqtt://broker..lan:1883")
    one_line(lookout_in_process(*RUN, "--config", str(clean_env)), "LOOKOUT_MQTT", "empty label")
    monkeypatch.delenv("LOOKOUT_MQTT")
    monkeypatch.setenv("LOOKOUT_DEVICE_ID", "x\u202ey")
    one_line(lookout_in_process(*RUN, "--config", str(clean_env)), "LOOKOUT_DEVICE_ID", "U")
    monkeypatch.delenv("LOOKOUT_DEVICE_ID")
    sectioned = tmp_path / "sectioned.toml"
    sectioned.write_text('[outputs]\nmqtt = "mqtt://broker:0"\n')
    one_line(lookout_in_process(*RUN, "--config", str(sectioned)),
             f"{sectioned}: outputs.mqtt", "port '0'")  # fmt: skip
    # With MQTT, the id names topics: Home Assistant's rule for its ids, named as given.
    flat = tmp_path / "flat.toml"
    flat.write_text('mqtt = "mqtt://127.0.0.1:1"\ndevice_id = "front door"\n')
    line = one_line(lookout_in_process(*RUN, "--config", str(flat)), f"{flat}: device_id",
                    "cannot name MQTT topics")  # fmt: skip
    assert f"({flat}: mqtt is set)" in line
    args = (*RUN, "--config", str(clean_env), "--mqtt", "mqtt://b", "--device-id", "a+b")
    said = "'a+b' cannot name MQTT topics (--mqtt is set): use letters, digits, - and _"
    one_line(lookout_in_process(*args), "--device-id", said)


VERTEX = {
    "GOOGLE_GENAI_USE_VERTEXAI": "true",
    "GOOGLE_CLOUD_PROJECT": "my-project",
    "GOOGLE_CLOUD_LOCATION": "us-central1",
}


@pytest.mark.parametrize(
    ("env", "where", "said"),
    [
        ({"GEMINI_API_KEY": "AIza key"}, "GEMINI_API_KEY", "has a space at character 5"),
        ({"GOOGLE_API_KEY": "AIza\u00e9"}, "GOOGLE_API_KEY", "a character that is not ASCII"),
        ({"GEMINI_API_KEY": "AIza\x01x"}, "GEMINI_API_KEY", "a line break or a control"),
        ({**VERTEX, "GOOGLE_CLOUD_LOCATION": "us central1"}, "GOOGLE_CLOUD_LOCATION", "SPACE"),
        ({**VERTEX, "GOOGLE_CLOUD_LOCATION": "us-central1/x"}, "GOOGLE_CLOUD_LOCATION", "'/'"),
        ({**VERTEX, "GOOGLE_CLOUD_PROJECT": "my/project"}, "GOOGLE_CLOUD_PROJECT", "'/'"),
        ({**VERTEX, "GOOGLE_VERTEX_BASE_URL": "https://gw..lan/"}, "GOOGLE_VERTEX_BASE_URL",
         "empty label"),
        ({"GEMINI_API_KEY": "AIzaX", "GOOGLE_GEMINI_BASE_URL": "https://live:0"},
         "GOOGLE_GEMINI_BASE_URL", "port '0'"),
        ({"GEMINI_API_KEY": "AIzaX", "GOOGLE_GENAI_API_VERSION": "v1 beta"},
         "GOOGLE_GENAI_API_VERSION", "' ' (SPACE): it is one segment of each request's path"),
    ],
)  # fmt: skip
def test_the_gemini_and_vertex_variables_are_checked_as_the_sdk_uses_them(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], where: str, said: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = (*RUN, "--config", str(clean_env), "--model", "gemini-3.8-live")
    line = one_line(lookout_in_process(*args), where, said)
    assert "AIza" not in line  # the key is never quoted


def test_an_unused_api_key_is_not_checked(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "pasted with a space")
    config = build({"model": "local"}, environ={"GEMINI_API_KEY": "a b"}, system_config=clean_env)
    assert config.model_name() == "local"


@pytest.mark.parametrize(
    "flags",
    [
        {"mqtt": "mqtt://broker_1:1883"},  # Docker's service names have underscores
        {"mqtt": "mqtts://k\u00fcche.local"},  # an IDN: the codec makes it xn--kche-0ra
        {"mqtt": "mqtt://[::1]:1883"},
        {"mqtt": "mqtt://broker.lan.:1883"},  # a fully qualified name's final dot
        # A password is binary data to MQTT (a NUL is fine), UTF-8 text to paho.
        {"mqtt": "mqtt://cam%40site:p%3Ass%00%e2%82%ac@10.1.2.3:1884"},
        {"mqtt": f"mqtt://{'u' * 65_535}:{'p' * 65_535}@broker"},
        {"device_id": "K\u00fcche 1"},  # without MQTT, any text a terminal shows as it is
        {"device_id": "d" * 260},
        {"http": "[::1]:0"},
        {"http": "8765"},
        {"http_hosts": "proxy.lan, lookout.example.com:443, [::1]:8080, 10.0.0.2"},
        {"token_url": "https://issuer.lan:8443/lookout/token?device=a%20b"},
        {"source": "rtsp://admin:p%40ss@cam.lan:554/Streaming/Channels/101"},
        {"source": "udp://@:1234"},  # FFmpeg listens: no host to check
        {"source": "0"},
        {"model": "models/gemini-2.5-flash-native-audio-preview-09-2025"},
        {"system_instruction": "Count people.\nBe brief."},
    ],
)
def test_values_their_libraries_take_are_taken(clean_env: Path, flags: dict[str, str]) -> None:
    environ = {"GEMINI_API_KEY": "AIza0123456789-_abc"}  # a Gemini model needs one
    config = build(flags, environ=environ, system_config=clean_env)
    assert config.flat()[next(iter(flags))] == next(iter(flags.values()))


def test_doctor_refuses_a_token_url_that_cannot_work_in_one_line() -> None:
    result = lookout_in_process("doctor", "--token-url", "https://issuer.lan:0/token")
    one_line(result, "--token-url", "port '0'")


@pytest.mark.slow
def test_a_bad_broker_url_ends_a_real_run_at_once_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty.toml").write_text("")
    started = time.monotonic()
    result = lookout("run", "--config", str(tmp_path / "empty.toml"), "--no-http",
                     "--mqtt", "mqtt://broker..lan:1883", timeout=60)  # fmt: skip
    line = one_line(result, "--mqtt", "the host name 'broker..lan' has an empty label")
    assert result.stdout == "", result.stdout  # nothing ran: no model, no source
    assert time.monotonic() - started < 30, line
