"""Adapter: mini-swe-agent run on Clade's sandbox contract."""
