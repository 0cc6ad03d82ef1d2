"""Request-response mode: one question, the tool round trips it needs, one answer
(``conversation.py``), its model protocol, configuration and long-running jobs."""
