"""The SQLite event store: one store per database file (``database.py``), its writer thread,
retries, health and ledger, the file itself and its identity, and the event log over it
(``eventlog.py``). Apart from the session runtime, which only hands it events."""
