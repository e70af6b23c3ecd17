import csv
import json

with open("/app/prices.csv") as handle:
    prices = [float(row["price"]) for row in csv.DictReader(handle)]
try:
    with open("/app/stats.json") as handle:
        stats = json.load(handle)
except (OSError, ValueError):
    stats = {}
points = 0.0
if isinstance(stats, dict):
    if abs(float(stats.get("total", "nan")) - sum(prices)) < 1e-6:
        points += 0.5
    if abs(float(stats.get("highest", "nan")) - max(prices)) < 1e-6:
        points += 0.5
print(json.dumps({"reward": points}))
