"""What a failure of the Live connection means: retry (``ConnectionLost``) or not
(``ModelSetupError``), and how it is said (one line, no secret in it).

Whatever the SDK or the socket raised, the session gets one of the two, never the
exception itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.genai import errors
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from live.model import ConnectionLost, ModelSetupError
from models.gemini.client import one_line
from models.gemini.unreadable import reached_server

# Close codes with which the service refuses a setup it will refuse again (1007: invalid
# payload such as a bad key or an unsupported modality, 1008: policy, e.g. unknown model).
REFUSAL_CLOSE_CODES = frozenset({1007, 1008})
# HTTP answers to the WebSocket upgrade that a retry cannot change.
REFUSAL_HTTP_STATUS = frozenset({400, 401, 403, 404})
AUTH_STATUS = frozenset({401, 403})


def close_code(exc: ConnectionClosed) -> int:
    frame = exc.rcvd or exc.sent
    return frame.code if frame is not None else 1006


def describe(exc: BaseException, secrets: Sequence[str]) -> str:
    """``<Type>: <reason>`` on one line, secrets removed before it is cut short."""
    if isinstance(exc, errors.APIError):
        details = exc.message or exc.details
        text = str(details) if details not in (None, "") else (exc.status or "")
    elif isinstance(exc, ConnectionClosed):
        frame = exc.rcvd or exc.sent
        text = frame.reason if frame is not None and frame.reason else str(exc)
    else:
        text = str(exc)
    text = one_line(text, secrets)
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def refuses_credentials(exc: BaseException) -> bool:
    """The service refused who we are (a key or token): 401/403 on the upgrade, or a close
    with 1008 (policy) or an auth status during setup."""
    if isinstance(exc, errors.APIError):
        return exc.code == 1008 or exc.code in AUTH_STATUS
    if isinstance(exc, InvalidStatus):
        return exc.response.status_code in AUTH_STATUS
    return False


def connect_error(exc: Exception, secrets: Sequence[str]) -> ConnectionLost | ModelSetupError:
    """``ModelSetupError`` when a retry would be refused the same way, else ConnectionLost.

    Total: whatever the SDK raised, the session gets one of the two, never the exception.
    """
    detail = describe(exc, secrets)
    if isinstance(exc, errors.APIError):
        if exc.code in REFUSAL_CLOSE_CODES or exc.code in AUTH_STATUS:
            return ModelSetupError(f"setup refused (code {exc.code}): {detail}")
        return ConnectionLost(
            f"connection closed during setup (code {exc.code}): {detail}", code=exc.code
        )
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        message = f"WebSocket upgrade refused with HTTP {status}"
        if status in REFUSAL_HTTP_STATUS:
            return ModelSetupError(message)
        return ConnectionLost(message)
    if isinstance(exc, InvalidURI):
        return ModelSetupError(f"bad Live endpoint: {detail}")
    if isinstance(exc, InvalidHandshake | ConnectionClosed | OSError):
        # OSError covers refused connections, DNS and TLS failures (ssl.SSLError).
        return ConnectionLost(f"could not connect: {detail}")
    if reached_server(exc):
        # The server's answer to the setup could not be read (not JSON, not an object,
        # the wrong shape, nested too deep), or something nobody foresaw: try again.
        return ConnectionLost(f"the answer to the setup could not be read: {detail}")
    if isinstance(exc, TypeError | ValueError):
        # The SDK refused our own setup before sending it: it will refuse it again.
        return ModelSetupError(f"bad setup: {detail}")
    return ConnectionLost(f"connecting failed: {detail}")


__all__ = [
    "AUTH_STATUS",
    "REFUSAL_CLOSE_CODES",
    "REFUSAL_HTTP_STATUS",
    "close_code",
    "connect_error",
    "describe",
    "refuses_credentials",
]
