"""The statistics of ``iostudy compare`` (:mod:`iostudy.metrics.compare`), in numpy only.

- :func:`mann_whitney`: the two-sided Mann-Whitney U (Wilcoxon rank-sum) test of two samples:
  exact (the U distribution counted as the coefficients of the Gaussian binomial
  [m+n choose m]_q) when the samples have no ties and m + n <= EXACT_MAX, else the normal
  approximation with the tie correction and a continuity correction of 1/2.
- :func:`hodges_lehmann`: the Hodges-Lehmann shift (median of the m x n differences) and its
  distribution-free interval [D(k), D(mn + 1 - k)], k from the same U distribution (unbounded
  when the samples are too small for the asked coverage: 3 against 3 cannot give 95 %).
- :func:`e_divisive`: change-points of a series by E-divisive means (Matteson & James 2014,
  alpha = 1), bisecting the segment whose best split has the largest divergence while a
  permutation test (fixed seed: the same series gives the same answer) finds it significant.

Why not Apache Otava (formerly Hunter): it brings a command-line application's dependencies
(a database client, Slack and Grafana clients, a compiled extension in some versions) and its own
configuration into an analysis package that runs on a login node; the E-divisive core is ~60
lines of numpy here, tested against hand-derived cases.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from iostudy.core.deferred import deferred

np = deferred("numpy")

EXACT_MAX = 50  # samples of at most this many values together are tested exactly (no ties)
PERMUTATIONS = 199
SEED = 46


def normal_quantile(p: float) -> float:
    return NormalDist().inv_cdf(p)


def u_counts(m: int, n: int):
    """How many of the C(m+n, m) orderings of two samples give U = 0 .. mn (int64): the
    coefficients of prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)."""
    poly = np.zeros(m * n + 1, dtype=np.int64)
    poly[0] = 1
    for i in range(1, m + 1):
        shifted = poly.copy()
        shifted[n + i :] -= poly[: len(poly) - n - i]  # x (1 - q^(n+i))
        for r in range(i):  # / (1 - q^i): Q[k] = P[k] + Q[k - i]
            shifted[r::i] = np.cumsum(shifted[r::i])
        poly = shifted
    return poly


def u_statistic(x, y) -> float:
    """U of ``x``: the pairs (x_i, y_j) with x_i > y_j, ties counted half."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    diff = x[:, None] - y[None, :]
    return float((diff > 0).sum() + 0.5 * (diff == 0).sum())


def _exact(m: int, n: int, values) -> bool:
    return m + n <= EXACT_MAX and len(np.unique(values)) == len(values)


def mann_whitney(x, y) -> float:
    """The two-sided p-value of the Mann-Whitney U test of ``x`` against ``y``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    m, n = len(x), len(y)
    if not m or not n:
        return math.nan
    u = u_statistic(x, y)
    both = np.concatenate([x, y])
    if _exact(m, n, both):
        counts = u_counts(m, n)
        total = counts.sum()
        k = int(round(u))
        low, high = counts[: k + 1].sum() / total, counts[k:].sum() / total
        return float(min(1.0, 2 * min(low, high)))
    big = m + n
    _, ties = np.unique(both, return_counts=True)
    var = m * n / 12 * ((big + 1) - float((ties**3 - ties).sum()) / (big * (big - 1)))
    if var <= 0:  # every value equal
        return 1.0
    z = max(0.0, abs(u - m * n / 2) - 0.5) / math.sqrt(var)
    return float(min(1.0, math.erfc(z / math.sqrt(2))))


def smallest_p(m: int, n: int) -> float:
    """The smallest two-sided p-value the exact test can give with m against n values."""
    return 2 / math.comb(m + n, m) if m and n else 1.0


def _rank_k(m: int, n: int, level: float) -> int:
    """k of the interval [D(k), D(mn + 1 - k)] covering ``level``; 0 when none does."""
    half = (1 - level) / 2
    if m + n <= EXACT_MAX:
        cumulative = np.cumsum(u_counts(m, n)) / math.comb(m + n, m)
        return int((cumulative <= half).sum())  # largest k with P(U <= k - 1) <= half
    z = normal_quantile(1 - half)
    return max(0, int(math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12))))


def hodges_lehmann(x, y, level=0.95) -> tuple[float, float, float]:
    """The shift of ``x`` against ``y`` (median of the differences x_i - y_j) and the edges of
    its ``level`` interval (-inf, inf when the samples are too small for it)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if not len(x) or not len(y):
        return (math.nan, math.nan, math.nan)
    diffs = np.sort((x[:, None] - y[None, :]).ravel())
    k = _rank_k(len(x), len(y), level)
    if k < 1:
        return (float(np.median(diffs)), -math.inf, math.inf)
    return (float(np.median(diffs)), float(diffs[k - 1]), float(diffs[len(diffs) - k]))


def minimum_detectable(se: float, alpha: float, power=0.8) -> float:
    """The change a two-sided test at ``alpha`` finds with ``power``, at standard error ``se``
    (normal approximation)."""
    return (normal_quantile(1 - alpha / 2) + normal_quantile(power)) * se


# -- change-points ------------------------------------------------------------------------------


