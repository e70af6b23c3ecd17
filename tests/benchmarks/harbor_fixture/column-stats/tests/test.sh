#!/bin/bash
# Fractional reward: half for the total, half for the highest price.
mkdir -p /logs/verifier
python3 /tests/score.py > /logs/verifier/reward.json
exit 0
