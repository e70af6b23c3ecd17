"""Wire contracts shared by the service and the workers: jobs, results and records, the agent
manifest and its errors, run configuration and limits, settings, the Celery app. The bottom layer:
it imports no other Clade package."""
