"""The embedded local model: an offline stand-in that answers from the device's counts."""
