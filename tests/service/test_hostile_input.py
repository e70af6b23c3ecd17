"""Input made to hurt the service: YAML bombs, cut uploads, and reads of internal errors.

Each answer is a 4xx naming the problem, never a 500, and never more than the input was worth.
"""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

import pytest
import yaml
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from contracts.safe_yaml import YamlInputError, load_yaml
from contracts.settings import Settings, binds_loopback_only
from service.api.redact import HIDDEN_ERROR
from service.db.models import Event
from tests.helpers import AGENT_TOML
from tests.servers import AppService, app_service, free_port, service_env
from tests.service.helpers import start_run

PARSE = "/api/dashboard/parse-config"
# 369 bytes that stand for 9^9 strings once the aliases are followed.
ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def test_yaml_loader_refuses_aliases_depth_and_length() -> None:
    assert load_yaml("name: x\nstages: [{subset: all}]\n") == {"name": "x", "stages": [{"subset": "all"}]}
    for text, problem in [
        (ALIAS_BOMB, "anchors (&a) are not accepted"),
        ("a: *b\n", "aliases"),
        ("[" * 100_000, "nested more than 64 levels deep"),
        ("- " * 200 + "x\n", "nested more than 64 levels deep"),
        ("n: " + "9" * 6000 + "\n", "a value cannot be read"),
        ("x" * 1_000_001, "at most 1000000"),
        ("name: [unclosed", "line 1"),
        ("name: a\x1db\n", "not valid YAML"),
        # YAML keeps the last of two keys silently; a config, landscape or options file must not.
        ("name: a\nname: b\n", "line 2, column 1: the key 'name' is given twice (first on line 1)"),
        ("x: {y: 1, y: 2}\n", "the key 'y' is given twice"),
        # JSON keys are text: YAML would read these as null and as a number.
        ("null: a\n~: b\n", "line 1, column 1: the key 'null' is read as null, not as text; quote it"),
        ("x:\n  1: a\n", "line 2, column 3: the key '1' is read as a number"),
        ("? [a]\n: 1\n", "a key that is a list or mapping is not text"),
    ]:
        with pytest.raises(YamlInputError, match=problem.replace("(", r"\(").replace(")", r"\)")):
            load_yaml(text)


def test_yaml_reads_numbers_with_an_exponent_as_json_does() -> None:
    # PyYAML alone reads these as strings (YAML 1.1 wants `1.0e+3`), so `cost_usd: 1e-3` was refused.
    text = "a: 1e-3\nb: 2.5E3\nc: -1e+2\nd: .5e1\ne: '1e3'\nf: 1e\ng: 12\n"
    assert load_yaml(text) == {"a": 0.001, "b": 2500.0, "c": -100.0, "d": 5.0, "e": "1e3", "f": "1e", "g": 12}
    assert yaml.safe_load("a: 1e3\n") == {"a": "1e3"}  # PyYAML's own loader is left as it is


def test_parse_config_is_for_admins_and_refuses_bombs(service: AppService) -> None:
    with service.anonymous as anonymous:
        assert anonymous.post(PARSE, json={"text": "name: x\n"}).status_code == 401
    with service.client("read_token") as reader:
        assert reader.post(PARSE, json={"text": "name: x\n"}).status_code == 401
    with service.admin as admin:
        for text, problem in [
            (ALIAS_BOMB, "anchors"),
            ("a: " + "[" * 50_000 + "\n", "nested more than"),
            ("a: .inf\n", "JSON cannot carry"),
            # What the command line refuses, the dashboard's form refuses (one loader for both).
            ("null: a\n~: b\n", "the key 'null' is read as null"),
            ("name: a\nname: b\n", "the key 'name' is given twice"),
        ]:
            response = admin.post(PARSE, json={"text": text})
            assert response.status_code == 422, (text[:40], response.status_code)
            assert len(response.content) < 2_000
            (issue,) = response.json()["detail"]
            assert issue["loc"] == ["body", "text"] and problem in issue["msg"], issue


def test_cli_reads_run_configs_and_options_with_the_bounded_loader(tmp_path: Path) -> None:
    from cli.options import OptionSyntaxError, parse_pairs, read_options_file
    from contracts.config import load_run_config

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB)
    with pytest.raises(OptionSyntaxError, match="anchors"):
        read_options_file(bomb)
    with pytest.raises(OptionSyntaxError, match="nested more than"):
        parse_pairs(["instance_ids=" + "[" * 1000])
    with pytest.raises(YamlInputError, match=f"{bomb}: line 1"):
        load_run_config(bomb)


