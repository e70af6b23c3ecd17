"""A hostile agent against every backend: each attack must fail and leave the sandbox
(and the host) working."""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

from sandbox.base import Sandbox, SandboxBackend, SandboxError
from tests.sandbox.conftest import SpecFactory, assert_healthy, leftover_processes, run_ok

pytestmark = pytest.mark.docker

CONNECT_SCRIPT = """
import json, socket, sys
results = {}
for host, port in json.loads(sys.argv[1]):
    try:
        socket.create_connection((host, port), timeout=3).close()
        results[f"{host}:{port}"] = "connected"
    except OSError as exc:
        results[f"{host}:{port}"] = f"{type(exc).__name__}: {exc}"
try:
    socket.getaddrinfo("example.org", 443)
    results["dns"] = "resolved"
except OSError as exc:
    results["dns"] = f"{type(exc).__name__}: {exc}"
results["interfaces"] = [name for _, name in socket.if_nameindex()]
print(json.dumps(results))
"""


@pytest.fixture
def host_listener() -> Iterator[tuple[int, list[Any]]]:
    """A TCP server on all host addresses that records every connection it gets."""
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(0.2)
    accepted: list[Any] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[1])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=10)
    server.close()


def _bridge_gateway(docker_client: Any) -> str:
    """The host's address on Docker's default bridge (the subnet's first host if unnamed)."""
    ipam = docker_client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    return str(ipam.get("Gateway") or next(ipaddress.ip_network(ipam["Subnet"]).hosts()))


def test_no_network_not_even_the_host(
    sandbox: Sandbox, docker_client: Any, host_listener: tuple[int, list[Any]]
) -> None:
    port, accepted = host_listener
    gateway = _bridge_gateway(docker_client)
    targets = [["1.1.1.1", 53], ["1.1.1.1", 443], [gateway, port], [gateway, 2375]]
    out = run_ok(sandbox, "python", "-c", CONNECT_SCRIPT, json.dumps(targets))
    results = json.loads(out)
    for host, target_port in targets:
        assert "unreachable" in results[f"{host}:{target_port}"].lower(), results
    assert results["dns"] != "resolved"
    assert results["interfaces"] == ["lo"]
    assert accepted == []
    assert_healthy(sandbox)


