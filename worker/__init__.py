"""The worker: takes improve and evaluate jobs from the broker and runs them in sandboxes.

tasks           the Celery tasks: parse a job, skip one the service no longer wants, run it, and sort
                failures into retried (infrastructure) or recorded (the agent's own)
improve         an improve job: diagnosis (`diagnose`) or the parent's own procedure (`hyper`), the
                improver's run, the child's validation (`validation`), the child or the reason handed back
evaluate        an evaluate job: the agent solves one task, its benchmark grades the diff in a fresh
                sandbox, the utility's judge (`judge`) when there is one, the result handed back
agent_runner    one agent on one repository in a sandbox with its own LLM gateway; `workspace` holds
                its host folders and reads back what it left without trusting them
llm/            the metered LLM gateway, the in-sandbox forwarder, the scripted model (`curriculum`:
                the demo's script)
context         what a worker needs, built once from settings; `service_client`, its only way to the
                archive (the service's HTTP API)
main            `clade worker`; `metrics`, its Prometheus figures

It imports nothing of the service: the two share only `contracts`, `benchmarks` and `sandbox`.
"""
