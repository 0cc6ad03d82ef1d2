"""MQTT and Home Assistant: the publisher (``publisher.py``), what the topics are and hold
(``topics.py``, ``state.py``, each camera's ``camera.py``), one connection's life and its
queue (``connection.py``, ``window.py``, ``backlog.py``, ``reader.py``), the client, health,
settings, presence check, event pictures and Home Assistant discovery."""
