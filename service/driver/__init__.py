"""The run driver: keeps each active run's steps and evaluations in flight, from database state.

Every decision is recomputed from the database on each tick, so the driver
holds nothing a restart could lose.
"""
