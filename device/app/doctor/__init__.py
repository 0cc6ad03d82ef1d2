"""``lookout doctor``: what the device can reach and use (``command.py``)."""
