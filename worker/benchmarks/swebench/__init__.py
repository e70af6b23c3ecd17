"""swebench: SWE-bench instances, run in their instance images and graded by the swebench package.

Supported versions and instance formats, and how a task runs: see README.md here.
"""

from worker.benchmarks.swebench.benchmark import SWEbench, from_options
from worker.benchmarks.swebench.dataset import DatasetError, load_rows
from worker.benchmarks.swebench.export import Prediction, predictions_jsonl
from worker.benchmarks.swebench.harness import (
    SUPPORTED,
    Harness,
    HarnessUnavailable,
    UnsupportedInstance,
    load_harness,
)
from worker.benchmarks.swebench.options import InvalidOptions, SWEbenchOptions
from worker.benchmarks.swebench.patches import GradedPatch, graded_patch, is_test_path
from worker.benchmarks.swebench.tasks import SWEbenchTask

__all__ = [
    "SUPPORTED",
    "DatasetError",
    "GradedPatch",
    "Harness",
    "HarnessUnavailable",
    "InvalidOptions",
    "Prediction",
    "SWEbench",
    "SWEbenchOptions",
    "SWEbenchTask",
    "UnsupportedInstance",
    "from_options",
    "graded_patch",
    "is_test_path",
    "load_harness",
    "load_rows",
    "predictions_jsonl",
]
