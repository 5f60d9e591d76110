rule render_report:
    """A new version of the study's report, reports/<study>/v<N+1>/, and its index page."""
    input:
        runs=get_ingested_runs,
        imported=get_imported,
    output:
        REPORT_INDEX,
    log:
        f"{LOGS}/render_report.log",
    params:
        iostudy=iostudy(),
        store=STORE,
        study=STUDY,
        reports=lambda wildcards, output: Path(output[0]).parent.parent,
    shell:
        "{params.iostudy} report build --store {params.store:q} --study {params.study:q} "
        "--reports {params.reports:q} > {log:q} 2>&1"
