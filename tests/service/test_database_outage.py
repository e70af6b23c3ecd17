"""While its database restarts, the service answers 503 with Retry-After (workers and clients
retry), not a bare 500; once the database is back, the same request works."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.e2e.stores import LocalPostgres
from tests.servers import app_service, free_port, service_env


def test_a_database_restart_is_a_503_then_answers_again(tmp_path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="clade-outage-pg-", dir="/tmp") as folder:
        postgres = LocalPostgres(Path(folder))
        postgres.start()
        try:
            env = service_env(tmp_path / "data", postgres.url, free_port())
            with app_service(env) as service, service.anonymous as client:
                assert client.get("/api/runs").status_code == 200
                postgres.stop()
                down = client.get("/api/runs")
                assert down.status_code == 503, down.text
                assert down.headers["Retry-After"] == "5"
                assert "database unavailable" in down.json()["detail"]
                postgres.start()
                assert client.get("/api/runs").status_code == 200
        finally:
            postgres.stop()
