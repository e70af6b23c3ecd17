"""Clade worker: Celery tasks, the LLM gateway and the benchmarks."""
