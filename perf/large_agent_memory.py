"""Memory of the service while it sends a large agent: code and every export format.

Goal (issue 10): reading a 200 MB agent keeps the service under +100 MB RSS. A live service
(its own data dir) gets a seed through the API, then a child of it holding ~200 MB of random
(incompressible) files, written with git fast-import and direct inserts, as perf/dashboard_tree.py
does, so that building it costs the service nothing. The agent is within the default limits
(files of 32 MiB under max_file_bytes, 192 MiB under max_agent_bytes). Each read is drained by
the client while a thread samples the service process's RSS (VmRSS in /proc) every 10 ms.
Printed: per read the bytes, seconds and peak RSS; then the baseline, the peak, the delta and
the ratio delta / 100 MB (below 1.0 meets the goal).

    python perf/large_agent_memory.py [--files 6] [--file-mib 32] [--port 8471]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from sqlalchemy import create_engine, insert
from sqlalchemy.orm import Session

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.db.models import Agent, RunAgent  # noqa: E402
from tests.helpers import tar_of, write_agent  # noqa: E402
from tests.servers import ServiceProcess, service_env, start_service  # noqa: E402

MB = 1_000_000
MIB = 1024 * 1024
GOAL_MB = 100


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class Sampler:
    """The highest RSS of a process seen while the block runs."""

    def __init__(self, pid: int, interval_s: float = 0.01) -> None:
        self.pid, self.interval_s = pid, interval_s
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Sampler:
        self.peak = rss_bytes(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes(self.pid))


def add_large_child(git_dir: Path, seed: str, files: int, size: int) -> str:
    """A child of `seed` with `files` random files of `size` bytes, streamed into git fast-import."""
    process = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "fast-import", "--quiet"], stdin=subprocess.PIPE
    )
    assert process.stdin is not None
    for n in range(1, files + 1):
        process.stdin.write(f"blob\nmark :{n}\ndata {size}\n".encode())
        for start in range(0, size, MIB):
            process.stdin.write(os.urandom(min(MIB, size - start)))
        process.stdin.write(b"\n")
    message = b"large child"
    process.stdin.write(
        b"commit refs/perf/large\ncommitter Clade <clade@localhost> 946684800 +0000\n"
        + b"data %d\n%s\nfrom %s\n" % (len(message), message, seed.encode())
        + b"".join(b"M 100644 :%d blobs/part-%02d.bin\n" % (n, n) for n in range(1, files + 1))
    )
    process.stdin.close()
    if process.wait() != 0:
        raise RuntimeError("git fast-import failed")

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    sha = git("rev-parse", "refs/perf/large")
    git("update-ref", f"refs/heads/agents/{sha}", sha)
    git("update-ref", "-d", "refs/perf/large")
    return sha


def build(service: ServiceProcess, files: int, size: int) -> tuple[str, str, str]:
    """(seed, large child, run): the child admitted in the run, so the run export holds it."""
    with tempfile.TemporaryDirectory(prefix="clade-perf-seed-") as tmp:
        data = tar_of(write_agent(Path(tmp) / "seed"))
    with service.admin as admin:
        seed = str(admin.post("/api/seeds", files={"file": ("seed.tgz", data)}).json()["id"])
        config = {"seed_agent": seed, "budget": {"max_children": 1}}
        run = str(admin.post("/api/runs", json=config).json()["id"])
    child = add_large_child(service.data_dir / "archive.git", seed, files, size)
    tree = subprocess.run(
        ["git", "--git-dir", str(service.data_dir / "archive.git"), "rev-parse", f"{child}^{{tree}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    engine = create_engine(service.database_url)
    with Session(engine) as session:
        manifest = {"solve": "python -m tiny", "name": "tiny"}
        session.execute(
            insert(Agent).values(
                id=child, parent_id=seed, kind="child", tree_id=tree, run_id=run, manifest=manifest
            )
        )
        session.execute(
            insert(RunAgent).values(
                run_id=run, agent_id=child, parent_id=seed, status="admitted", score=1.0, stage_reached=1
            )
        )
        session.commit()
    engine.dispose()
    return seed, child, run


def drain(client: httpx.Client, path: str) -> int:
    size = 0
    with client.stream("GET", path) as response:
        response.raise_for_status()
        for chunk in response.iter_bytes(MIB):
            size += len(chunk)
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--file-mib", type=int, default=32)
    parser.add_argument("--port", type=int, default=8471)
    args = parser.parse_args()
    size = args.file_mib * MIB
    with tempfile.TemporaryDirectory(prefix="clade-perf-memory-") as tmp:
        data = Path(tmp) / "data"
        service = start_service(service_env(data, f"sqlite:///{data / 'clade.db'}", args.port))
        try:
            seed, child, run = build(service, args.files, size)
            pid = service.process.pid
            reads = {
                "code (tar.gz)": f"/api/agents/{child}/code",
                "worker code (tar)": f"/api/worker/agents/{child}/code",
                "export (tar.gz + metadata)": f"/api/agents/{child}/export",
                "bundle": f"/api/agents/{child}/bundle",
                "patch series": f"/api/agents/{child}/patches",
                "run export (top 1)": f"/api/runs/{run}/export?k=1",
            }
            with service.worker as client:
                for path in list(reads.values())[:-1]:  # warm-up on the small seed: imports, pools
                    drain(client, path.replace(child, seed))
                baseline = rss_bytes(pid)
                total = args.files * size / MB
                print(f"agent {child[:12]}: {args.files} files x {args.file_mib} MiB = {total:.0f} MB")
                print(f"baseline RSS {baseline / MB:.1f} MB (service pid {pid})")
                peak = baseline
                for label, path in reads.items():
                    start = time.perf_counter()
                    with Sampler(pid) as sampler:
                        sent = drain(client, path)
                    seconds = time.perf_counter() - start
                    peak = max(peak, sampler.peak)
                    print(
                        f"  {label:28s} {sent / MB:7.1f} MB in {seconds:5.1f} s,"
                        f" peak RSS {sampler.peak / MB:6.1f} MB (+{(sampler.peak - baseline) / MB:.1f})"
                    )
        finally:
            service.stop()
    delta = (peak - baseline) / MB
    print(f"baseline {baseline / MB:.1f} MB, peak {peak / MB:.1f} MB, delta {delta:.1f} MB")
    print(f"delta / {GOAL_MB} MB = {delta / GOAL_MB:.2f} (goal: below 1.0)")


if __name__ == "__main__":
    main()
