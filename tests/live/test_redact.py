"""What a source or URL looks like wherever it is shown, and text made safe to show."""

from __future__ import annotations

import logging
import sys
import time

import pytest

from live.util.printable import printable, printable_lines
from live.util.redact import SafeFormatter, redact, safe_url, strip_credentials, url_secrets


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # Query values dropped, names kept: cameras call a password anything.
        (
            "http://127.0.0.1:8080/videostream.cgi?user=admin&pwd=hunter2",
            "http://127.0.0.1:8080/videostream.cgi?user=***&pwd=***",
        ),
        ("http://cam/snapshot.cgi?usr=a&passwd=b&sig=c&auth=d", "http://cam/snapshot.cgi?usr=***&passwd=***&sig=***&auth=***"),
        # No user info at all, whatever the password holds.
        ("rtsp://admin:S3cr@tPa55@cam.local:554/Streaming/Channels/101",
         "rtsp://cam.local:554/Streaming/Channels/101"),
        ("mqtt://bob:br0k3r@pw@broker:1883", "mqtt://broker:1883"),
        ("rtsp://admin@cam/live", "rtsp://cam/live"),
        ("rtsp://admin:pa ss@cam/x", "rtsp://cam/x"),
        # A password with / ? or # in it (typed unencoded): the host is after the last @.
        ("rtsp://admin:pa/ss@cam/x", "rtsp://***@cam/x"),
        ("rtsp://admin:12#34@cam:554/x", "rtsp://***@cam:554/x"),
        ("rtsp://admin:12?34@cam/x?channel=2", "rtsp://***@cam/x?channel=2"),
        # Harmless names keep their short values: which stream it is.
        ("rtsp://cam/cam/realmonitor?channel=1&subtype=0", "rtsp://cam/cam/realmonitor?channel=1&subtype=0"),
        ("http://cam/video.mjpg?action=stream", "http://cam/video.mjpg?action=stream"),
        ("http://cam/x?channel=a-very-long-value-it-is", "http://cam/x?channel=***"),
        # A bare query part may be a token; an empty value is no secret.
        ("http://cam/snap.cgi?s3cr3tbare", "http://cam/snap.cgi?***"),
        ("http://cam/x?a=&b=1", "http://cam/x?a=&b=***"),
        # Values in the path (Xiongmai cameras, session ids).
        ("rtsp://cam:554/user=admin_password=tlJwpbo6_channel=1_stream=0.sdp", "rtsp://cam:554/user=***"),
        ("http://cam/live;jsessionid=ABCDEF123", "http://cam/live;jsessionid=***"),
        ("http://[::1]:8080/x?auth=tok#frag", "http://[::1]:8080/x?auth=***"),
        # No host can be told: nothing of the address is shown.
        ("http://cam/v.cgi?user=me@mail.com&pwd=hunter2", "http://***"),
        # A host no client could read is still no secret: as typed, without the user info.
        ("http://u:p@cam:abc/x", "http://cam:abc/x"),
        ("mqtt://host[:port]", "mqtt://host[:port]"),
        # Not URLs: files and cameras as they are, a mistyped URL without its user info.
        ("/videos/me@home.avi", "/videos/me@home.avi"),
        ("camera 0", "camera 0"),
        ("rtsp:/admin:pw@cam/x", "rtsp:/***@cam/x"),
        ("rtsp//admin:p/w@cam/x", "rtsp//***@cam/x"),
        ("bob:pass word@broker", "bob:***@broker"),
        # One line, whatever was typed.
        ("rtsp://cam/a\x1b[2J\nb", "rtsp://cam/a\\x1b[2J\\nb"),
    ],
)  # fmt: skip
def test_a_url_is_shown_as_scheme_host_port_path_and_query_names(url: str, shown: str) -> None:
    assert safe_url(url) == shown
    assert safe_url(shown) == shown  # shown again (a source's name in an event): the same


SPECIALS = "@/?#:;&=%'\" !$()*+,[]\\^`{|}~"


