rule ingest_run:
    """Ingest one run directory (logs, ReFrame report, benchmark output) into the store.
    Re-runs when the run's manifest changes; the store skips logs it already holds."""
    input:
        manifest=f"{RESULTS}/{{run}}/manifest.json",
    output:
        touch(f"{DONE}/ingest_run/{{run}}"),
    log:
        f"{LOGS}/ingest_run/{{run}}.log",
    params:
        iostudy=iostudy(),
        run_dir=lambda wildcards: f"{RESULTS}/{wildcards.run}",
        # the store: the folder above the marker's .workflow/<rule>/ (a prefix of the output)
        store=lambda wildcards, output: Path(output[0]).parents[2],
    threads: config["ingest_jobs"]
    shell:
        "{params.iostudy} ingest {params.run_dir:q} --store {params.store:q} --jobs {threads} "
        "> {log:q} 2>&1"
