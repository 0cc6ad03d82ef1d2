"""Lines and zones edited while running: each camera's editor, the edit body, the log
allowance, and the scene tools."""
