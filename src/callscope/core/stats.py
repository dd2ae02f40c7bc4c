"""Small, deterministic statistics used by the report: Wilson intervals, bootstrap intervals,
and the two standard deviations the SAAG paper uses.

* Per-scale tables (paper Appendix E, Tables 5-7...) give ``mean ± std`` over the rows at one
  scale; that std is the *population* std of the row values (``ddof=0``): :func:`mean_std`.
* Aggregate tables (paper Tables 2, 3, 8, 12, 16) give ``mean ± std`` over the three
  per-scale values; that std is the *sample* std (``ddof=1``): :func:`mean_sample_std`.

Empty input never raises: means and bounds are ``nan``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

NAN = float("nan")

#: bootstrap resamples are drawn in blocks of at most this many numbers (memory bound)
_BLOCK = 4_000_000


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials (95% for ``z=1.96``).

    Returns ``(nan, nan)`` when ``n == 0``. Bounds always lie in [0, 1]."""
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


def _clean(values: Sequence[float | None]) -> np.ndarray:
    arr = np.asarray([float(v) for v in values if v is not None], dtype=float)
    return arr[~np.isnan(arr)]


def mean_std(values: Sequence[float | None]) -> tuple[float, float]:
    """Mean and *population* standard deviation (``ddof=0``) of the non-missing values: the
    dispersion of row-level scores used by the paper's per-scale tables. ``(nan, nan)`` when
    empty; std is 0.0 for a single value."""
    arr = _clean(values)
    if arr.size == 0:
        return NAN, NAN
    return float(arr.mean()), float(arr.std(ddof=0))


def sample_std(values: Sequence[float | None]) -> float:
    """*Sample* standard deviation (``ddof=1``) of the non-missing values, as the paper's
    aggregate tables use over the per-scale values; ``nan`` with fewer than two values."""
    arr = _clean(values)
    if arr.size < 2:
        return NAN
    return float(arr.std(ddof=1))


def mean_sample_std(values: Sequence[float | None]) -> tuple[float, float]:
    """Mean and sample std (``ddof=1``) of the non-missing values (across-scale aggregation)."""
    arr = _clean(values)
    if arr.size == 0:
        return NAN, NAN
    return float(arr.mean()), sample_std(arr.tolist())


def _resample_stats(
    arr: np.ndarray, stat: Callable[[np.ndarray], float] | None, n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:  # fmt: skip
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
    ``(nan, nan)`` when there are no values; a single value gives ``(v, v)``."""
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
    independently (unpaired). ``(nan, nan)`` when either group is empty."""
    xa, xb = _clean(a), _clean(b)
    if xa.size == 0 or xb.size == 0:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    reps = _resample_stats(xb, None, n_boot, rng) - _resample_stats(xa, None, n_boot, rng)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(reps, [alpha, 1.0 - alpha])
    return float(lo), float(hi)
