"""Isolation for untrusted agent code: one protocol, several backends, and the images they run.

base        the protocol (`SandboxBackend`, `Sandbox`), `SandboxSpec`, `ExecResult`, errors
registry    `get_backend(name, **options)`: backends by name, imported lazily
docker_*    the Docker backend: hardened containers, exec with deadlines and output caps
ceiling     `ResourceCeiling`: the most of the host one sandbox may take (specs are clamped)
disk        `LimitedDisk`, `GrowthWatch`: bounds on what a sandbox writes to host folders
hostfiles   `read_regular_file`: reading sandbox-written files without blocking or following links
images      `ensure_base_image`, `ensure_agent_image`: locally built, hash-tagged images;
            `ensure_runtime`: the agent runtime mounted into any task image;
            `ensure_task_image`: a task's own image, pulled when absent
"""
