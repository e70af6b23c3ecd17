"""Read SWE-bench instances: a local JSON, JSONL or parquet file, or a dataset by name.

A name goes to the `datasets` package, in a child process killed after `timeout_s`:
without network the hub client retries for a long time, and a run must fail with a
message rather than hang.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.base import BenchmarkError
from benchmarks.userfiles import UserFileError, check_regular, name_problem, read_named_text

Row = dict[str, Any]

ALIASES = {
    "full": "SWE-bench/SWE-bench",
    "lite": "SWE-bench/SWE-bench_Lite",
    "verified": "SWE-bench/SWE-bench_Verified",
    "multilingual": "SWE-bench/SWE-bench_Multilingual",
    "multimodal": "SWE-bench/SWE-bench_Multimodal",
    "live": "SWE-bench-Live/SWE-bench-Live",
}
FILE_SUFFIXES = (".json", ".jsonl", ".parquet")
# SWE-bench's largest split is a few hundred MB as JSON; past this a file is refused before
# it is read, rather than the service's memory going to it.
MAX_DATASET_BYTES = 1 << 30
OFFLINE_HINT = (
    "To run offline, save the dataset as a JSON, JSONL or parquet file where there is network "
    "and pass its path as `dataset`; or set HF_HUB_OFFLINE=1 to read only the local cache."
)

# Read from the local cache only: the hub client and the datasets package both obey these.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
PREPARE_HINT = (
    "The service reads named datasets from this machine's local cache only, never downloading "
    "inside a request: fetch it ahead with `clade bench prepare swebench --option dataset={name}` "
    "on the service's machine, or pass a JSON, JSONL or parquet file as `dataset`."
)


class DatasetError(BenchmarkError, ValueError):
    """The instances cannot be read: missing file, bad content, unreachable dataset."""


def load_rows(
    dataset: str, *, split: str = "test", timeout_s: float = 60.0, offline: bool = False
) -> list[Row]:
    """Every instance of `dataset`: a file path, a folder holding `<split>.parquet|.jsonl|.json`,
    or a dataset name (e.g. "SWE-bench/SWE-bench_Lite", or an alias such as "lite"); `offline`:
    a name is read from the local cache only (the service never downloads inside a request)."""
    path = Path(dataset).expanduser()
    if path.suffix.lower() in FILE_SUFFIXES:
        return read_file(path)
    if path.is_dir():
        for suffix in FILE_SUFFIXES[::-1]:
            if (path / f"{split}{suffix}").is_file():
                return read_file(path / f"{split}{suffix}")
        raise DatasetError(f"{path} holds no {split}.parquet, {split}.jsonl or {split}.json")
    name = ALIASES.get(dataset.strip().lower(), dataset)
    return load_named(name, split=split, timeout_s=timeout_s, offline=offline)


def read_file(path: Path) -> list[Row]:
    """The rows of a JSON, JSONL or parquet file; DatasetError, one line naming the file, when
    it is missing, not a regular file (a FIFO would hang the read), too large, not UTF-8, not
    JSON, not a list of objects, empty, or has an instance_id with a control character."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            check_regular(path)
            rows = _read_parquet(path)
        else:
            text = read_named_text(path, max_bytes=MAX_DATASET_BYTES)
    except FileNotFoundError:
        raise DatasetError(f"dataset file {path} does not exist") from None
    except UserFileError as exc:
        raise DatasetError(f"dataset file {exc}") from exc
    if suffix == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                rows.append(_json(line, f"{path}:{number}"))
    elif suffix != ".parquet":
        rows = _json(text, str(path))
        if not isinstance(rows, list):
            raise DatasetError(f"{path}: expected a JSON list of instances, found {type(rows).__name__}")
    if not rows:
        raise DatasetError(f"{path}: holds no instances")
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: instance {index} is a {type(row).__name__}, not an object")
        instance_id = row.get("instance_id")
        problem = name_problem(instance_id) if isinstance(instance_id, str) else None
        if problem is not None:
            raise DatasetError(f"{path}: instance {index}: instance_id {problem}")
    return rows


def load_named(name: str, *, split: str, timeout_s: float, offline: bool = False) -> list[Row]:
    """A dataset from the hub (or its local cache), through the `datasets` package.

    It loads in a child process, killed at `timeout_s`: the hub client retries for long
    without network, and a thread could not be stopped.
    """
    _optional("datasets", f"loading the dataset {name!r} needs the datasets package")
    with tempfile.TemporaryDirectory(prefix="clade-swebench-dataset-") as tmp:
        out = Path(tmp) / "rows.jsonl"
        env = os.environ | OFFLINE_ENV if offline else None
        child = subprocess.Popen(
            loader_command(name, split, out),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            _, stderr = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise DatasetError(
                f"the dataset {name!r} (split {split!r}) did not load within {timeout_s:g}s; is there "
                f"network? {OFFLINE_HINT}"
            ) from None
        if child.returncode != 0:
            why = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit code {child.returncode}"
            hint = PREPARE_HINT.format(name=name) if offline else OFFLINE_HINT
            raise DatasetError(f"cannot load the dataset {name!r} (split {split!r}): {why}. {hint}")
        return read_file(out)


def loader_command(name: str, split: str, out: Path) -> list[str]:
    """The child process that writes the dataset's rows to `out` as JSONL (see `_main`)."""
    return [sys.executable, "-m", __name__, name, split, str(out)]


def _main(argv: list[str]) -> int:
    name, split, out = argv
    datasets = importlib.import_module("datasets")
    try:
        rows = datasets.load_dataset(name, split=split)
    except (OSError, ValueError) as exc:  # ConnectionError, DatasetNotFoundError, a bad split
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    with open(out, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(dict(row), default=str) + "\n")
    return 0


def _read_parquet(path: Path) -> list[Row]:
    try:
        parquet = importlib.import_module("pyarrow.parquet")
    except ImportError:
        try:
            pandas = importlib.import_module("pandas")
        except ImportError:
            raise DatasetError(f"reading {path} needs pyarrow (or pandas): pip install pyarrow") from None
        try:
            frame = pandas.read_parquet(path)
        except ImportError as exc:
            raise DatasetError(f"reading {path} needs pyarrow: pip install pyarrow ({exc})") from exc
        records: list[Row] = frame.to_dict("records")
        return records
    rows: list[Row] = parquet.read_table(path).to_pylist()
    return rows


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}: not valid JSON: {exc}") from exc
    except RecursionError as exc:
        # The decoder recurses per level: a few thousand `[` would otherwise be a traceback.
        raise DatasetError(f"{where}: not valid JSON: nested too deep") from exc


def _optional(module: str, needed_for: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise DatasetError(f"{needed_for}: pip install {module}") from None


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
