"""Units, and how figures and tables write numbers."""

#: bytes in a MiB, the unit of every size and bandwidth iostudy reports
MIB = 1 << 20
#: the units of performance values
MIB_S = "MiB/s"
SECONDS = "s"
OPS_S = "ops/s"
#: integers a float64 holds exactly
EXACT = 2**53


def integral(totals):
    """Totals (a pandas Series summed as float64, NaN: none) as int64 when every one is exact
    (up to 2^53), else as float64: an int64 cannot hold every sum of int64 values. (pandas is
    not imported here: the checks' side imports this module.)"""
    totals = totals.astype(float).fillna(0)
    return totals.astype("int64") if (totals.abs() <= EXACT).all() else totals


def short(value) -> str:
    """A number for a figure: 3 significant digits, with k, M, G from 10^4 on; no exponent."""
    v = float(value)
    for threshold, factor, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(v) >= threshold:
            v /= factor
            return (f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}") + suffix
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def binary_bytes(value: float, digits: int = 3) -> str:
    """Bytes with a binary prefix and ``digits`` significant digits: 0 B, 512 B, 1.5 KiB,
    1000 KiB, 3.2 TiB (never an exponent). iostudy's one size formatter: tables, figures' ticks,
    messages."""
    v = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(v) < 1024 or unit == "EiB":
            break
        v /= 1024
    if unit == "B":
        return f"{v:.0f} B"
    text = f"{v:.{digits}g}"
    return f"{v:.0f} {unit}" if "e" in text else f"{text} {unit}"
