"""spanlib: half-open intervals, business-day arithmetic and durations."""

from spanlib.days import add_business_days, business_days_between, is_business_day
from spanlib.duration import format_duration, parse_duration
from spanlib.interval import Interval, merge, total_length
from spanlib.workweek import WorkWeek

__all__ = [
    "Interval",
    "WorkWeek",
    "add_business_days",
    "business_days_between",
    "format_duration",
    "is_business_day",
    "merge",
    "parse_duration",
    "total_length",
]
