"""Dates and times a text states (absolute, month-year, times of day).

Part of the registry grounding's rules (:mod:`callscope.saag.normalise`)."""

from __future__ import annotations

import re

from callscope.core.text import may_hold
from callscope.saag.normalise.numbers import ANY_DIGIT, WORD_TOKEN

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        )
    )
    for m in names
}
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: what every month name of :data:`_MONTHS` starts with: a text without one names no month
_MONTH_STARTS = frozenset(m[:3] for m in _MONTHS)
_ORD = r"(?:st|nd|rd|th)?"
_Y_FIRST = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_Y_LAST = re.compile(r"(?<!\d)(\d{1,2})[-/.](\d{1,2})[-/.](\d{4}|\d{2})(?!\d)")
_COMPACT_DATE = re.compile(r"(?<!\d)(\d{4})-?(\d{2})(\d{2})(?!\d)")  # "20230101", "2023-0101"
#: what :data:`_Y_FIRST` and :data:`_Y_LAST` hold, and :data:`_COMPACT_DATE`: simple patterns
#: that scan fast (no look-behind at every character), tried first
_SEPARATED = re.compile(r"\d[-/.]\d")
_FOUR_DIGITS = re.compile(r"\d\d\d\d")
_MONTH_DAY = re.compile(
    rf"\b({_MONTH_RE})\.?[\s.]?(?:the\s)?(\d{{1,2}}){_ORD}(?!\d)(?:,?\s?(\d{{4}}))?", re.I
)
_DAY_MONTH = re.compile(
    rf"\b(\d{{1,2}}){_ORD}\s(?:of\s)?(?:this\s)?({_MONTH_RE})\b\.?(?:,?\s(\d{{4}}))?", re.I
)
_YEAR_MONTH_DAY = re.compile(rf"\b(\d{{4}})\s+({_MONTH_RE})\.?\s+(\d{{1,2}}){_ORD}\b", re.I)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
_MONTH_YEAR = re.compile(rf"\b({_MONTH_RE})\.?,?\s+(?:of\s+)?(\d{{4}})(?!\d)", re.I)
_DAY_BEFORE = re.compile(r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:the\s+)?$", re.I)
_NUMERIC_MONTH_YEAR = re.compile(
    r"(?<![\d/.-])(?:(\d{1,2})[/-](\d{4})|(\d{4})[/-](\d{1,2}))(?![\d/.-])"
)
#: a whole value naming a month of a year: "04-2022", "2022/04", "2022-04-01" (its first day)
_VALUE_MONTH_YEAR = re.compile(
    r"(\d{1,2})[-/.](\d{4})|(\d{4})[-/.](\d{1,2})|(\d{4})-(\d{1,2})-0?1(?:T00:00(?::00)?Z?)?"
)
_TIME_12 = re.compile(r"(?<!\d)(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?\s?m\b\.?", re.I)
#: what :data:`_TIME_12` holds ("a", "p" and "m" have no other case under ``re.I``), tried first
_TIME_12_SHAPE = re.compile(r"\d(?:[:.]\d\d)?\s*[aApP]\.?\s?[mM]")
_TIME_WORDS = re.compile(
    r"(?<!\d)(\d{1,2})(?::(\d{2}))?\s(?:o'clock\s)?in\sthe\s(morning|afternoon|evening|night)\b",
    re.I,
)
#: what :data:`_TIME_WORDS` needs one of
_DAY_PARTS = ("morning", "afternoon", "evening", "night")
_NOON = re.compile(r"\b(noon|midday)\b", re.I)
_NOON_WORDS = ("noon", "midday")
_TIME_24 = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::\d{2})?(?![\d])")
_VALUE_TIME = re.compile(
    r"(?:^|[T\s])(\d{1,2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$"
)

Date = tuple[int | None, int, int]
#: a stated duration: "3 nights", "2 hours", "for 90 mins", "duration 3 hrs"
_DURATION = re.compile(
    r"(?<![\w.:])(\d{1,3})\s?(nights?|days?|weeks?|hours?|hrs?|minutes?|mins?)\b", re.I
)
_DURATION_MINUTES = {"n": 24 * 60, "d": 24 * 60, "w": 7 * 24 * 60, "h": 60, "m": 1}


