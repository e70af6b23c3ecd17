"""Make `import agent` work however pytest is started (from the agent root or above it)."""

import sys
from pathlib import Path

AGENT_ROOT = str(Path(__file__).resolve().parents[1])
if AGENT_ROOT not in sys.path:
    sys.path.insert(0, AGENT_ROOT)
