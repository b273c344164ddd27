"""``--color`` of the commands that print rows: ANSI colour always, never, or when stdout is a terminal."""

from __future__ import annotations

import sys


def use_color(args) -> bool:
    """``--color``: always, never, or auto (when stdout is a terminal)."""
    return args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
