"""The status page and its HTTP server: the server and its routes (``server.py``), what it
serves (``render.py``, ``scene_json.py``, ``metrics.py``, the page's ``static/`` files), and
what keeps its readers from costing the count (``pacing.py``, ``rate.py``, ``bodies.py``,
``connection_guard.py``, ``request_guard.py``)."""
