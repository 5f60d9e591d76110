"""What a perf or iomodel row measured: its ``measures`` column, in stores of either layout.

Ingest puts a test case's ``measures`` label (iostudy.benchmarks.measures: "storage
(O_DIRECT)", "page cache possible: ...") in the column, null when the case did not say. A run
ingested before the column existed has the column null (the views read a column missing from a
part as null) and the label, if any, inside its parameters JSON: :func:`moved` takes it out
into the column, so that readers see one layout. Such a run, ingested again after its manifest
changed, is written in the new layout (its tables' columns are not today's: every log and
result is read again).
"""

from __future__ import annotations

import json

KEY = "measures"


def split(parameters, measures) -> tuple:
    """(parameters, label): the label of the column, else the one in the parameters JSON of
    the old layout, taken out of it; parameters that hold no label are returned as they are."""
    try:
        params = json.loads(parameters) if isinstance(parameters, str) else None
    except ValueError:
        params = None
    if not isinstance(params, dict) or KEY not in params:
        return parameters, measures
    label = params.pop(KEY)
    if not _said(measures):
        measures = label if isinstance(label, str) and label else None
    return json.dumps(params, sort_keys=True), measures


def moved(frame):
    """A perf or iomodel DataFrame with the old layout's labels moved into its measures
    column (added, null, when the frame has none)."""
    labels = frame[KEY] if KEY in frame else [None] * len(frame)
    pairs = [split(p, m) for p, m in zip(frame["parameters"], labels, strict=True)]
    return frame.assign(
        parameters=[p for p, _ in pairs], **{KEY: [m if _said(m) else None for _, m in pairs]}
    )


def _said(label) -> bool:
    return isinstance(label, str) and bool(label)
