"""Database models, engine and session handling."""
