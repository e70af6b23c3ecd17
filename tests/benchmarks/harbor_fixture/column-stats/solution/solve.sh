#!/bin/bash
cd /app
python3 - <<'PY'
import csv, json
prices = [float(row["price"]) for row in csv.DictReader(open("prices.csv"))]
json.dump({"total": sum(prices), "highest": max(prices)}, open("stats.json", "w"))
PY
