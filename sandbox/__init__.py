"""Isolation for untrusted agent code: one protocol, its Docker backend, and the images it runs.

base        the protocol (`SandboxBackend`, `Sandbox`), `SandboxSpec`, `ExecResult`, errors
registry    `get_backend(name, **options)`: backends by name (today `docker`), imported lazily
docker_*    the Docker backend: hardened containers, exec with deadlines and output caps
ceiling     `ResourceCeiling`: the most of the host one sandbox may take (specs are clamped)
disk        `LimitedDisk`, `GrowthWatch`: bounds on what a sandbox writes to host folders
hostfiles   `read_regular_file`: reading sandbox-written files without blocking or following links
ownership   host folders handed to a sandbox made writable for its user (uid 1000): chown as root, else modes
liveness    `ProcessStamp`: whether the process that started a sandbox is alive, so a worker
            removes the sandboxes of processes that are gone and never a live one's
images      `ensure_base_image`, `ensure_agent_image`: locally built, hash-tagged images;
            `ensure_runtime`: the agent runtime mounted into any task image;
            `ensure_task_image`: a task's own image, pulled when absent
"""
