"""Perception's values and steps: a frame, what perception made of it (percept), the
detection grid's one shared detector, the tracker, who counts (presence), lines, zones,
the scene and the motion gate. None of them loads the session, google-genai, aiohttp or
sqlite3 (tests/arch checks it)."""