def test_host_environment_is_invisible(
    backend: SandboxBackend, make_spec: SpecFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-must-not-leak")
    monkeypatch.setenv("CLADE_WORKER_TOKEN", "worker-token-must-not-leak")
    box = backend.start(make_spec(env={"OPENAI_API_KEY": "clade-sandbox"}))
    try:
        seen = run_ok(box, "sh", "-c", "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
        assert "sk-real-key-must-not-leak" not in seen
        assert "worker-token-must-not-leak" not in seen
        assert "OPENAI_API_KEY=clade-sandbox" in seen
        assert_healthy(box)
    finally:
        box.close()


FORK_COUNTER = """
import os, signal, time
children = []
try:
    while len(children) < 10_000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
except OSError:
    pass
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(len(children))
"""


def test_fork_bomb_hits_the_pids_limit(backend: SandboxBackend, make_spec: SpecFactory) -> None:
    box = backend.start(make_spec(pids=64))
    try:
        forked = int(run_ok(box, "python", "-c", FORK_COUNTER))
        assert 0 < forked < 64
        bomb = box.exec(["bash", "-c", "bomb() { bomb | bomb & }; bomb; sleep 600"], timeout_s=5)
        assert bomb.timed_out
        assert bomb.duration_s < 30
        assert leftover_processes(box) == []
        assert_healthy(box)
    finally:
        box.close()


def test_memory_hog_is_killed(backend: SandboxBackend, make_spec: SpecFactory, docker_client: Any) -> None:
    box = backend.start(make_spec(memory_mb=128))
    try:
        hog = box.exec(
            ["python", "-c", "blocks = [bytearray(16 * 2**20) for _ in range(64)]; print('survived')"],
            timeout_s=60,
        )
        assert hog.exit_code == 137  # SIGKILL from the OOM killer
        assert "survived" not in hog.stdout
        assert not hog.timed_out
        assert_healthy(box)
        assert docker_client.ping()
    finally:
        box.close()


def test_output_flood_is_capped(backend: SandboxBackend, make_spec: SpecFactory) -> None:
    cap = 64 * 1024
    box = backend.start(make_spec(output_cap_bytes=cap))
    try:
        flood = box.exec(
            ["python", "-c", "import sys; sys.stdout.write('o' * 10**7); sys.stderr.write('e' * 10**7)"],
            timeout_s=60,
        )
        assert flood.exit_code == 0 and flood.output_truncated
        assert len(flood.stdout.encode()) + len(flood.stderr.encode()) <= cap
        assert flood.stdout.startswith("o" * 1000)
        endless = box.exec(["yes", "flood"], timeout_s=3)
        assert endless.timed_out and endless.output_truncated
        assert len(endless.stdout.encode()) <= cap
        assert leftover_processes(box) == []
        assert_healthy(box)
    finally:
        box.close()


ESCAPE_ARTIST = r"""
sleep 1001 &
setsid sh -c 'trap "" TERM HUP INT; sleep 1002' &
( env -i sh -c 'sleep 1003 &' ) &
nohup sleep 1004 >/dev/null 2>&1 &
echo started
sleep 1000
"""


def test_timeout_kills_every_process(sandbox: Sandbox) -> None:
    result = sandbox.exec(["sh", "-c", ESCAPE_ARTIST], timeout_s=2)
    assert result.timed_out
    assert result.stdout == "started\n"
    assert 2 <= result.duration_s < 15
    assert leftover_processes(sandbox) == []
    assert_healthy(sandbox)


def test_timeout_when_the_command_closes_its_output(sandbox: Sandbox) -> None:
    result = sandbox.exec(["sh", "-c", "exec >&- 2>&-; sleep 1000"], timeout_s=2)
    assert result.timed_out
    assert leftover_processes(sandbox) == []
    assert_healthy(sandbox)


def test_root_filesystem_is_read_only(sandbox: Sandbox) -> None:
    # /var/tmp and /run/lock are world-writable: only the read-only root refuses them.
    for path in ("/var/tmp/new", "/run/lock/new"):
        result = sandbox.exec(["sh", "-c", f"echo x > {path}"], timeout_s=30)
        assert result.exit_code != 0 and "Read-only file system" in result.stderr, result
    for path in ("/etc/passwd", "/etc/new", "/usr/bin/new", "/opt/clade-venv/bin/new", "/clade/new"):
        result = sandbox.exec(["sh", "-c", f"echo x >> {path}"], timeout_s=30)
        assert result.exit_code != 0, path
    assert "clade:x:1000" in run_ok(sandbox, "cat", "/etc/passwd")
    run_ok(sandbox, "sh", "-c", "echo x > /tmp/scratch")
    assert_healthy(sandbox)


def test_runs_as_uid_1000_and_cannot_become_root(sandbox: Sandbox) -> None:
    assert run_ok(sandbox, "id", "-u") == "1000\n"
    assert run_ok(sandbox, "id", "-g") == "1000\n"
    setuid = sandbox.exec(["python", "-c", "import os; os.setuid(0)"], timeout_s=30)
    assert setuid.exit_code != 0 and "PermissionError" in setuid.stderr
    mount = sandbox.exec(["mount", "-t", "tmpfs", "none", "/mnt"], timeout_s=30)
    assert mount.exit_code != 0
    assert_healthy(sandbox)


def test_no_capabilities_and_no_new_privileges(sandbox: Sandbox) -> None:
    status = run_ok(sandbox, "cat", "/proc/self/status")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap].strip(), 16) == 0, (cap, fields[cap])
    assert fields["NoNewPrivs"].strip() == "1"


def test_killing_everything_only_breaks_its_own_sandbox(
    backend: SandboxBackend, make_spec: SpecFactory
) -> None:
    box = backend.start(make_spec())
    try:
        box.exec(["sh", "-c", "kill -9 -1"], timeout_s=10)
        with pytest.raises(SandboxError):
            for _ in range(50):  # the container stops shortly after its keeper dies
                box.exec(["true"], timeout_s=10)
    finally:
        box.close()
    with closing(backend.start(make_spec())) as fresh:
        assert_healthy(fresh)
