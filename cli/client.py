"""A small HTTP client for the service's API, with errors a person can act on.

Every path the client sends is an `ApiPath`, made by `api_path`, which puts each value a person
gave (an id) into the URL as one percent-encoded path segment: `../runs/X`, `X?y=1` or `.`
reach the service as the id they are, never as another resource. An empty value is refused
there, naming the argument. The client reads an answer as JSON only when the service says it is
JSON; a redirect or any other answer is one error line with its status.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import httpx


class CliError(Exception):
    """A failure to report to the user in one line, then exit non-zero; `http_status` is the HTTP
    status of the service's refusal, when it is one."""

    exit_code = 1

    def __init__(self, message: str, http_status: int | None = None) -> None:
        super().__init__(message)
        self.http_status = http_status


class UsageError(CliError):
    """A command given a wrong argument or option (as a usage error, exit code 2)."""

    exit_code = 2


class ApiPath(str):
    """A path of the API whose user-given parts are each one encoded segment (see `api_path`)."""


def api_path(template: str, **values: str) -> ApiPath:
    """`api_path("/api/runs/{run_id}/agents", run_id=value)`: the template with each value put in
    as one path segment. The keyword is the argument's name as `--help` shows it, upper-cased
    (`RUN_ID`), in the error for an empty value."""
    for name, value in values.items():
        if not value:
            raise UsageError(f"{name.upper()} is empty: give an id")
    return ApiPath(template.format(**{name: segment(value) for name, value in values.items()}))


def segment(value: str) -> str:
    """`value` as one path segment: every reserved character percent-encoded (`/` too), and the
    dots of `.` and `..`, which a URL would otherwise read as "this" and "the parent" folder."""
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def check_url(url: str, option: str) -> str:
    """The service URL, or a UsageError naming `option` when it is no http(s) URL with a host."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise UsageError(f"{option} {url!r}: not a URL ({exc})") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise UsageError(
            f"{option} {url!r}: give the service's http:// or https:// URL, e.g. http://127.0.0.1:8420"
        )
    return url


def check_token(token: str, option: str) -> str:
    """The token, or a UsageError naming `option` when it cannot be sent in an HTTP header."""
    for char in token:
        problem = (
            "a line break"
            if char in "\r\n"
            else "a space"
            if char in " \t"
            else "a control character"
            if ord(char) < 0x20 or ord(char) == 0x7F
            else "a character that is not ASCII"
            if ord(char) > 0x7E
            else None
        )
        if problem is not None:
            # The token is a secret: what is wrong with it is named, not the token.
            raise UsageError(f"{option}: the token holds {problem}; a token is printable ASCII")
    return token


class ApiClient:
    def __init__(
        self,
        base_url: str,
        token: str | None,
        timeout: float = 60.0,
        *,
        url_option: str = "--url",
        token_option: str = "--token",
    ) -> None:
        self.base_url = check_url(base_url, url_option).rstrip("/")
        headers = {"Authorization": f"Bearer {check_token(token, token_option)}"} if token else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def get(self, path: ApiPath, **params: Any) -> Any:
        return self._json("GET", path, params=params)

    def post(self, path: ApiPath, json: Any = None, **kwargs: Any) -> Any:
        return self._json("POST", path, json=json, **kwargs)

    def delete(self, path: ApiPath) -> Any:
        return self._json("DELETE", path)

    def download(self, path: ApiPath, **params: Any) -> bytes:
        """A small answer (a diff) whole; files go through `download_to`."""
        with self._request("GET", path, params=params) as response:
            return response.read()

    def download_to(self, path: ApiPath, out: Path, **params: Any) -> int:
        """Stream the answer into `out` (a new file, or a regular file it replaces), through a
        temporary file beside it renamed at the end: a failed download leaves no file. The number
        of bytes written; a CliError `<out>: ...` when `out` cannot be written. A symbolic link
        stays one: the file it points to is replaced."""
        target = out.resolve() if out.is_symlink() else out
        check_writable(target)
        with self._request("GET", path, params=params) as response, replacing(target) as file:
            for chunk in response.iter_bytes():
                file.write(chunk)
            return file.tell()

    def _json(self, method: str, path: ApiPath, **kwargs: Any) -> Any:
        with self._request(method, path, **kwargs) as response:
            response.read()
        kind = response.headers.get("content-type", "").split(";")[0].strip()
        if kind != "application/json" and not kind.endswith("+json"):
            raise CliError(
                f"{method} {path}: the service answered {response.status_code}"
                f" with {kind or 'no content type'}, not JSON"
            )
        try:
            return response.json()
        except ValueError as exc:
            raise CliError(
                f"{method} {path}: the service answered {response.status_code} with JSON that does not read"
                f" ({exc})"
            ) from exc

    @contextmanager
    def _request(self, method: str, path: ApiPath, **kwargs: Any) -> Iterator[httpx.Response]:
        """The answer, streamed; a CliError for an error, a redirect or a failed connection."""
        try:
            with self._http.stream(method, path, **kwargs) as response:
                if response.is_error or 300 <= response.status_code < 400:
                    response.read()
                    raise CliError(_failure(method, path, response), http_status=response.status_code)
                yield response
        except httpx.ConnectError as exc:
            raise CliError(
                f"cannot reach the Clade service at {self.base_url} ({exc}). "
                "Start it with `clade serve` (or `clade up`), or point --url / CLADE_SERVICE_URL at it."
            ) from exc
        except httpx.TimeoutException as exc:
            raise CliError(f"the Clade service at {self.base_url} did not answer in time") from exc
        except httpx.TransportError as exc:
            raise CliError(f"{method} {path}: the connection to {self.base_url} failed ({exc})") from exc


def _failure(method: str, path: str, response: httpx.Response) -> str:
    if response.is_error:
        return f"{method} {path} failed ({response.status_code}): {describe(response)}"
    where = response.headers.get("location")
    return (
        f"{method} {path}: the service answered {response.status_code}"
        f" (a redirect{f' to {where}' if where else ''}), not the answer asked for"
    )


def describe(response: httpx.Response) -> str:
    """The service's error detail, with field paths for validation errors."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    detail = body.get("detail") if isinstance(body, dict) else body
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if not isinstance(item, dict):
                parts.append(str(item))
                continue
            loc = [str(p) for p in item.get("loc", []) if p != "body"]
            parts.append(f"{'.'.join(loc) or '(body)'}: {item.get('msg')}")
        return "; ".join(parts)
    return str(detail)