def _small_seed(mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for name, data in [("agent.toml", AGENT_TOML.encode()), ("tiny/__main__.py", b"print('hi')\n")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_cut_or_garbled_seed_upload_is_never_a_500(service: AppService) -> None:
    rng = random.Random(15)
    whole = _small_seed("w:gz")
    uploads = [whole[:cut] for cut in range(len(whole))]
    uploads += [
        _small_seed(mode)[:cut] for mode in ("w:bz2", "w:xz", "w:") for cut in (0, 1, 10, 50, 100, 600)
    ]
    uploads += [rng.randbytes(rng.randrange(1, 2000)) for _ in range(40)]
    garbled = bytearray(whole)
    for _ in range(40):
        at = rng.randrange(len(garbled))
        uploads.append(bytes(garbled[:at]) + bytes([garbled[at] ^ 0xFF]) + bytes(garbled[at + 1 :]))
    with service.admin as admin:
        for data in uploads:
            response = admin.post("/api/seeds", files={"file": ("a.tgz", data)})
            assert response.status_code in (200, 201, 413, 422), (
                len(data),
                response.status_code,
                response.text,
            )
            if response.status_code == 422:
                assert "upload" in response.text or "agent.toml" in response.text, response.text
        assert admin.post("/api/seeds", files={"file": ("a.tgz", whole)}).status_code in (200, 201)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_internal_error_texts_are_for_admins_only(service: AppService, seed_id: str) -> None:
    run_id = start_run(service, seed_id)
    secret = "psycopg.OperationalError: connection to /var/lib/secret-host-path failed"
    engine = create_engine(service.database_url)
    with Session(engine) as session:
        failure = {"scope": "run", "error": secret, "since": "2026-12-01T10:00:00+00:00", "failed_ticks": 3}
        session.add(Event(run_id=run_id, kind="driver_error", payload=failure))
        session.commit()
    engine.dispose()
    events = f"/api/runs/{run_id}/events"
    with service.anonymous as anonymous:
        (error,) = [e for e in anonymous.get(events).json() if e["kind"] == "driver_error"]
        assert error["payload"] == failure | {"error": HIDDEN_ERROR}
    with service.admin as admin:
        (error,) = [e for e in admin.get(events).json() if e["kind"] == "driver_error"]
        assert error["payload"]["error"] == secret


def test_reads_need_a_token_unless_the_service_binds_to_loopback(tmp_path: Path) -> None:
    assert (
        binds_loopback_only("127.0.0.1") and binds_loopback_only("::1") and binds_loopback_only("localhost")
    )
    assert not binds_loopback_only("0.0.0.0") and not binds_loopback_only("::")
    assert not binds_loopback_only("10.1.2.3") and not binds_loopback_only("service")
    assert Settings(reads_require_token=False).reads_need_token("0.0.0.0") is False
    assert Settings(reads_require_token=True).reads_need_token("127.0.0.1") is True
    port = free_port()
    env = service_env(tmp_path / "data", f"sqlite:///{tmp_path / 'c.db'}", port)
    env["CLADE_SERVICE_URL"] = f"http://0.0.0.0:{port}"
    with app_service(env) as service:
        with service.anonymous as anonymous:
            for path in ("/api/runs", "/api/agents", "/metrics", "/api/benchmarks"):
                assert anonymous.get(path).status_code == 401, path
            assert anonymous.get("/api/health").status_code == 200
        with service.client("read_token") as reader:
            assert reader.get("/api/runs").status_code == 200


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_every_answer_carries_the_security_headers_and_docs_are_local(service: AppService) -> None:
    with service.anonymous as anonymous:
        for path in ("/", "/runs/abc", "/api/health", "/api/runs", "/docs", "/openapi.json", "/api/nothing"):
            headers = anonymous.get(path).headers
            policy = headers["content-security-policy"]
            assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy, path
            assert "script-src 'self'" in policy and "unsafe-eval" not in policy, path
            assert headers["x-content-type-options"] == "nosniff", path
            assert headers["x-frame-options"] == "DENY", path
            assert headers["referrer-policy"] == "no-referrer", path
        page = anonymous.get("/docs").text
        assert "http" not in page and '<script src="/docs/assets/swagger-ui-bundle.js">' in page
        for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-init.js"):
            response = anonymous.get(f"/docs/assets/{asset}")
            assert response.status_code == 200 and len(response.content) > 100, asset
        assert anonymous.get("/docs/assets/index.html").status_code == 404
        assert anonymous.get("/docs/assets/..%2F__init__.py").status_code == 404
        assert "redoc" not in anonymous.get("/redoc").text.lower()  # not served: a page of the dashboard
