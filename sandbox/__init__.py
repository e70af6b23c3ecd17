"""Isolation for untrusted agent code: one protocol, the Docker backend and any a plugin adds, their images.

base           the protocol: `SandboxBackend` (its `images`, `start`, orphan removal), `Sandbox`,
               `ImageStore`, `SandboxSpec`, `ExecResult`, errors
registry       `get_backend(name, **options)`: Docker, and backends other packages register in the
               `clade.sandbox_backends` entry-point group; one that does not isolate needs `allow_unsafe`
docker_*       the Docker backend: hardened containers, exec with deadlines and output caps
               (`docker_backend`, `docker_sandbox`, `docker_exec`), its `ImageStore` (`docker_images`),
               and what `clade doctor` asks of the engine (`docker_health`)
ceiling        `ResourceCeiling`: the most of the host one sandbox may take (specs are clamped)
disk           `LimitedDisk`, `GrowthWatch`: bounds on what a sandbox writes to host folders
hostfiles      `read_regular_file`: reading sandbox-written files without blocking or following links
ownership      host folders handed to a sandbox made writable for its user (uid 1000)
liveness       `ProcessStamp`: whether the process that started a sandbox is alive, so a worker removes
               the sandboxes of processes that are gone and never a live one's
images         how Docker images are made: the base image and agent layers, the agent runtime, task
               images pulled when absent, and `LayeredImage` (`recipes`), a benchmark's own image
               described without naming an engine

Only this package imports `docker` (an import-linter contract): benchmarks, the worker and the CLI
ask a backend; the service never talks to a sandbox engine. See docs/extend/sandbox-backend.md.
"""