def _month_number(name: str) -> int | None:
    """The month a name the patterns matched names, or ``None``: they match case-insensitively,
    and so also read letters that only fold to a month's ("ſeptember" with a long s, a Kelvin
    sign for k, a dotless i), which model text may hold: never a ``KeyError``."""
    return _MONTHS.get(name.casefold())


#: a duration moves the dates (or times) of a text that states at most this many of them: a
#: text of many dates and one duration ("6 days") would otherwise state a date six days after
#: each of them, most of them by chance
MAX_MOVED = 2


def durations(text: str) -> tuple[int, ...]:
    """The durations ``text`` states, in minutes ("3 nights" -> 4320, "2 hours" -> 120; one
    regex scan): a date or time it also states, moved by one of them, is stated too
    (:func:`relative_dates`, :func:`time_evidence`)."""
    if ANY_DIGIT.search(text) is None:
        return ()
    return tuple(
        int(m.group(1)) * _DURATION_MINUTES[m.group(2)[0].lower()] for m in _DURATION.finditer(text)
    )


def _valid(y: int | None, m: int, d: int) -> bool:
    return 1 <= m <= 12 and 1 <= d <= 31 and (y is None or 1000 <= y <= 9999)


def _year(y: str) -> int:
    v = int(y)
    return v + 2000 if len(y) == 2 else v


def _numeric_dates(text: str) -> set[Date]:
    out: set[Date] = set()
    if _SEPARATED.search(text) is not None:  # what both separated forms hold
        for m in _Y_FIRST.finditer(text):
            y, a, b = int(m.group(1)), int(m.group(2)), int(m.group(3))
            out |= {x for x in ((y, a, b), (y, b, a)) if _valid(*x)}
        for m in _Y_LAST.finditer(text):
            a, b, y = int(m.group(1)), int(m.group(2)), _year(m.group(3))
            out |= {x for x in ((y, a, b), (y, b, a)) if _valid(*x)}
    for m in _COMPACT_DATE.finditer(text) if _FOUR_DIGITS.search(text) else ():
        x = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if _valid(*x):
            out.add(x)
    return out


def date_evidence(text: str) -> tuple[frozenset[Date], frozenset[int]]:
    """The dates ``text`` states as ``(year or None, month, day)`` (numeric dates in either
    day/month order, "March 14th", "14th of March 2023", "2023 April 21st"), and the years it
    states anywhere."""
    if ANY_DIGIT.search(text) is None:  # every pattern below needs a digit
        return frozenset(), frozenset()
    out = _numeric_dates(text)
    if may_hold(text, _MONTH_STARTS):  # the patterns of a month's name
        for m in _MONTH_DAY.finditer(text):
            month = _month_number(m.group(1))
            x = (int(m.group(3)) if m.group(3) else None, month, int(m.group(2)))
            if month is not None and _valid(*x):
                out.add(x)
        for m in _DAY_MONTH.finditer(text):
            month = _month_number(m.group(2))
            x = (int(m.group(3)) if m.group(3) else None, month, int(m.group(1)))
            if month is not None and _valid(*x):
                out.add(x)
        for m in _YEAR_MONTH_DAY.finditer(text):
            month = _month_number(m.group(2))
            x = (int(m.group(1)), month, int(m.group(3)))
            if month is not None and _valid(*x):
                out.add(x)
    years = (
        frozenset(int(y) for y in _YEAR.findall(text))
        if "19" in text or "20" in text  # what a year starts with
        else frozenset()
    )
    return frozenset(out), years


#: what :func:`without_dates` blanks: full dates and times of day in every form read here
_DATE_AND_TIME_FORMS = (
    _Y_FIRST,
    _Y_LAST,
    _COMPACT_DATE,
    _MONTH_DAY,
    _DAY_MONTH,
    _YEAR_MONTH_DAY,
    _TIME_12,
    _TIME_WORDS,
    _TIME_24,
)
#: the forms of :data:`_DATE_AND_TIME_FORMS` without a month's name, in the same order
_NUMERIC_FORMS = tuple(
    f for f in _DATE_AND_TIME_FORMS if f not in (_MONTH_DAY, _DAY_MONTH, _YEAR_MONTH_DAY)
)


