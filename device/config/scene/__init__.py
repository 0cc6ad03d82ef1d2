"""The configured lines and zones: their specs and parsers (``specs``), and how they are
written back into a configuration file, keeping its comments and layout (``file``,
``layout``)."""
