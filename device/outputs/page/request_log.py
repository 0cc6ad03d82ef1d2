"""The status server's request log: a client's malformed request is one quiet line."""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

requests_log = logging.getLogger("lookout.status.requests")


class _ClientFaults(logging.Filter):
    """A malformed request is the client's fault: one line at debug level, no traceback.

    aiohttp answers it (400, 413, 431) and logs the parser's exception with its
    traceback; a peer that sends garbage must not fill the device's log.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            reason = " ".join(str(exc).split())[:200]
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {reason}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return requests_log.isEnabledFor(logging.DEBUG)
        return True


requests_log.addFilter(_ClientFaults())


__all__ = ["requests_log"]
