"""Alembic migrations for Clade's database (run on service start and by `clade db upgrade`)."""
