"""Small utilities the runtime and the device share: clocks, backoff, wall time across clock
steps, printable text, redaction of secrets, plurals, the one drop-oldest buffer every lane
uses (``buffer.py``) and the wake-up primitive behind every "something changed"
(``signal.py``)."""
