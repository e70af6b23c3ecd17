"""An agent that needs nothing from the image: it reports the Python it runs on and whether
the image has a C library, uses numpy (a C++ extension, when its agent.toml requires it),
asks the model once through the openai client, and writes what it found into the
repository (so that it lands in the diff)."""

from __future__ import annotations

import json
import os
import platform
import ssl
import sys
from pathlib import Path

from openai import OpenAI

REPO = Path(os.environ["CLADE_REPO"])


def numpy_sum() -> str:
    try:
        import numpy
    except ImportError as exc:
        return f"absent: {exc}"
    return str(numpy.arange(6).reshape(2, 3).sum())


def main() -> None:
    reply = OpenAI().chat.completions.create(
        model=os.environ.get("CLADE_MODEL", "scripted"),
        messages=[{"role": "user", "content": "runtime probe"}],
    )
    found = {
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "executable": sys.executable,
        "libc": platform.libc_ver()[0],
        "ssl": ssl.OPENSSL_VERSION.split()[0],
        "image_has_libc": any(
            Path(p).exists() for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib/libc.so.6")
        ),
        "image": Path("/etc/clade-image").read_text().strip(),
        "model": reply.choices[0].message.content,
        "numpy": numpy_sum(),
    }
    (REPO / "FOUND.json").write_text(json.dumps(found, sort_keys=True) + "\n")
    print("FOUND " + json.dumps(found, sort_keys=True))


if __name__ == "__main__":
    main()
