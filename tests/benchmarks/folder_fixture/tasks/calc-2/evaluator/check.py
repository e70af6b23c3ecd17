"""Checks calc.clamp; prints one JSON verdict as its last line.

The repository's code runs in a child process, so nothing it prints or does can
pass for this script's verdict.
"""

import json
import subprocess
import sys

CASES = {"above": ("5, 0, 3", "3"), "below": ("-2, 0, 3", "0"), "inside": ("2, 0, 3", "2")}
tests = {}
for name, (args, expected) in CASES.items():
    done = subprocess.run(
        [sys.executable, "-c", f"import calc; print(calc.clamp({args}))"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    tests[f"clamp_{name}"] = "PASSED" if done.stdout.strip() == expected else "FAILED"
passed = sum(status == "PASSED" for status in tests.values())
verdict = {"resolved": passed == len(CASES), "reason": f"{passed}/{len(CASES)} clamp cases", "tests": tests}
print(json.dumps(verdict))
