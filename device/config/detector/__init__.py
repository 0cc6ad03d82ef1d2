"""The settings that fit the detector to this machine: the backend and precision the
settings mean here (``choice``) and the CPU profiles (``profiles``)."""
