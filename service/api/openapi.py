"""Dump the service's OpenAPI schema without a running server (the dashboard's types come from it).

`create_app` migrates a database and opens an archive, so the schema is built against a
throwaway SQLite data directory that is removed afterwards; no `CLADE_*` variable can point
it at a real database.

    python -m service.api.openapi [--out web/openapi.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from contracts.settings import Settings


def build_schema() -> dict[str, Any]:
    from service.api.app import create_app

    with tempfile.TemporaryDirectory(prefix="clade-openapi-") as tmp:
        data_dir = Path(tmp)
        placeholder = SecretStr("schema-only")
        settings = Settings(
            data_dir=data_dir,
            database_url=f"sqlite:///{data_dir / 'schema.db'}",
            broker_url=None,
            run_driver_enabled=False,
            admin_token=placeholder,
            worker_token=placeholder,
            read_token=placeholder,
        )
        app = create_app(settings)
        schema = app.openapi()
        app.state.services.engine.dispose()
    return schema


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, help="write here instead of standard output")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # migration chatter must not end up in the JSON on stdout
    text = json.dumps(build_schema(), indent=1, sort_keys=True) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