@pytest.mark.parametrize("char", list(SPECIALS))
def test_no_part_of_a_password_is_shown_whatever_character_it_holds(char: str) -> None:
    password = f"Qz{char}Xw{char}Yv"
    urls = [
        f"rtsp://admin:{password}@cam.local:554/live",
        f"rtsp://{password}@cam.local/live",
        f"http://cam.local/video.cgi?user=admin&pwd={password}&channel=1",
        f"mqtt://bob:{password}@broker:1883",
    ]
    for url in urls:
        for shown in (safe_url(url), redact(f"cannot open {safe_url(url)}")):
            assert not any(piece in shown for piece in ("Qz", "Xw", "Yv")), (url, shown)
    if char not in " '\"":  # a message's URL ends at a space or a quote
        for url in urls:
            shown = strip_credentials(f"error: cannot open {url} (timed out).")
            assert not any(piece in shown for piece in ("Qz", "Xw", "Yv")), (url, shown)
            assert shown.startswith("error: cannot open ") and "(timed out)." in shown


def test_urls_in_messages_are_shown_as_safe_url_shows_them() -> None:
    text = (
        "[tcp @ 0x5] Connection to tcp://127.0.0.1:1?timeout=0 failed; see http://u:pw99@h/a?k=v."
    )
    assert strip_credentials(text) == (
        "[tcp @ 0x5] Connection to tcp://127.0.0.1:1?timeout=0 failed; see http://h/a?k=***."
    )
    assert strip_credentials("/videos/me@home.avi: no frame") == "/videos/me@home.avi: no frame"
    # Without a scheme, user:password@ is still what it looks like.
    assert strip_credentials("mqtt: not 'u:S3cr@tPa55@host'") == "mqtt: not '***@host'"
    assert (
        strip_credentials("at 12:30:01 bob@example.org left") == "at 12:30:01 bob@example.org left"
    )
    assert strip_credentials("expected mqtt://host[:port], not 'x'") == (
        "expected mqtt://host[:port], not 'x'"
    )


def test_the_secret_parts_of_a_url_are_known_for_redaction_elsewhere() -> None:
    secrets = url_secrets("rtsp://admin:S3cr%40t@cam/x?user=admin&pwd=hunter2&channel=1")
    assert set(secrets) == {"S3cr%40t", "S3cr@t", "hunter2"}  # user names stay readable
    assert redact("the camera said S3cr@t", secrets) == "the camera said ***"
    assert url_secrets("/videos/a.mp4") == () and url_secrets(None) == ()
    # Words and numbers the device's own data holds are never replaced in it.
    assert url_secrets("rtsp://admin:1234@cam/x?type=stream&mode=running") == ()


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        # A URL whose path ends in a label's word, then ": why": the reason stays readable.
        ("no ephemeral token from --token-url http://127.0.0.1:9/lookout/token: [Errno 111] "
         "Connection refused",
         "no ephemeral token from --token-url http://127.0.0.1:9/lookout/token: [Errno 111] "
         "Connection refused"),
        ("GET https://issuer.lan/v1/token: HTTP 503", "GET https://issuer.lan/v1/token: HTTP 503"),
        ("http://10.0.0.2/api/key: timed out", "http://10.0.0.2/api/key: timed out"),
        ("lookout/token: no such file", "lookout/token: no such file"),
        # Secrets stay hidden: labelled, in a query, in a path, in headers.
        ("the http token: s3cret-tok now", "the http token: *** now"),
        ("token:abc123 password = hunter22", "token:*** password = ***"),
        ("fetching https://h/x?key=AIzaSyD0123456789abcdefghijkl&channel=1",
         "fetching https://h/x?key=***&channel=1"),
        ("api_key=abc123, secret: xyz", "api_key=***, secret: ***"),
        ("key AIzaSyD0123456789abcdefghijkl leaked", "key *** leaked"),
        ("Authorization: Bearer abc.def-123", "Authorization: Bearer ***"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
        ("proxy-authorization=dXNlcjpwYXNz", "proxy-authorization=***"),
        ("cam/token=abc123 failed", "cam/token=*** failed"),
        ("https://h/token:abc123 failed", "https://h/token:*** failed"),
        ("rtsp://cam/stream/token=abc123", "rtsp://cam/stream/token=***"),
    ],
)  # fmt: skip
def test_a_url_path_ending_in_a_label_is_no_label_but_secrets_stay_hidden(
    said: str, shown: str
) -> None:
    assert redact(said) == shown