def _best_split(x, min_size: int) -> tuple[float, int]:
    """The largest E-divisive statistic Q(tau, kappa) over the splits of ``x`` (tau: the first
    index of the second part, kappa its end) and its tau; (0, -1) when too short."""
    n = len(x)
    if n < 2 * min_size:
        return (0.0, -1)
    dist = np.abs(x[:, None] - x[None, :])
    pre = np.zeros((n + 1, n + 1))
    pre[1:, 1:] = dist.cumsum(0).cumsum(1)
    tau, kappa = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    valid = (tau >= min_size) & (kappa - tau >= min_size)
    t, k = tau[valid], kappa[valid]

    def block(a, b, c, d):
        return pre[b, d] - pre[a, d] - pre[b, c] + pre[a, c]

    a_size, b_size = t.astype(float), (k - t).astype(float)
    between = 2 * block(0, t, t, k) / (a_size * b_size)
    within_a = block(0, t, 0, t) / (a_size * (a_size - 1))  # pairs counted twice: / 2C(m,2)
    within_b = block(t, k, t, k) / (b_size * (b_size - 1))
    q = a_size * b_size / (a_size + b_size) * (between - within_a - within_b)
    best = int(np.argmax(q))
    return (float(q[best]), int(t[best]))


def e_divisive(values, sig_level=0.01, min_size=2, permutations=PERMUTATIONS, seed=SEED):
    """The indices where a new segment of ``values`` starts (sorted), by E-divisive means with
    a permutation test at ``sig_level``."""
    x = np.asarray(values, float)
    rng = np.random.default_rng(seed)
    bounds, found = [0, len(x)], []
    while True:
        candidates = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            q, tau = _best_split(x[lo:hi], min_size)
            if tau > 0:
                candidates.append((q, lo, hi, lo + tau))
        if not candidates:
            return sorted(found)
        q, lo, hi, at = max(candidates)
        segment = x[lo:hi]
        above = sum(
            _best_split(rng.permutation(segment), min_size)[0] >= q for _ in range(permutations)
        )
        if q <= 0 or (above + 1) / (permutations + 1) > sig_level:
            return sorted(found)
        found.append(at)
        bounds = sorted([*bounds, at])


# -- a run against its baseline -----------------------------------------------------------------


def pooled_cov(runs) -> float:
    """The coefficient of variation of repetitions pooled within runs (those of 2 or more);
    NaN without any."""
    parts = [
        (len(r) - 1, np.var(r, ddof=1) / np.mean(r) ** 2) for r in runs if len(r) > 1 and np.mean(r)
    ]
    dof = sum(p[0] for p in parts)
    return math.sqrt(sum(p[0] * p[1] for p in parts) / dof) if dof else math.nan


def runs_spread(medians) -> float:
    """The spread between runs: the coefficient of variation of their medians (0 under 2)."""
    if len(medians) < 2 or not np.mean(medians):
        return 0.0
    return float(np.std(medians, ddof=1) / abs(np.mean(medians)))


def change(cur, base, spread, runs, cov, alpha, tolerance, level=0.95) -> dict:
    """``cur`` against ``base`` in % of the base's median: the Hodges-Lehmann shift and its
    ``level`` interval widened, on the log of the ratio, by the spread between runs (``runs``:
    how many runs ``cur`` and ``base`` hold; z x spread x sqrt(1/k + 1/l), since repetitions of
    one run share that run's conditions), the rank test's p-value, and the smallest change found
    with 80 % power: the larger of the test's at ``alpha`` (the repetitions' standard error,
    ``cov`` x sqrt(1/m + 1/n)) and ``tolerance`` + the interval's (the standard error with the
    spread)."""
    med = float(np.median(base))
    shift, low, high = hodges_lehmann(cur, base, level)
    between = spread * math.sqrt(1 / max(runs[0], 1) + 1 / max(runs[1], 1))
    pct = 100 / abs(med)
    extra = 100 * normal_quantile(1 - (1 - level) / 2) * between
    se_within = (0.0 if math.isnan(cov) else cov) * math.sqrt(1 / len(cur) + 1 / len(base))
    detectable = max(
        minimum_detectable(se_within, alpha),
        tolerance + minimum_detectable(math.hypot(se_within, between), 1 - level),
    )
    # widened on the log of the ratio: run-to-run noise of rates is multiplicative, and a rate
    # cannot fall by more than 100 %
    centre, low, high = (_log_ratio(v * pct) for v in (shift, low, high))
    return {
        "change_pct": shift * pct,
        "change_low_pct": _pct(centre - math.hypot(centre - low, extra / 100)),
        "change_high_pct": _pct(centre + math.hypot(high - centre, extra / 100)),
        "p_value": mann_whitney(cur, base),
        "noise_cov": cov,
        "min_detectable_pct": 100 * detectable,
    }


def _log_ratio(change_pct: float) -> float:
    if math.isinf(change_pct):
        return change_pct
    return math.log(max(1 + change_pct / 100, 1e-9))


def _pct(log_ratio: float) -> float:
    return 100 * (math.exp(log_ratio) - 1) if log_ratio < 700 else math.inf
