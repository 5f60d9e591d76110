"""The report's diagnoses section: what slows the study's jobs (iostudy.metrics.diagnose), per
rule, per project, and the findings themselves (the page shows the first; the CSV has all)."""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.metrics import diagnose

pd = deferred("pandas")

SECTION = "diagnoses"
TOP_RULES = 3  # rules named per project on the page


def by_rule(found: pd.DataFrame, jobs: int) -> pd.DataFrame:
    """Each rule that fired: its Drishti code, jobs, their share, projects, and the advice;
    the most frequent first."""
    columns = ["rule", "drishti", "jobs", "jobs_pct", "projects", "advice"]
    if found.empty:
        return pd.DataFrame(columns=columns)
    g = found.assign(project=found["account"].fillna("(unknown)")).groupby("rule", sort=False)
    table = g.agg(
        drishti=("drishti", "first"),
        jobs=("log_sha256", "nunique"),
        projects=("project", "nunique"),
        advice=("advice", "first"),
    ).reset_index()
    table["jobs_pct"] = 100 * table["jobs"] / jobs
    table = table.sort_values("jobs", ascending=False, kind="stable")
    return table[columns].reset_index(drop=True)


def by_project(found: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """Per project (Slurm account): its jobs, those with a finding, its most frequent rules;
    most affected first."""
    projects = facts["account"].fillna("(unknown)")
    total = projects.value_counts().rename("jobs")
    found = found.assign(project=found["account"].fillna("(unknown)"))
    with_finding = found.groupby("project")["log_sha256"].nunique().rename("jobs_with_a_finding")
    rules = found.groupby("project")["rule"].agg(
        lambda r: ", ".join(f"{name} ({n})" for name, n in r.value_counts().head(TOP_RULES).items())
    )
    table = pd.concat([total, with_finding, rules.rename("most_frequent")], axis=1)
    table = table.dropna(subset=["jobs_with_a_finding"]).rename_axis("project").reset_index()
    table["jobs_with_a_finding"] = table["jobs_with_a_finding"].astype("int64")
    return table.sort_values(["jobs_with_a_finding", "project"], ascending=[False, True])


def add_section(add, con, anonymizer=None, jobs: pd.DataFrame | None = None):
    """The section through report.render's add(); nothing when the study has no job log.
    jobs: the study's job table when the caller has it already. Returns the findings (names
    anonymized when asked; None: no job log)."""
    facts, found = diagnose.findings(con, diagnose.thresholds(), jobs)
    if facts.empty:
        return None
    if anonymizer is not None:
        facts, found = anonymizer.frame(facts), anonymizer.frame(found)
        found["files"] = found["files"].map(anonymizer.text, na_action="ignore")  # their paths
    jobs = len(facts)
    add(
        SECTION,
        "table",
        "diagnoses-by-rule",
        f"What slows the {jobs:,} jobs: each diagnosis rule that fired (iostudy diagnose; "
        "thresholds in configs/diagnoses.json, from seed 000 and Drishti's triggers) with its "
        "Drishti code (none: iostudy's own), the jobs it fired on and their share, the "
        "projects, and its advice.",
        by_rule(found, jobs),
        table=True,
    )
    if found.empty:
        return found
    add(
        SECTION,
        "table",
        "diagnoses-by-project",
        "Per project (Slurm account; (unknown) without accounting): its jobs, those with a "
        f"finding, and its {TOP_RULES} most frequent rules with their jobs; most affected first.",
        by_project(found, facts),
        table=True,
    )
    add(
        SECTION,
        "table",
        "diagnoses-findings",
        "Every finding: the job (its id links to its page), its code, the rule and the numbers "
        "that fired it, the files with the most of it and the ranks, and whether its code had it "
        "before (the advice per rule is in the table above; the log, processes and advice of "
        "every finding in the CSV).",
        found,
        table=True,
        hide=["log_sha256", "advice", "run_id", "log_path", "nprocs"],
    )
    return found


def section(d) -> None:
    """The section of a report being made (iostudy.report.sectiondata.SectionData); its
    findings go into d.found["diagnoses"] for the job and project pages."""
    d.found["diagnoses"] = add_section(
        d.add, d.data.con, d.options.anonymizer, jobs=d.data.job_table()
    )
