"""`clade` given ids, output paths and connection options a person (or a script) can get wrong:
an id reaches the service as one path segment, never as another resource; an output path that
cannot be written is one line naming it, and leaves no file; a bad URL or token is one line
naming the option. Each is a nonzero exit with no traceback."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from tests.helpers import fill_disk, import_seed, small_tmpfs
from tests.servers import ServiceProcess, closed_port
from tests.service.helpers import cli_refusal as refused
from tests.service.helpers import start_run

# The CLI sees only what these say: no CLADE_* variable of the machine running the tests.
CLEAN_ENV = {name: None for name in os.environ if name.startswith("CLADE_")} | {"COLUMNS": "80"}


def clade(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env={**CLEAN_ENV, **(env or {})})


def against(service: ServiceProcess, *args: str) -> Result:
    return clade("--url", service.url, "--token", service.secrets["admin_token"], *args)


@pytest.fixture(params=["sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The CLI only speaks HTTP; one database is enough here."""
    return f"sqlite:///{tmp_path / 'clade.db'}"


def run_status(service: ServiceProcess, run_id: str) -> str:
    with service.admin as client:
        return str(client.get(f"/api/runs/{run_id}").json()["status"])


def test_an_id_is_one_path_segment_and_addresses_nothing_else(
    live_service: ServiceProcess, tmp_path: Path
) -> None:
    service = live_service
    seed = import_seed(service, tmp_path)
    first, second = start_run(service, seed), start_run(service, seed)

    # A run's top-k tar, or the agent's JSON detail, is not written as the agent's export.
    for wrong in [f"../runs/{first}", f"{seed}?x=1", f"{seed}/export", "..", "."]:
        out = tmp_path / "export.tar.gz"
        line = refused(against(service, "agent", "export", wrong, "--out", str(out)))
        assert line.startswith("error: GET /api/agents/") and "failed (404)" in line, line
        assert not out.exists()
    assert refused(against(service, "agent", "show", f"{seed}?x=1")).startswith(
        f"error: GET /api/agents/{seed}%3Fx%3D1 failed (404)"
    )
    assert refused(against(service, "run", "show", "..")).startswith(
        "error: GET /api/runs/%2E%2E failed (404)"
    )

    # Cancelling "../runs/FIRST/../SECOND" cancels neither run.
    cancel = refused(against(service, "run", "cancel", f"../runs/{first}/../{second}"))
    assert cancel.startswith("error: POST /api/runs/..%2Fruns%2F"), cancel
    assert run_status(service, first) == run_status(service, second) == "running"
    assert "cancelled" in against(service, "run", "cancel", second).stdout

    # An unknown agent for `bench run` is blamed on --agent, before any run starts.
    assert refused(against(service, "bench", "run", "clade-mini", "--agent", "nope"), code=2) == (
        "error: --agent: no agent 'nope' in the archive (`clade seed import` adds one)"
    )
    with service.admin as client:
        assert client.get("/api/runs").json()["total"] == 2


@pytest.mark.parametrize(
    "args",
    [
        ["run", "show", ""],
        ["run", "export", "", "--out", "x.tar.gz"],
        ["agent", "show", ""],
        ["worker-token", "revoke", ""],
    ],
)
def test_an_empty_id_is_refused_naming_the_argument(args: list[str]) -> None:
    name = {"run": "RUN_ID", "agent": "AGENT_ID", "worker-token": "TOKEN_ID"}[args[0]]
    with closed_port() as port:  # nothing is sent
        line = refused(clade("--url", f"http://127.0.0.1:{port}", "--token", "t", *args), code=2)
    assert line == f"error: {name} is empty: give an id"


class _Odd(BaseHTTPRequestHandler):
    """A server that is not the Clade service: a redirect for /api/runs/..., HTML for the rest."""

    def do_GET(self) -> None:
        if self.path.startswith("/api/runs/"):
            self.send_response(307)
            self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"<html>hello</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def odd_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Odd)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_or_an_answer_that_is_not_json_is_named_with_its_status() -> None:
    with odd_server() as url:
        redirect = refused(clade("--url", url, "run", "show", "abc"))
        html = refused(clade("--url", url, "run", "list"))
    assert redirect == (
        "error: GET /api/runs/abc: the service answered 307 (a redirect to /elsewhere),"
        " not the answer asked for"
    )
    assert html == "error: GET /api/runs: the service answered 200 with text/html, not JSON"