def without_dates(text: str) -> str:
    """``text`` with its full dates and times of day blanked ("4 people on April 23, 2023 at
    10:00" -> "4 people on   at  "): the numbers left are stated as numbers, not as parts
    of a date or a time. A year or a month on its own stays. One regex pass per form."""
    if ANY_DIGIT.search(text) is None:
        return text
    # a blank never makes a month's name: a text without one stays without one
    forms = _DATE_AND_TIME_FORMS if may_hold(text, _MONTH_STARTS) else _NUMERIC_FORMS
    for form in forms:
        text = form.sub(" ", text)
    return text


def month_year_evidence(text: str) -> frozenset[tuple[int, int]]:
    """The months of a year ``text`` states as such, ``(year, month)``: "April 2022", "Apr.
    2022", "July of 2022", "04/2022", "2022-04". A full date ("2023-03-05", "the 19th of
    March, 2024") states a day, not a month, and is not listed (:func:`month_year_stated`
    still reads its month, but not that month's first day)."""
    out: set[tuple[int, int]] = set()
    if ANY_DIGIT.search(text) is None:
        return frozenset()
    for x in _MONTH_YEAR.finditer(text) if may_hold(text, _MONTH_STARTS) else ():
        month = _month_number(x.group(1))
        if (
            month is not None
            and _DAY_BEFORE.search(text, max(0, x.start() - 16), x.start()) is None
        ):
            out.add((int(x.group(2)), month))  # not "19th of March, 2024"
    for x in _NUMERIC_MONTH_YEAR.finditer(text) if "/" in text or "-" in text else ():
        m, y = (x.group(1), x.group(2)) if x.group(1) else (x.group(4), x.group(3))
        if 1 <= int(m) <= 12:
            out.add((int(y), int(m)))
    return frozenset(out)


def _value_month_year(value: str) -> tuple[int, int, bool] | None:
    """The year and month a string names as a month of a year ("04-2022", "2022-04", "Apr
    2022") or as a month's first day ("2022-07-01"; the flag), or ``None``: what
    :func:`month_year_stated` compares."""
    v = value.strip()
    if len(v) > 24:
        return None
    m = _VALUE_MONTH_YEAR.fullmatch(v)
    if m is not None:
        g = m.groups()
        if g[4]:  # the first day of a month
            return int(g[4]), int(g[5]), True
        year, month = (int(g[1]), int(g[0])) if g[0] else (int(g[2]), int(g[3]))
        return year, month, False
    m = _MONTH_YEAR.fullmatch(v)
    named = _month_number(m.group(1)) if m is not None else None
    return None if m is None or named is None else (int(m.group(2)), named, False)


def may_state_month_year(value: str) -> bool:
    """Whether :func:`month_year_stated` can hold for ``value`` in any text (it names a month
    of a year or a month's first day; see :func:`may_state_date_time`)."""
    return _value_month_year(value) is not None


def month_year_stated(
    value: str, month_years: frozenset[tuple[int, int]], dates: frozenset[Date]
) -> bool:
    """A value naming a month of a year ("04-2022", "2022-04", "Apr 2022") that the text
    states as a month (``month_years``, :func:`month_year_evidence`) or as a day of it
    (``dates``, :func:`date_evidence`); or the first day of a month the text states as a
    month ("2022-07-01" for "since July 2022"; not for a stated day of it)."""
    named = _value_month_year(value) if month_years or dates else None
    if named is None:
        return False
    year, month, first_day = named
    if first_day:
        return (year, month) in month_years
    return (year, month) in month_years or any(y == year and mo == month for y, mo, _ in dates)


def _noon(text: str) -> bool:
    return may_hold(text, _NOON_WORDS) and _NOON.search(text) is not None


