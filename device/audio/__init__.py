"""The device's voice: microphone in, loudspeaker out, each a device or a WAV file."""
