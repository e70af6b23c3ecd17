"""swebench: SWE-bench instances, run in their instance images and graded by the swebench package.

Supported versions and instance formats, and how a task runs: see README.md here.
"""

from benchmarks.swebench.benchmark import SWEbench
from benchmarks.swebench.dataset import DatasetError, load_rows
from benchmarks.swebench.export import Prediction, predictions_jsonl
from benchmarks.swebench.harness import (
    SUPPORTED,
    Harness,
    HarnessUnavailable,
    UnsupportedInstance,
    load_harness,
)
from benchmarks.swebench.options import SWEbenchOptions
from benchmarks.swebench.patches import GradedPatch, graded_patch, is_test_path
from benchmarks.swebench.tasks import SWEbenchTask

__all__ = [
    "SUPPORTED",
    "DatasetError",
    "GradedPatch",
    "Harness",
    "HarnessUnavailable",
    "Prediction",
    "SWEbench",
    "SWEbenchOptions",
    "SWEbenchTask",
    "UnsupportedInstance",
    "graded_patch",
    "is_test_path",
    "load_harness",
    "load_rows",
    "predictions_jsonl",
]
