rule render_report:
    """A new version of a study's report, reports/<study>/v<N+1>/, and its index page (one per
    study: config's, else each the runs' manifests name)."""
    input:
        runs=get_study_runs,
        imported=get_imported,
    output:
        REPORT_INDEX,
    log:
        f"{LOGS}/render_report/{{study}}.log",
    params:
        iostudy=iostudy(),
        store=STORE,
        study=lambda wildcards: wildcards.study,
        reports=lambda wildcards, output: Path(output[0]).parent.parent,
    shell:
        "{params.iostudy} report build --store {params.store:q} --study {params.study:q} "
        "--reports {params.reports:q} > {log:q} 2>&1"
