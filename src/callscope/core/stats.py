"""Every statistic callscope reports, as small deterministic pure functions.

* Proportions: :func:`wilson` (Wilson 1927 score interval), and :func:`rate_ci`, the one
  wrapper that gives a rate and its Wilson interval as ``None`` (JSON ``null``) instead of
  ``nan`` when there are no trials (the diagnostics rows: GAR and Acc per category,
  calibration paper section 3.2; the SAAG report's rates).
* Paired proportions: :func:`newcombe_paired` (Newcombe 1998, method 10), the interval of
  ΔAcc / ΔGAR between a probe run and its baseline on the same cases.
* Agreement of two binary raters: :func:`cohen_kappa` (Cohen 1960), the CONFIRM rule against
  the LLM judge on τ²-bench.
* Means: the two standard deviations the SAAG paper uses.

  - Per-scale tables (paper Appendix E, Tables 5-7...) give ``mean ± std`` over the rows at
    one scale; that std is the *population* std of the row values (``ddof=0``):
    :func:`mean_std`.
  - Aggregate tables (paper Tables 2, 3, 8, 12, 16) give ``mean ± std`` over the three
    per-scale values; that std is the *sample* std (``ddof=1``): :func:`mean_sample_std`.

* Percentile bootstrap intervals of a mean and of a difference of means.

Empty input never raises: means and bounds are ``nan`` (``None`` from :func:`rate_ci`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import numpy as np

NAN = float("nan")

#: bootstrap resamples are drawn in blocks of at most this many numbers (memory bound)
_BLOCK = 4_000_000


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials (95% for ``z=1.96``):
    with ``p = k / n``,

        (p + z²/2n ± z sqrt(p(1 − p)/n + z²/4n²)) / (1 + z²/n)

    Returns ``(nan, nan)`` when ``n == 0``. Bounds always lie in [0, 1].

    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. Journal of the American Statistical Association 22(158), 209-212.

    >>> [round(b, 4) for b in wilson(8, 10)]
    [0.4902, 0.9433]
    >>> wilson(0, 0)
    (nan, nan)
    """
    if n <= 0:
        return NAN, NAN
    if not 0 <= k <= n:
        raise ValueError(f"k={k} outside 0..n={n}")
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_ci(k: int, n: int, z: float = 1.96) -> tuple[float | None, float | None, float | None]:
    """``(k / n, Wilson low, Wilson high)`` for ``k`` successes in ``n`` trials (see
    :func:`wilson`); all three ``None`` when ``n == 0``, and any ``nan`` bound as ``None``, so
    the result can go into JSON rows as is. GAR (the share of cases whose gold action class
    is emitted at some turn) and Acc (the share the benchmark's grader passes) are such rates
    (calibration paper, section 3.2).

    >>> [round(x, 4) for x in rate_ci(8, 10)]
    [0.8, 0.4902, 0.9433]
    >>> rate_ci(0, 0)
    (None, None, None)
    """
    if not n:
        return None, None, None
    lo, hi = wilson(k, n, z)
    return k / n, (None if math.isnan(lo) else lo), (None if math.isnan(hi) else hi)


