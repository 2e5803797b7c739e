"""Parsers of setting values and the SQL literal of a parsed value: shared by every system's settings.

A parser takes what a user wrote (TOML value or ``lab set`` text) and returns the typed value,
or raises ``ValueError`` with what it expects (the caller adds the setting's name and help).
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["Parser", "parse_bool", "choice", "int_range", "float_range", "sql_literal"]

Parser = Callable[[Any], Any]


def parse_bool(value: Any) -> bool:
    text = str(value).strip().lower()
    if text in {"1", "on", "yes", "true"}:
        return True
    if text in {"0", "off", "no", "false"}:
        return False
    raise ValueError("expects on or off")


def _number(cast: type, lo: float, hi: float) -> Parser:
    what = f"{'an integer' if cast is int else 'a number'} from {lo:,} to {hi:,}".replace(",", "")

    def parse(value: Any):
        try:
            x = cast(str(value))
        except ValueError:
            raise ValueError(f"expects {what}") from None
        if not lo <= x <= hi:
            raise ValueError(f"expects {what}")
        return x

    return parse


def int_range(lo: int, hi: int) -> Parser:
    return _number(int, lo, hi)


def float_range(lo: float, hi: float) -> Parser:
    return _number(float, lo, hi)


def choice(*options: str) -> Parser:
    def parse(value: Any) -> str:
        text = str(value).strip()
        for option in options:
            if text.lower() == option.lower():
                return option
        raise ValueError(f"expects one of {', '.join(options)}")

    return parse


def sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"
