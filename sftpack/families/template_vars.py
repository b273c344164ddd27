"""What a chat template reads besides the messages: its clock, and the variables a profile gives it.

A template that reads the clock (``strftime_now("%d %b %Y")``, ``now()``) writes the day it runs into every
conversation, so its rows would change with the day they are built. Such a template is rendered with the clock
pinned to the profile's ``template_options.date``; a profile without one is refused before any row is written.
The other ``template_options`` of a ``jinja`` profile are handed to the template as variables (``enable_thinking``,
``reasoning_effort``, ...), as ``apply_chat_template(..., **kwargs)`` hands them.

    >>> clock_reads("{{ strftime_now('%d %b %Y') }}{{ messages[0].content }}")
    ['strftime_now']
    >>> variables = jinja_variables({"date": "2026-12-04", "enable_thinking": False})
    >>> variables["strftime_now"]("%d %b %Y"), variables["enable_thinking"]
    ('04 Dec 2026', False)
"""

from __future__ import annotations

import datetime
import re

from sftpack.base.errors import UsageError
from sftpack.families.render import TemplateError

CLOCKS = ("strftime_now", "now")  # transformers' clock, and the name other Jinja hosts give theirs
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CALL = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(CLOCKS) + r")\s*\(")


def clock_reads(template: str) -> list[str]:
    """The clock functions ``template`` calls (none: its text does not depend on the day). Read from its text: a
    name in a string literal counts too, which asks for a date the rows then do not need, never the reverse."""
    return sorted(set(_CALL.findall(template)))


def check_date(date) -> str:
    """``date`` as ``YYYY-MM-DD``; a YAML date arrives as a ``datetime.date``."""
    if isinstance(date, datetime.date):
        date = date.isoformat()
    try:
        if not isinstance(date, str) or datetime.date.fromisoformat(date).isoformat() != date:
            raise ValueError
    except ValueError:
        raise ValueError(f"the pinned date must be YYYY-MM-DD, got {date!r}") from None
    return date


def clock_variables(date: str) -> dict:
    """The template's clock pinned to ``date`` (midnight): what it reads instead of the day it runs."""
    day = datetime.datetime.combine(datetime.date.fromisoformat(check_date(date)), datetime.time())
    return {"strftime_now": day.strftime, "now": lambda: day}


class ClockRefused:
    """A clock the profile does not pin: calling it is refused (the template's error for the conversation), so that no
    row holds the day it was built, whichever way the template reaches the clock (the text check reads only direct
    calls: ``{% set c = strftime_now %}{{ c('%Y') }}`` passes it)."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise TemplateError(f"the chat template reads the clock ({self.name}) and the profile pins no date, so its rows "
                            "would depend on the day they are built: add template_options: {date: YYYY-MM-DD}")


def refused_clock() -> dict:
    """Every clock name bound to :class:`ClockRefused`: what a template without a pinned date reads."""
    return {name: ClockRefused(name) for name in CLOCKS}


def jinja_variables(options: dict) -> dict:
    """A ``jinja`` profile's ``template_options`` as the template's variables: ``date`` pins the clock, and without
    one the clock is refused."""
    variables = {k: v for k, v in options.items() if k != "date"}
    variables.update(clock_variables(options["date"]) if "date" in options else refused_clock())
    return variables


def check_jinja_options(options: dict, path) -> dict:
    """A ``jinja`` profile's ``template_options``: variable names, and ``date`` a ``YYYY-MM-DD``."""
    for name, value in options.items():
        if not _NAME.match(str(name)):
            raise UsageError(f"{path}: key 'template_options.{name}': not a template variable name (letters, digits, _)")
    if "date" in options:
        try:
            options = {**options, "date": check_date(options["date"])}
        except ValueError as e:
            raise UsageError(f"{path}: key 'template_options.date': {e}") from None
    return dict(options)


def unpinned_clock(template: str, variables: dict, called=()) -> list[str]:
    """The clock functions that ``template`` calls, by its text or in ``called`` (those a render called:
    :func:`sftpack.families.jinja.clock_calls`), and that ``variables`` do not pin."""
    unpinned = {name for name in CLOCKS if isinstance(variables.get(name, ClockRefused(name)), ClockRefused)}
    return sorted(unpinned & (set(clock_reads(template)) | set(called)))


def options_text(options: dict) -> str:
    """``date 2026-12-04 (the template's clock pinned), enable_thinking false``: what the record says."""
    parts = []
    for name, value in options.items():
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        parts.append(f"{name} {shown}" + (" (the template's clock pinned)" if name == "date" else ""))
    return ", ".join(parts)
