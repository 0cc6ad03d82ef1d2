"""The model link: one connection's life and its reconnects (``connection.py``), resuming
before a cut (``handover.py``, ``resumption.py``), how failures are counted and said
(``failures.py``), what waits for the model and is sent in order (``outbox.py``,
``send_loop.py``), and the spending cap on the model's tokens (``budget.py``)."""
