"""spanlib: half-open intervals and business-day arithmetic."""

from spanlib.days import add_business_days, business_days_between, is_business_day
from spanlib.interval import Interval, merge, total_length

__all__ = [
    "Interval",
    "add_business_days",
    "business_days_between",
    "is_business_day",
    "merge",
    "total_length",
]
