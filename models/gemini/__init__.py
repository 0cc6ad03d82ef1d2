"""The Gemini Live model: google-genai's Live API behind ``live.model.LiveModel``."""
