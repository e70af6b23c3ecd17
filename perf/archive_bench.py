"""Archive speed with 10,000 (or 100,000) agents in one run, against a live service over HTTP.

Goals (issue: archive service core): the lineage endpoint answers in under
300 ms; reading one agent's code (1,000 files) takes under 200 ms; creating a
child from a 200-line patch takes under 100 ms. Each figure is printed with its
goal and the ratio figure/goal (below 1.0 meets the goal).

The agents are built without the service: git fast-import writes their commits and one bulk
insert their rows, so 100,000 take a minute or two rather than 100,000 HTTP calls. On Postgres
a fresh database is made on the test server (CLADE_TEST_POSTGRES_URL, as the tests use) and
dropped afterwards.

    python perf/archive_bench.py [--database sqlite|postgres] [--agents 10000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, insert
from sqlalchemy.orm import Session

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.archive.git_store import GitStore
from service.db.migrate import upgrade
from service.db.models import Agent, RunAgent
from tests.servers import fresh_postgres_database, service_env, start_service
from tests.service.helpers import open_step_in

FILES = 1000
PATCH_LINES = 200


def make_seed(root: Path) -> None:
    (root / "agent.toml").write_text('solve = "python -m agent"\n')
    for i in range(FILES - 1):
        path = root / f"pkg{i % 20}" / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"value_{j} = {j}\n" for j in range(300 if i == 0 else 20)))


def fast_import_lineage(git_dir: Path, seed: str, count: int, rng: random.Random) -> list[tuple[str, str]]:
    """`count` descendants of the seed with random parents, written by git fast-import."""
    parents: list[int] = []
    stream: list[bytes] = []
    for n in range(1, count + 1):
        parent = rng.randrange(0, n)  # mark 0 stands for the seed
        parents.append(parent)
        content = f"generation marker {n}\n".encode()
        message = f"agent {n}".encode()
        stream.append(
            f"commit refs/perf/tmp\nmark :{n}\ncommitter Clade <clade@localhost> 946684800 +0000\n".encode()
        )
        stream.append(b"data %d\n%s\n" % (len(message), message))
        stream.append(f"from {seed if parent == 0 else f':{parent}'}\n".encode())
        stream.append(b"M 100644 inline evolved/marker.txt\n")
        stream.append(b"data %d\n%s\n" % (len(content), content))
    marks = git_dir / "perf-marks"
    subprocess.run(
        ["git", "--git-dir", str(git_dir), "fast-import", "--quiet", f"--export-marks={marks}"],
        input=b"".join(stream),
        check=True,
    )
    sha_of = {0: seed}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        sha_of[int(mark[1:])] = sha
    subprocess.run(["git", "--git-dir", str(git_dir), "update-ref", "-d", "refs/perf/tmp"], check=True)
    updates = "".join(f"create refs/heads/agents/{sha_of[n]} {sha_of[n]}\n" for n in range(1, count + 1))
    subprocess.run(
        ["git", "--git-dir", str(git_dir), "update-ref", "--stdin"], input=updates.encode(), check=True
    )
    return [(sha_of[n], sha_of[parents[n - 1]]) for n in range(1, count + 1)]


def timed(fn, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def report(name: str, samples: list[float], goal_s: float) -> None:
    median = statistics.median(samples)
    p90 = sorted(samples)[int(0.9 * (len(samples) - 1))]
    print(
        f"{name:<38} median {median * 1000:7.1f} ms  p90 {p90 * 1000:7.1f} ms  "
        f"goal {goal_s * 1000:5.0f} ms  ratio {median / goal_s:.2f}"
    )


@contextmanager
def database(kind: str, root: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{root / 'clade.db'}"
    else:
        with fresh_postgres_database() as url:
            yield url


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="clade-perf-") as tmp, database(args.database, Path(tmp)) as url:
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        upgrade(url)
        git = GitStore(data / "archive.git")
        seed_dir = root / "seed"
        seed_dir.mkdir()
        make_seed(seed_dir)
        service = start_service(service_env(data, url, 0))
        try:
            with service.admin as admin:
                subprocess.run(["tar", "czf", str(root / "seed.tgz"), "-C", str(seed_dir), "."], check=True)
                seed = admin.post(
                    "/api/seeds", files={"file": ("s.tgz", (root / "seed.tgz").read_bytes())}
                ).json()["id"]
                run_id = admin.post(
                    "/api/runs", json={"seed_agent": seed, "budget": {"max_children": args.agents + 1000}}
                ).json()["id"]
            print(f"building {args.agents} agents on {args.database} ...", flush=True)
            build_start = time.monotonic()
            lineage = fast_import_lineage(git.path, seed, args.agents, rng)
            engine = create_engine(url)
            tree = git.tree_of(seed)
            with Session(engine) as session:
                session.execute(
                    insert(Agent),
                    [
                        {
                            "id": sha,
                            "parent_id": parent,
                            "kind": "child",
                            "tree_id": tree,
                            "run_id": run_id,
                            "manifest": {"solve": "python -m agent"},
                        }
                        for sha, parent in lineage
                    ],
                )
                session.execute(
                    insert(RunAgent),
                    [
                        {
                            "run_id": run_id,
                            "agent_id": sha,
                            "parent_id": parent,
                            "status": "admitted",
                            "score": rng.random(),
                            "children": 0,
                            "step_number": i + 1,
                        }
                        for i, (sha, parent) in enumerate(lineage)
                    ],
                )
                session.commit()
            engine.dispose()
            print(f"built in {time.monotonic() - build_start:.0f}s", flush=True)

            patch_lines = "".join(f"+line {i} of the new module\n" for i in range(PATCH_LINES))
            patch = f"--- /dev/null\n+++ b/pkg0/new_module.py\n@@ -0,0 +1,{PATCH_LINES} @@\n{patch_lines}"
            with service.anonymous as reader, service.worker as worker:
                nodes = reader.get(f"/api/runs/{run_id}/lineage").json()["nodes"]
                assert len(nodes) == args.agents + 1, len(nodes)
                print(f"run {run_id}: {len(nodes)} agents in the lineage")
                report(
                    f"lineage endpoint ({len(nodes)} agents)",
                    timed(lambda: reader.get(f"/api/runs/{run_id}/lineage").raise_for_status(), args.repeat),
                    0.300,
                )
                target = lineage[-1][0]
                report(
                    "agent code, 1,000 files (HTTP tar)",
                    timed(
                        lambda: worker.get(f"/api/worker/agents/{target}/code").raise_for_status(),
                        args.repeat,
                    ),
                    0.200,
                )
                parents = [rng.choice(lineage)[0] for _ in range(args.repeat)]
                steps = iter([open_step_in(url, run_id=run_id, parent_id=p) for p in parents])
                report(
                    "child from a 200-line patch (HTTP)",
                    timed(
                        lambda: worker.post(
                            f"/api/worker/steps/{next(steps)}/child", json={"patch": patch}
                        ).raise_for_status(),
                        args.repeat,
                    ),
                    0.100,
                )
        finally:
            service.stop()


if __name__ == "__main__":
    main()
