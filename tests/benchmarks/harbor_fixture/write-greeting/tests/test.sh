#!/bin/bash
# Binary reward: 1 when /app/greeting.txt greets the name the environment ships.
mkdir -p /logs/verifier
name="$(cat /app/data/name.txt)"
if [ "$(cat /app/greeting.txt 2>/dev/null)" = "Hello, ${name}!" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "greeting.txt is missing or wrong"
  echo 0 > /logs/verifier/reward.txt
fi
exit 0
