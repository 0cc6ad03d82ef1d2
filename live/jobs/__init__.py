"""Long-running jobs of tool calls: their record and where it is kept (``records.py``) and
their results handed out a page at a time (``paging.py``); the session and request-response
turns both run them (``live/dispatch.py``)."""
