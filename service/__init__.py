"""Clade service: the archive (git + database), the REST API, the run driver and selection."""
