"""The device voice: microphone, loudspeaker, speech, through files and PulseAudio."""
