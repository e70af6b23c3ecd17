"""With CLADE_READS_REQUIRE_TOKEN, reads need a token too."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.servers import free_port, service_env, start_service


def test_reads_can_require_a_token(tmp_path: Path) -> None:
    env = service_env(
        tmp_path / "data", f"sqlite:///{tmp_path / 'c.db'}", free_port(), CLADE_READS_REQUIRE_TOKEN="true"
    )
    service = start_service(env)
    try:
        assert httpx.get(f"{service.url}/api/runs").status_code == 401
        read = {"Authorization": f"Bearer {service.secrets['read_token']}"}
        assert httpx.get(f"{service.url}/api/runs", headers=read).status_code == 200
        wrong = {"Authorization": "Bearer not-the-token"}
        assert httpx.get(f"{service.url}/api/runs", headers=wrong).status_code == 401
    finally:
        service.stop()
