"""Normalisation rules of the registry-aware grounding (:mod:`callscope.saag.groundings`).

Beyond the SAAG paper. The paper's grounding is lexical (section 2.3, eqs. 6-9: a value is
grounded when it occurs verbatim in the query) and names that as its limitation; on BFCL's
own gold calls that definition flags 37.5% of minimal gold calls (issue 13). These pure
functions say when a value is *stated after normalisation*, each rule a separate function so
it can be tested and ablated alone:

* :func:`norm_words`: case, NFKC, curly and straight quotes, punctuation, ``_`` ``-`` ``/``
  and whitespace runs are one space ("six_months" is stated by "the last six months").
* :func:`compact`: whitespace removed and ``**`` written ``^`` ("x**2" is stated by "y=x^2").
* :func:`number_evidence`: the numbers a text states: digit tokens (thousands separators
  dropped), number words ("twenty-five", "a dozen", "half"), scale words ("2 million",
  "5k"), percentages also as fractions ("40%" states 40 and 0.4) and fractions ("1/2"
  states 0.5).
* :func:`unit_groups_stated`: unit names and their abbreviations ("10 km" states
  "kilometers"; single-letter abbreviations only directly after a number).
* :func:`schema_defaults`: a parameter's default, from the schema's ``default`` or from its
  description ("defaults to 'units' if not specified", "(default: 9.81)").

Every function is linear in the length of its input (regular expressions without nested
quantifiers; token scans).

* :mod:`.knowledge`: values the request names in other words, through well-kept libraries
  (countries, US states, currencies, languages: pycountry; airports and the places they
  serve: airportsdata; time zones: the IANA tz database; quantities in other units: pint;
  numbers stated as phrases: callscope's table; a place's name misspelled: RapidFuzz;
  acronyms of stated words), each match kept as evidence (:class:`Match`).

The rules are split by what they read, one module each: :mod:`.words`, :mod:`.numbers`,
:mod:`.units`, :mod:`.schema` (defaults, enums), :mod:`.dates` (absolute, month-year,
times, relative dates, durations and the spans between stated dates), :mod:`.descriptions`
(formats, described values, URL templates, ``key:value`` search syntaxes).
This package is their one public face: the grounding reads them as ``normalise.<rule>``.
"""

from callscope.saag.normalise.dates import (
    Date,
    date_evidence,
    date_time_stated,
    may_state_date_time,
    may_state_month_year,
    month_year_evidence,
    month_year_stated,
    relative_dates,
    spans,
    time_evidence,
    without_dates,
)
from callscope.saag.normalise.descriptions import (
    MAX_TEMPLATE_VALUE,
    comma_format,
    described_phrases,
    description_keys,
    description_templates,
    description_words,
    key_value_fills,
    template_fills,
)
from callscope.saag.normalise.knowledge import (
    NORMALISERS,
    Match,
    knowledge_match,
    stem_words,
)
from callscope.saag.normalise.numbers import number_evidence, parse_number_string
from callscope.saag.normalise.schema import schema_defaults, schema_enum
from callscope.saag.normalise.units import unit_group, unit_groups_stated
from callscope.saag.normalise.words import (
    compact,
    norm_words,
    spelled_notes,
    stem,
    stems,
    words_state,
)

__all__ = [
    "MAX_TEMPLATE_VALUE",
    "NORMALISERS",
    "Date",
    "Match",
    "comma_format",
    "compact",
    "date_evidence",
    "date_time_stated",
    "described_phrases",
    "description_keys",
    "description_templates",
    "description_words",
    "key_value_fills",
    "knowledge_match",
    "may_state_date_time",
    "may_state_month_year",
    "month_year_evidence",
    "month_year_stated",
    "norm_words",
    "number_evidence",
    "parse_number_string",
    "relative_dates",
    "spans",
    "spelled_notes",
    "schema_defaults",
    "schema_enum",
    "stem",
    "stem_words",
    "stems",
    "template_fills",
    "time_evidence",
    "unit_group",
    "unit_groups_stated",
    "without_dates",
    "words_state",
]
