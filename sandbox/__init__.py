"""Isolation for untrusted agent code: one protocol, several backends, and the images they run.

base        the protocol (`SandboxBackend`, `Sandbox`), `SandboxSpec`, `ExecResult`, errors
registry    `get_backend(name, **options)`: backends by name, imported lazily
docker_*    the Docker backend: hardened containers, exec with deadlines and output caps
images      `ensure_base_image`, `ensure_agent_image`: locally built, hash-tagged images;
            `ensure_runtime`: the agent runtime mounted into any task image;
            `ensure_task_image`: a task's own image, pulled when absent
"""
