"""Pictures of events (``--snapshots``): taking them (``snapshots.py``), what they may show
(``privacy.py``), reading one back by name (``files.py``), and the latest ones the page and
MQTT list (``latest.py``)."""
