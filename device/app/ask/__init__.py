"""``lookout ask``: one question answered from the scene or the log (``command.py``)."""
