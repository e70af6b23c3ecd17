"""Isolation for untrusted agent code: one protocol, several backends, and the images they run."""
