"""Lookout's live runtime: request queue, input fan-out, streaming tools, session loop.

This package imports nothing else of Lookout's, and nothing in it imports google-genai
(the runtime's values are its own: ``live/wire.py``). Its names are imported from the
modules that define them (``from live.session import Runner``), so importing one module
loads that module, not the session. ``live/store/`` is the SQLite event store the runtime
and the device write to; ``live/turns/`` the request-response mode; ``live/util/`` the small
utilities everything shares (clocks, backoff, printable text, redaction, plurals).
"""
