"""Shared by the hostile agents: what to look for, and how to report what was found.

The test writes `targets.json` next to this file. Whatever an agent found goes to
`FINDINGS.json` in the repository (so it lands in the diff the host takes), to stdout
and to the trajectory file: if anything leaked, every recorded channel carries it.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

TARGETS: dict[str, Any] = json.loads(Path(__file__).with_name("targets.json").read_text())
REPO = Path(os.environ.get("CLADE_REPO", "/clade/repo"))
OUT = Path(os.environ.get("CLADE_OUTPUT_DIR", "/clade/out"))
SKIP_ROOTS = ("/proc", "/sys", "/dev")
MAX_FILE_BYTES = 4_000_000


def hidden_markers() -> list[str]:
    """Text of the hidden tests; stored encoded, like the key's prefix, so that this agent's own
    files never match."""
    return [base64.b64decode(item).decode() for item in TARGETS["hidden_b64"]]


def secret_prefix() -> str:
    return base64.b64decode(TARGETS["secret_prefix_b64"]).decode()


def refused(exc: BaseException) -> str:
    return f"refused: {type(exc).__name__}: {exc}"


def report(findings: dict[str, Any], *, trajectory: bool = True) -> None:
    text = json.dumps(findings, sort_keys=True, default=str)
    (REPO / "FINDINGS.json").write_text(text + "\n")
    if trajectory:
        (OUT / "trajectory.json").write_text(json.dumps({"findings": findings}, default=str))
    print("FINDINGS " + text, flush=True)


def excerpt(data: bytes, needle: bytes) -> str:
    at = data.find(needle)
    return data[max(0, at - 80) : at + len(needle) + 80].decode(errors="replace")


def search_files(needles: list[str], root: str = "/") -> dict[str, Any]:
    """Every regular file this process can read (outside /proc, /sys, /dev), searched for `needles`."""
    wanted = [needle.encode() for needle in needles]
    hits: list[dict[str, str]] = []
    files = 0
    unreadable = 0
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if os.path.join(folder, d) not in SKIP_ROOTS]
        for name in filenames:
            path = os.path.join(folder, name)
            try:
                if not os.path.isfile(path) or os.path.islink(path):
                    continue
                with open(path, "rb") as handle:
                    data = handle.read(MAX_FILE_BYTES)
            except OSError:
                unreadable += 1
                continue
            files += 1
            for needle in wanted:
                if needle in data:
                    hits.append({"path": path, "excerpt": excerpt(data, needle)})
    return {"hits": hits, "files_read": files, "unreadable": unreadable}


def search_processes(needles: list[str]) -> dict[str, Any]:
    """The environment and command line of every process this one can see."""
    wanted = [needle.encode() for needle in needles]
    hits: list[dict[str, str]] = []
    environs: dict[str, str] = {}
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        for part in ("environ", "cmdline"):
            try:
                data = Path(f"/proc/{pid}/{part}").read_bytes()
            except OSError as exc:
                environs[f"{pid}/{part}"] = refused(exc)
                continue
            environs[f"{pid}/{part}"] = data.replace(b"\0", b" ").decode(errors="replace")
            hits.extend(
                {"path": f"/proc/{pid}/{part}", "excerpt": excerpt(data, n)} for n in wanted if n in data
            )
    return {"hits": hits, "seen": environs}


def gateway(path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """One request to the LLM endpoint the sandbox offers: status, headers and body as seen here."""
    url = os.environ["OPENAI_BASE_URL"].rstrip("/") + path
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        headers={
            "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return {
                "status": response.status,
                "headers": dict(response.headers),
                "body": response.read().decode(),
            }
    except urllib.error.HTTPError as exc:
        return {"status": exc.code, "headers": dict(exc.headers), "body": exc.read().decode(errors="replace")}
    except OSError as exc:
        return {"status": None, "error": refused(exc)}


def chat(text: str) -> dict[str, Any]:
    model = os.environ.get("CLADE_MODEL", "scripted")
    return gateway("/chat/completions", {"model": model, "messages": [{"role": "user", "content": text}]})
