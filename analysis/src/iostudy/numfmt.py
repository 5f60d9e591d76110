"""Units and how figures write numbers."""

#: bytes in a MiB, the unit of every size and bandwidth iostudy reports
MIB = 1 << 20
#: the units of performance values
MIB_S = "MiB/s"
SECONDS = "s"


def short(value) -> str:
    """A number for a figure: 3 significant digits, with k, M, G from 10^4 on; no exponent."""
    v = float(value)
    for threshold, factor, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(v) >= threshold:
            v /= factor
            return (f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}") + suffix
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"
