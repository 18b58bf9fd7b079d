"""Dates written the way people write them, for the `dates` task.

A date such as 2026-11-21 is written in one of the forms of `DATE_FORMATS`:

    November 21, 2026                 Nov 21, 2026            21 November 2026
    21 nov 2026                       21-Nov-26               november 21st, 2026
    saturday, november 21 2026        Sat 21 Nov 2026         Saturday, 21st of November 2026
    21/11/26 (EU)    21.11.26 (EU)    11/21/2026 (US)         11-21-2026 (US)
    2026/11/21 (year first)

and the model must answer in ISO 8601: "2026-11-21". So that every input has
exactly ONE correct answer, the forms follow these rules:

1. Month as a word (any case, full or 3 letters): day and month cannot be
   confused. The year has 4 digits, except in "21-Nov-26" (see rule 4).
2. All numbers, year first (4 digits): year/month/day, as in ISO 8601.
3. All numbers, year last: the year's length says the order.
   4-digit year -> month first (US: 11/21/2026, 11-21-2026);
   2-digit year -> day first (EU: 21/11/26, 21.11.26).
   A 4-digit year is never written day-first and a 2-digit year never
   month-first, so "05/06/07" can only mean 5 June 2007.
4. A 2-digit year yy means 19yy if yy >= 50, else 20yy; that is why the
   dates lie in [1950-01-01, 2049-12-31].
5. A weekday name, when written, is always the true weekday of the date.
"""

import datetime

MONTHS = ("january", "february", "march", "april", "may", "june", "july",
          "august", "september", "october", "november", "december")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MIN_YEAR, MAX_YEAR = 1950, 2049     # the window where a 2-digit year is unambiguous

# (template, which rule makes it unambiguous). Field names are listed in `date_fields`.
DATE_FORMATS = (
    ("{Month} {d}, {yyyy}", "month name"),
    ("{Mon} {d}, {yyyy}", "month name"),
    ("{d} {Month} {yyyy}", "month name"),
    ("{d} {mon} {yyyy}", "month name"),
    ("{d}-{Mon}-{yy}", "month name, 2-digit year"),
    ("{month} {dth}, {yyyy}", "month name"),
    ("{weekday}, {month} {d} {yyyy}", "month name"),
    ("{Wkd} {d} {Mon} {yyyy}", "month name"),
    ("{Weekday}, {dth} of {Month} {yyyy}", "month name"),
    ("{dd}/{mm}/{yy}", "EU: day first, 2-digit year"),
    ("{dd}.{mm}.{yy}", "EU: day first, 2-digit year"),
    ("{m}/{d}/{yyyy}", "US: month first, 4-digit year"),
    ("{mm}-{dd}-{yyyy}", "US: month first, 4-digit year"),
    ("{yyyy}/{mm}/{dd}", "year first"),
)


def ordinal(day):
    """1 -> "1st", 2 -> "2nd", 3 -> "3rd", 11 -> "11th", 22 -> "22nd"."""
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    if 10 <= day % 100 <= 20:
        suffix = "th"
    return f"{day}{suffix}"


def date_fields(date):
    """Every way of writing each part of `date` (a datetime.date), by field name."""
    month, weekday = MONTHS[date.month - 1], WEEKDAYS[date.weekday()]
    return {
        "d": str(date.day), "dd": f"{date.day:02d}", "dth": ordinal(date.day),
        "m": str(date.month), "mm": f"{date.month:02d}",
        "yyyy": f"{date.year:04d}", "yy": f"{date.year % 100:02d}",
        "month": month, "Month": month.capitalize(),
        "mon": month[:3], "Mon": month[:3].capitalize(),
        "weekday": weekday, "Weekday": weekday.capitalize(),
        "wkd": weekday[:3], "Wkd": weekday[:3].capitalize(),
    }


def format_date(date, template):
    """`date` written with `template`, e.g. format_date(d, "{d} {Month} {yyyy}")."""
    return template.format(**date_fields(date))


def random_date(rng, min_year=MIN_YEAR, max_year=MAX_YEAR):
    """A date drawn uniformly from [min_year-01-01, max_year-12-31]."""
    first = datetime.date(min_year, 1, 1).toordinal()
    last = datetime.date(max_year, 12, 31).toordinal()
    return datetime.date.fromordinal(int(rng.integers(first, last + 1)))


def date_alphabet():
    """Every character a written date (in any form) or an ISO answer can use."""
    names = MONTHS + WEEKDAYS
    capitals = {name[0].upper() for name in names}     # "November", "Sat"
    return "".join(sorted(set("".join(names)) | capitals | set("0123456789 ,./-")))