def time_evidence(text: str) -> frozenset[tuple[int, int]]:
    """The clock times ``text`` states as ``(hour 0-23, minute)``: "7 PM", "10:00 a.m.",
    "11.00 a.m.", "19:00", and, in a text of at most :data:`MAX_MOVED` times, each of them
    moved by a duration the text states ("9:00 ... duration 3 hours" states 12:00) within the
    same day."""
    out: set[tuple[int, int]] = set()
    if ANY_DIGIT.search(text) is None:  # every pattern but noon's needs a digit
        return frozenset({(12, 0)}) if _noon(text) else frozenset()
    for m in _TIME_12.finditer(text) if _TIME_12_SHAPE.search(text) else ():
        h, mi = int(m.group(1)), int(m.group(2) or 0)
        if 1 <= h <= 12 and mi < 60:
            out.add(((h % 12) + (12 if m.group(3).lower() == "p" else 0), mi))
    for m in _TIME_WORDS.finditer(text) if may_hold(text, _DAY_PARTS) else ():
        h, mi = int(m.group(1)), int(m.group(2) or 0)
        if 1 <= h <= 12 and mi < 60:
            pm = m.group(3).lower() != "morning" and h != 12
            out.add((h + 12 if pm else h % 12, mi))
    if _noon(text):
        out.add((12, 0))
    for m in _TIME_24.finditer(text) if ":" in text else ():
        h, mi = int(m.group(1)), int(m.group(2))
        if h < 24 and mi < 60:
            out.add((h, mi))
    if not out or len(out) > MAX_MOVED:
        return frozenset(out)
    later = {
        divmod(h * 60 + mi + d, 60)
        for d in durations(text)
        if d < 24 * 60
        for h, mi in out
        if h * 60 + mi + d < 24 * 60
    }  # "time 9:00, duration 3 hours" states the end, 12:00, on the same day
    return frozenset(out | later)


