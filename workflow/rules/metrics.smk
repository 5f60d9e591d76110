rule compute_metrics:
    """Metric tables of the whole store as CSV files in the metrics folder, for analyses outside
    the report: per job (jobs.csv: MiB/s/CN and the rest, as `iostudy jobs` and the report define
    them), Table I cross-checks of the I/O models and of every IOR run, seed-003 histograms."""
    input:
        get_ingested_runs,
    output:
        directory(METRICS),
    log:
        f"{LOGS}/compute_metrics.log",
    params:
        iostudy=iostudy(),
        store=STORE,
    shell:
        "{params.iostudy} metrics --store {params.store:q} --out {output:q} > {log:q} 2>&1"
