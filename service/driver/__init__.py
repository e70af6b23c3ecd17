"""The run driver: keeps each active run's steps and evaluations in flight, from database state.

Every decision is recomputed from the database on each tick, so the driver
holds nothing a restart could lose. `loop` is the thread that ticks, `tick` one run's
tick, `jobs` what a tick sends; `policies` gathers the hooks the tick calls (the run's
selection strategy, then epochs, the held-out phase and crossover), which read and write
the run through `ledger`.
"""
