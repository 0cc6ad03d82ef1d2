"""The applications: ``lookout run`` (``run.App``), ``lookout ask``, and their configuration."""
