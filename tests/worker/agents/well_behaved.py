"""A well-behaved agent: asks the (scripted) model once, makes the one-line fix, records both."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

statement = Path(os.environ["CLADE_TASK_FILE"]).read_text()
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
    data=json.dumps(
        {"model": os.environ["CLADE_MODEL"], "messages": [{"role": "user", "content": statement}]}
    ).encode(),
    headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}", "Content-Type": "application/json"},
)
with urllib.request.urlopen(request, timeout=30) as response:
    answer = json.load(response)["choices"][0]["message"]["content"]
source = Path("textkit/slug.py")
source.write_text(source.read_text().replace('r"[^a-z0-9]"', 'r"[^a-z0-9]+"'))
trajectory = {"steps": [{"statement": statement, "answer": answer, "edited": str(source)}]}
Path(os.environ["CLADE_OUTPUT_DIR"], "trajectory.json").write_text(json.dumps(trajectory))
print("fixed", source)
