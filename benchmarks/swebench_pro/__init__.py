"""swebench-pro: SWE-bench Pro rows, run in their instance images and graded by each
instance's own run script and output parser (the parser runs only inside a sandbox).

How a row is read and graded: docs/swebench-pro.md.
"""

from benchmarks.swebench_pro.benchmark import SWEbenchPro
from benchmarks.swebench_pro.export import ProPrediction, pro_predictions_json
from benchmarks.swebench_pro.grading import ParserOutput, decide, read_output, staged_test_paths
from benchmarks.swebench_pro.options import SWEbenchProOptions
from benchmarks.swebench_pro.tasks import SWEbenchProTask, UnsupportedRow, image_name, text_list, to_task

__all__ = [
    "ParserOutput",
    "ProPrediction",
    "SWEbenchPro",
    "SWEbenchProOptions",
    "SWEbenchProTask",
    "UnsupportedRow",
    "decide",
    "image_name",
    "pro_predictions_json",
    "read_output",
    "staged_test_paths",
    "text_list",
    "to_task",
]