@pytest.mark.parametrize(
    ("options", "env", "message"),
    [
        (["--url", "garbage"], {}, "error: --url 'garbage': give the service's http:// or https:// URL"),
        (["--url", "ftp://x"], {}, "error: --url 'ftp://x': give the service's http:// or https:// URL"),
        (["--url", "http://[::1"], {}, "error: --url 'http://[::1': not a URL"),
        ([], {"CLADE_SERVICE_URL": "garbage"}, "error: CLADE_SERVICE_URL 'garbage': give the service's"),
        (["--token", "a\nb"], {}, "error: --token: the token holds a line break; a token is printable ASCII"),
        (["--token", "é"], {}, "error: --token: the token holds a character that is not ASCII;"),
        (["--token", "a b"], {}, "error: --token: the token holds a space;"),
        ([], {"CLADE_ADMIN_TOKEN": "é"}, "error: CLADE_ADMIN_TOKEN: the token holds a character that is not"),
    ],
)
def test_bad_connection_options_are_named(options: list[str], env: dict[str, str], message: str) -> None:
    with closed_port() as port:
        env = {"CLADE_SERVICE_URL": f"http://127.0.0.1:{port}"} | env
        line = refused(clade(*options, "run", "pause", "some-run", env=env), code=2)
    assert line.startswith(message), line
    assert "é" not in line  # a token is a secret: what is wrong is named, not the token


def test_export_output_paths_that_cannot_be_written(live_service: ServiceProcess, tmp_path: Path) -> None:
    service = live_service
    seed = import_seed(service, tmp_path / "seed")
    run_id = start_run(service, seed)
    folder = tmp_path / "out"
    folder.mkdir()
    a_file = folder / "a.tar.gz"
    a_file.write_bytes(b"kept")
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    cases = [
        (folder, f"error: {folder}: is a directory; give a file name"),
        (Path(""), "error: .: is a directory; give a file name"),
        (fifo, f"error: {fifo}: not a regular file (a FIFO, device or socket is not written)"),
        (tmp_path / "missing" / "a.tgz", f"error: {tmp_path / 'missing' / 'a.tgz'}: no such folder"),
        (a_file / "x", f"error: {a_file / 'x'}: a part of the path is a file, not a folder"),
    ]
    for out, message in cases:
        for command in (["agent", "export", seed], ["run", "export", run_id]):
            line = refused(against(service, *command, "--out", str(out)))
            assert line.startswith(message), (command, line)
    assert a_file.read_bytes() == b"kept"
    # A failed download leaves the file as it was, and nothing beside it.
    missing = refused(against(service, "agent", "export", "f" * 40, "--out", str(a_file)))
    assert missing.startswith(f"error: GET /api/agents/{'f' * 40}/export failed (404)"), missing
    assert a_file.read_bytes() == b"kept"
    assert sorted(p.name for p in folder.iterdir()) == ["a.tar.gz", "fifo"]

    # An export that writes an empty file says so.
    patches = folder / "seed.patches"
    empty = against(service, "agent", "export", seed, "--format", "patches", "--out", str(patches))
    assert empty.exit_code == 0, empty.stderr
    assert patches.read_bytes() == b""
    assert empty.stderr.startswith(f"warning: {patches} is empty: agent {seed} has no patches")
    top = folder / "top.tar.gz"
    nothing = against(service, "run", "export", run_id, "--out", str(top))
    assert nothing.exit_code == 0, nothing.stderr
    assert nothing.stderr.startswith(f"warning: {top} holds no agents: run {run_id} has admitted none yet")
    link = folder / "link.tar.gz"
    link.symlink_to(a_file)
    exported = against(service, "agent", "export", seed, "--out", str(link))
    assert exported.exit_code == 0 and exported.stderr == ""
    assert link.is_symlink() and a_file.read_bytes()[:2] == b"\x1f\x8b"  # gzip, where the link points

    # A full disk: one line, and no partial file.
    with small_tmpfs(tmp_path / "small", 1) as small:
        fill_disk(small / "ballast")
        full = small / "seed.tar.gz"
        assert refused(against(service, "agent", "export", seed, "--out", str(full))) == (
            f"error: {full}: cannot be written (No space left on device); nothing was written"
        )
        assert [p.name for p in small.iterdir()] == ["ballast"]