# -- files written from an answer ------------------------------------------------------


def check_writable(out: Path) -> None:
    """A CliError `<out>: ...` unless `out` is a new file in an existing folder or a regular
    file (which is replaced): not a folder, a FIFO, a device, or a path under a file."""
    try:
        mode: int | None = os.stat(out).st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError as exc:
        raise CliError(f"{out}: a part of the path is a file, not a folder") from exc
    except OSError as exc:
        raise CliError(f"{out}: cannot be written ({exc.strerror or exc})") from exc
    if mode is not None and stat.S_ISDIR(mode):
        raise CliError(f"{out}: is a directory; give a file name")
    if mode is not None and not stat.S_ISREG(mode):
        raise CliError(f"{out}: not a regular file (a FIFO, device or socket is not written)")
    folder = out.parent
    if mode is None and not folder.is_dir():
        raise CliError(
            f"{out}: no such folder {folder}" if not folder.exists() else f"{out}: {folder} is not a folder"
        )


@contextmanager
def replacing(out: Path) -> Iterator[IO[bytes]]:
    """A temporary file beside `out`, renamed to `out` when the block ends well and removed when
    it does not; a CliError `<out>: ...` when the file cannot be made or written (a full disk)."""
    try:
        fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".part")
    except OSError as exc:
        raise CliError(f"{out}: cannot be written ({exc.strerror or exc})") from exc
    partial = Path(name)
    try:
        try:
            with open(fd, "wb") as handle:
                yield handle
                handle.flush()
                os.fchmod(handle.fileno(), _mode_for(out))
            os.replace(partial, out)
        except OSError as exc:
            raise CliError(f"{out}: cannot be written ({exc.strerror or exc}); nothing was written") from exc
    finally:
        partial.unlink(missing_ok=True)


def _mode_for(out: Path) -> int:
    """The mode `out` has, or the one a new file gets under the umask (a temporary file is 0600)."""
    try:
        return stat.S_IMODE(os.stat(out).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
