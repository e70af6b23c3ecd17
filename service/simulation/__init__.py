"""`clade sim`: the real run driver and selection strategies against a simulated worker on
synthetic landscapes (no Docker, no model, no git). See docs/simulation.md."""
