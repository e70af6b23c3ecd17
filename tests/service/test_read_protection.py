"""With CLADE_READS_REQUIRE_TOKEN, reads need a token too."""

from __future__ import annotations

from pathlib import Path

from tests.servers import app_service, free_port, service_env


def test_reads_can_require_a_token(tmp_path: Path) -> None:
    env = service_env(
        tmp_path / "data", f"sqlite:///{tmp_path / 'c.db'}", free_port(), CLADE_READS_REQUIRE_TOKEN="true"
    )
    with app_service(env) as service:
        with service.anonymous as anonymous:
            assert anonymous.get("/api/runs").status_code == 401
            wrong = {"Authorization": "Bearer not-the-token"}
            assert anonymous.get("/api/runs", headers=wrong).status_code == 401
        with service.client("read_token") as reader:
            assert reader.get("/api/runs").status_code == 200