def newcombe_paired(
    both: int, only_first: int, only_second: int, neither: int, z: float = 1.96
) -> tuple[float, float, float]:
    """``(theta, lower, upper)`` for ``theta = p1 − p2`` of two *paired* proportions.

    The 2×2 paired table is ``a = both``, ``b = only_first``, ``c = only_second``,
    ``d = neither`` (``n = a + b + c + d``), so ``p1 = (a + b) / n`` and ``p2 = (a + c) / n``.
    Newcombe's (1998) hybrid score interval, "method 10": with ``(l1, u1)`` and ``(l2, u2)``
    the Wilson intervals of ``p1`` and ``p2`` and ``phi`` the correlation of the table,

        lower = theta − sqrt((p1 − l1)² − 2 phi (p1 − l1)(u2 − p2) + (u2 − p2)²)
        upper = theta + sqrt((u1 − p1)² − 2 phi (u1 − p1)(p2 − l2) + (p2 − l2)²)

    ``phi = (ad − bc) / sqrt((a + b)(c + d)(a + c)(b + d))``, continuity-corrected as in the
    paper (when ``ad > bc`` the numerator is ``max(ad − bc − n/2, 0)``) and 0 when a margin is
    empty. Closed-form and deterministic, clipped to [−1, 1], and not of zero width when no
    pair differs (a paired bootstrap would be). ``ValueError`` on an empty or negative table.

    Newcombe, R. G. (1998). Improved confidence intervals for the difference between binomial
    proportions based on paired data. Statistics in Medicine 17, 2635-2650.

    >>> [round(x, 4) for x in newcombe_paired(40, 10, 2, 48)]
    [0.08, 0.0113, 0.1467]
    """
    cells = (both, only_first, only_second, neither)
    if min(cells) < 0:
        raise ValueError(f"negative count in paired table {cells}")
    n = sum(cells)
    if n == 0:
        raise ValueError("empty paired table")
    a, b, c, d = cells
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(a + b, n, z)
    l2, u2 = wilson(a + c, n, z)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    num = float(a * d - b * c)
    if num > 0:
        num = max(num - n / 2, 0.0)
    phi = num / math.sqrt(margins) if margins else 0.0
    dl1, du1, dl2, du2 = p1 - l1, u1 - p1, p2 - l2, u2 - p2
    theta = p1 - p2
    delta = math.sqrt(max(0.0, dl1 * dl1 - 2 * phi * dl1 * du2 + du2 * du2))
    eps = math.sqrt(max(0.0, du1 * du1 - 2 * phi * du1 * dl2 + dl2 * dl2))
    return theta, max(-1.0, theta - delta), min(1.0, theta + eps)


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's (1960) kappa of two binary raters over the same items:
    ``(p_o − p_e) / (1 − p_e)`` with ``p_o`` the share of items both rate alike and
    ``p_e = p_a p_b + (1 − p_a)(1 − p_b)`` the agreement expected by chance from each rater's
    share of YES (``p_a``, ``p_b``). ``None`` when there are no items or ``p_e = 1`` (both
    raters constant and equal: kappa is 0/0); ``ValueError`` when the lengths differ.

    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement 20(1), 37-46.

    >>> cohen_kappa([True, True, False, False], [True, False, False, False])
    0.5
    >>> cohen_kappa([True, True], [True, True]) is None
    True
    """
    if len(a) != len(b):
        raise ValueError("raters must rate the same items")
    n = len(a)
    if not n:
        return None
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


def _clean(values: Sequence[float | None]) -> np.ndarray:
    arr = np.asarray([float(v) for v in values if v is not None], dtype=float)
    return arr[~np.isnan(arr)]


def mean_std(values: Sequence[float | None]) -> tuple[float, float]:
    """Mean and *population* standard deviation (``ddof=0``) of the non-missing values: the
    dispersion of row-level scores used by the paper's per-scale tables. ``(nan, nan)`` when
    empty; std is 0.0 for a single value.

    >>> [round(x, 4) for x in mean_std([1, 2, 3, None])]
    [2.0, 0.8165]
    """
    arr = _clean(values)
    if arr.size == 0:
        return NAN, NAN
    return float(arr.mean()), float(arr.std(ddof=0))


def sample_std(values: Sequence[float | None]) -> float:
    """*Sample* standard deviation (``ddof=1``) of the non-missing values, as the paper's
    aggregate tables use over the per-scale values; ``nan`` with fewer than two values.

    >>> sample_std([1, 2, 3]), sample_std([1])
    (1.0, nan)
    """
    arr = _clean(values)
    if arr.size < 2:
        return NAN
    return float(arr.std(ddof=1))


def mean_sample_std(values: Sequence[float | None]) -> tuple[float, float]:
    """Mean and sample std (``ddof=1``) of the non-missing values (across-scale aggregation).

    >>> mean_sample_std([1.0, 2.0, 3.0])
    (2.0, 1.0)
    """
    arr = _clean(values)
    if arr.size == 0:
        return NAN, NAN
    return float(arr.mean()), sample_std(arr.tolist())


def _resample_stats(
    arr: np.ndarray,
    stat: Callable[[np.ndarray], float] | None,
    n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """``n_boot`` bootstrap replicates of ``stat`` (the mean when ``stat`` is None)."""
    n = arr.size
    out = np.empty(n_boot, dtype=float)
    block = max(1, _BLOCK // max(n, 1))
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        sample = arr[idx]
        if stat is None:
            out[start:stop] = sample.mean(axis=1)
        else:
            out[start:stop] = [float(stat(row)) for row in sample]
    return out


def bootstrap_ci(
    values: Sequence[float | None],
    stat: Callable[[np.ndarray], float] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` (default: the mean) of the non-missing values.

    Deterministic: the same values, ``n_boot`` and ``seed`` always give the same interval.
    ``(nan, nan)`` when there are no values; a single value gives ``(v, v)``.

    >>> bootstrap_ci([5.0]), bootstrap_ci([])
    ((5.0, 5.0), (nan, nan))
    >>> lo, hi = bootstrap_ci([1, 2, 3, 4], n_boot=200)
    >>> 1.0 <= lo <= 2.5 <= hi <= 4.0
    True
    """
    arr = _clean(values)
    if arr.size == 0:
        return NAN, NAN
    reps = _resample_stats(arr, stat, n_boot, np.random.default_rng(seed))
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(reps, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bootstrap_diff_ci(
    a: Sequence[float | None],
    b: Sequence[float | None],
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(b) - mean(a)`` resampling both groups
    independently (unpaired). ``(nan, nan)`` when either group is empty.

    >>> lo, hi = bootstrap_diff_ci([1, 2], [3, 4], n_boot=200)
    >>> 0.0 < lo <= 2.0 <= hi
    True
    """
    xa, xb = _clean(a), _clean(b)
    if xa.size == 0 or xb.size == 0:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    reps = _resample_stats(xb, None, n_boot, rng) - _resample_stats(xa, None, n_boot, rng)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(reps, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def seeded_rng(*parts: object) -> random.Random:
    """A generator seeded by ``parts`` joined with ``:`` (a seed, a case id, a kind): the very
    stream of ``random.Random("0:case:kind")`` for any text UTF-8 can encode, and for an id
    holding a lone surrogate (a data file may) the stream of its ``surrogatepass`` bytes
    instead of a ``UnicodeEncodeError``.

    >>> seeded_rng(0, "c1", "swap").random() == random.Random("0:c1:swap").random()
    True
    >>> 0 <= seeded_rng(0, "c" + chr(0xD800)).random() < 1
    True
    """
    return random.Random(":".join(map(str, parts)).encode("utf-8", "surrogatepass"))