def test_the_status_servers_token_is_hidden_wherever_it_turns_up() -> None:
    token = "Zq8-long-random-token"
    said = f"GET http://device:8765/api/state?token={token}: 401, then Bearer {token}"
    assert token not in redact(said, (token,))


def test_control_characters_are_shown_escaped() -> None:
    hostile = "ok\x1b[2J\r\n[   99.9s] count: 0 (was 7)\u202eevil\x9b\x07\x7f\ud800\u2028\t"
    shown = printable(hostile)
    assert shown == (
        "ok\\x1b[2J\\r\\n[   99.9s] count: 0 (was 7)\\u202eevil\\x9b\\x07\\x7f\\ud800\\u2028\\t"
    )
    assert shown.isprintable()
    shown.encode("utf-8")  # a lone surrogate would make print() raise
    # Letters, accents and emoji (joined by U+200D) are text, not controls.
    assert printable("Zoë 👨\u200d👩\u200d👧 ok") == "Zoë 👨\u200d👩\u200d👧 ok"


def test_a_block_keeps_its_line_breaks_and_escapes_the_rest() -> None:
    shown = printable_lines("one\r\ntwo\nthree\rx\x1b[2J\u202e")
    assert shown == "one\ntwo\nthree\\rx\\x1b[2J\\u202e"


def test_a_log_record_is_one_line_without_a_urls_secrets() -> None:
    formatter = SafeFormatter("%(levelname)s %(name)s: %(message)s")
    try:
        raise OSError("cannot open rtsp://admin:S3cr@t@cam/live?pwd=hunter2 \x1b[2J")
    except OSError:
        exc_info = sys.exc_info()
    record = logging.LogRecord(
        "lookout.x", logging.ERROR, __file__, 1, "connect to %s failed\n%s",
        ("http://cam/x?sig=hunter2", "[   99.9s] count: 0"), exc_info,
    )  # fmt: skip
    text = formatter.format(record)
    first, *traceback = text.split("\n")
    assert first == (
        "ERROR lookout.x: connect to http://cam/x?sig=*** failed\\n[   99.9s] count: 0"
    )
    assert traceback[-1] == "OSError: cannot open rtsp://cam/live?pwd=*** \\x1b[2J"
    assert "hunter2" not in text and "S3cr" not in text and "\x1b" not in text


def test_scrubbing_a_large_state_takes_linear_time() -> None:
    # The status server scrubs every /api/state and SSE push on the event loop; the state
    # holds long runs without a space or a quote (the count history, the tracks). A
    # pattern that backtracks over such a run took 0.5 s for 18 KB; 200 KB would take
    # a minute. Linear, it is some tens of milliseconds: a bound far from both.
    history = ",".join(f"[{i * 0.5},{i % 7}]" for i in range(12_000))
    text = f'{{"history":[{history}],"text":"{",a:" * 20_000}"}}'
    assert len(text) > 180_000
    started = time.perf_counter()
    redact(text, ("abcd1234",))
    assert time.perf_counter() - started < 3.0


def test_a_file_path_that_ends_in_a_labels_word_keeps_its_reason() -> None:
    # The README's token file: its name ends in "token", and what follows is why it
    # cannot be read, not a secret.
    said = "no ephemeral token from --token-file /run/lookout/gemini-token: a named pipe"
    assert redact(said) == said
    assert redact("--config /etc/lookout/api-key: no such file") == (
        "--config /etc/lookout/api-key: no such file"
    )
    # A label that is no path's end still hides what follows it.
    assert redact("GEMINI_API_KEY: AbCdEf123") == "GEMINI_API_KEY: ***"
    assert redact("in /etc/x token: s3cret") == "in /etc/x token: ***"
    assert redact("/run/lookout/token:s3cret") == "/run/lookout/token:***"
    assert redact("/run/lookout/secret=s3cret") == "/run/lookout/secret=***"
