"""The one error a user's setting raises: ConfigError, a single line naming the setting.

A leaf module: everything that checks a setting (the values, the files they name, the
profiles) raises this, and the CLI prints it and exits 2.
"""

from __future__ import annotations


class ConfigError(Exception):
    """A setting a user got wrong; the message is one line naming it."""


# The origin of command-line flags (the others are a file's path or the environment).
COMMAND_LINE = "command line"
ENVIRONMENT = "environment"

__all__ = ["COMMAND_LINE", "ENVIRONMENT", "ConfigError"]
