"""Small utilities the runtime and the device share: clocks, backoff, wall time across clock
steps, printable text, redaction of secrets, plurals."""