def spans(
    dates: frozenset[Date], years: frozenset[int], times: frozenset[tuple[int, int]]
) -> tuple[int, ...]:
    """The lengths between the dates a text states, in days ("August 15th to August 17th,
    2023" states 2: a date without a year is in the one year the text states), and between
    its times of day, in hours, minutes and seconds ("from 15:30 to 15:32" states 2 minutes,
    120 seconds), when it states two to four of them (more are a list, not a period)."""
    out: set[int] = set()
    (only,) = years if len(years) == 1 else (None,)
    full = sorted({(y or only, m, d) for y, m, d in dates if (y or only) is not None})
    if 2 <= len(full) <= 4:
        import datetime as dt  # lazy: see relative_dates

        days = []
        for y, m, d in full:
            try:
                days.append(dt.date(y, m, d).toordinal())  # type: ignore[arg-type]
            except ValueError:
                continue
        out |= {b - a for a in days for b in days if b > a}
    clock = sorted(h * 60 + mi for h, mi in times)
    if 2 <= len(clock) <= 4:
        for a in clock:
            for b in clock:
                if b > a:
                    out |= {b - a, (b - a) * 60}
                    if (b - a) % 60 == 0:
                        out.add((b - a) // 60)
    return tuple(sorted(out))


def _value_date_time(value: str) -> tuple[set[Date], tuple[int, int] | None] | None:
    """The numeric dates and the time of day a date, time or date-time string names (``None``:
    it names neither, or is over 40 characters): what :func:`date_time_stated` compares."""
    v = value.strip()
    if len(v) > 40:
        return None
    vdates = _numeric_dates(v)
    tm = _VALUE_TIME.search(v)
    if not vdates and tm is None:
        return None
    return vdates, (int(tm.group(1)), int(tm.group(2))) if tm is not None else None


def may_state_date_time(value: str) -> bool:
    """Whether :func:`date_time_stated` can hold for ``value`` in any text (it names a numeric
    date or a time of day). False means false whatever the text states, so the text's dates
    and times need not be read (each costs a few regex scans of a new request)."""
    return _value_date_time(value) is not None


def date_time_stated(
    value: str, dates: frozenset[Date], years: frozenset[int], times: frozenset[tuple[int, int]]
) -> bool:
    """A date, time or date-time string ``value`` that the text's ``dates`` / ``times``
    (:func:`date_evidence`, :func:`time_evidence`) state. A date matches a stated one with the
    same month and day and either the same year, or no stated year while the text states no
    other year (the year is then the implied current one). Every part the value holds must
    be stated."""
    named = _value_date_time(value)
    if named is None:
        return False
    vdates, time = named
    if time is not None:
        whole_day = vdates and time in ((0, 0), (23, 59))  # a date's start or end
        if time not in times and not whole_day:
            return False
    if vdates:
        for y, m, d in vdates:
            if (y, m, d) in dates:
                return True
            if (None, m, d) in dates and (not years or y in years):
                return True
        return False
    return True


# --------------------------------------------------------------------------- relative dates

_WEEKDAYS: tuple[str, ...] = (
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
)
_RELATIVE_DAYS = {"tomorrow": 1, "yesterday": -1, "today": 0, "tonight": 0}


_LONE_DAY = re.compile(
    r"\bthe\s(\d{1,2})(?:st|nd|rd|th)\b(?!\s(?:of\s)?(?:" + _MONTH_RE + r"))", re.I
)
_TODAY_IS = re.compile(
    r"\btoday(?:'s date)?\s(?:is\s)?(?:a\s)?(?:[\d./-]{6,10}\s)?(" + "|".join(_WEEKDAYS) + r")\b",
    re.I,
)


def relative_dates(
    text: str, dates: frozenset[Date], month_years: frozenset[tuple[int, int]] = frozenset()
) -> frozenset[Date]:
    """Dates a request states relative to a full date it also states ("today is 2023-10-01 ...
    tomorrow", "next Wednesday", "a week later", "March 3rd next year", "until the 12th"),
    counted with python-dateutil's ``relativedelta``: from each stated ``(year, month, day)``,
    the day before and after, the day after tomorrow, a stated number of days, nights or weeks
    later in a text of at most :data:`MAX_MOVED` full dates ("for 3 nights starting from 1st
    June 2022" states 2022-06-04), the next two occurrences of every
    weekday the text names (counted from the weekday the text gives today, "today is
    Monday", when it gives one), a week later; a stated month and day without a year in the
    next year ("next year"); a lone day of the month ("on the 9th") in the month of a stated
    date or the one after, and in every month of a year the text states ("sep 2023")."""
    low = text.lower()
    lone_days = [int(m.group(1)) for m in _LONE_DAY.finditer(low) if 1 <= int(m.group(1)) <= 31]
    out: set[Date] = set()
    for y, m in month_years:
        out |= {(y, m, d) for d in lone_days if _valid(y, m, d)}
    full = [(y, m, d) for y, m, d in dates if y is not None]
    if not full:
        return frozenset(out)
    import datetime as dt  # lazy: only requests with a full date need these

    from dateutil.relativedelta import relativedelta

    words = set(WORD_TOKEN.findall(low))
    offsets = {v for k, v in _RELATIVE_DAYS.items() if k in words}
    if "day after tomorrow" in low:
        offsets.add(2)
    if "week" in words:
        offsets.add(7)
    if len(full) <= MAX_MOVED:  # "3 nights starting from 1st June 2022"
        offsets |= {d // (24 * 60) for d in durations(low) if d % (24 * 60) == 0}
    weekdays = [i for i, w in enumerate(_WEEKDAYS) if w in words]
    told = _TODAY_IS.search(low)
    told_weekday = _WEEKDAYS.index(told.group(1).lower()) if told else None
    next_year = "next year" in low
    if not (offsets or weekdays or next_year or lone_days):
        return frozenset(out)  # nothing relative to count
    no_year = [(m, d) for y, m, d in dates if y is None]
    for y, m, d in full:
        try:
            ref = dt.date(y, m, d)  # type: ignore[arg-type]
        except ValueError:
            continue
        found = [ref + relativedelta(days=k) for k in offsets]
        for base in {ref.weekday(), told_weekday} - {None}:
            for w in weekdays:
                ahead = (w - base) % 7 or 7  # type: ignore[operator]
                found += [ref + relativedelta(days=ahead), ref + relativedelta(days=ahead + 7)]
        if next_year:
            found += [dt.date(y + 1, mo, da) for mo, da in no_year if _valid(y + 1, mo, da)]
        nxt = ref + relativedelta(months=1)
        for day in lone_days:
            found += [
                dt.date(x.year, x.month, day)
                for x in (ref, nxt)
                if _valid(x.year, x.month, day) and day <= _days_in(x.year, x.month)
            ]
        out |= {(x.year, x.month, x.day) for x in found}
    return frozenset(out)


def _days_in(year: int, month: int) -> int:
    import calendar  # lazy: see relative_dates

    return calendar.monthrange(year, month)[1]
