"""``lookout report``: a log charted and summed, per camera and in total (``command.py``)."""
