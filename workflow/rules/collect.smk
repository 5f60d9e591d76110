rule import_sacct:
    """Slurm accounting saved with sacct --parsable2 (config `sacct`: name -> file) into the
    store's sched table: the jobs' accounts, nodes and cores, and seed 000's coverage."""
    input:
        lambda wildcards: config["sacct"][wildcards.name],
    output:
        touch(f"{DONE}/import_sacct/{{name}}"),
    log:
        f"{LOGS}/import_sacct/{{name}}.log",
    params:
        iostudy=iostudy(),
        # the store: the folder above the marker's .workflow/<rule>/ (a prefix of the output)
        store=lambda wildcards, output: Path(output[0]).parents[2],
    shell:
        "{params.iostudy} sacct import {input:q} --name {wildcards.name:q} "
        "--store {params.store:q} > {log:q} 2>&1"


rule import_iostat:
    """A storage server's iostat-mon folder (config `iostat`: name -> folder) into the store's
    iostat table: seed 000's device throughput and burstiness."""
    input:
        lambda wildcards: config["iostat"][wildcards.name],
    output:
        touch(f"{DONE}/import_iostat/{{name}}"),
    log:
        f"{LOGS}/import_iostat/{{name}}.log",
    params:
        iostudy=iostudy(),
        # the store: the folder above the marker's .workflow/<rule>/ (a prefix of the output)
        store=lambda wildcards, output: Path(output[0]).parents[2],
    shell:
        "{params.iostudy} iostat-mon import {input:q} --name {wildcards.name:q} "
        "--store {params.store:q} > {log:q} 2>&1"


rule import_fsstats:
    """An fsstats snapshot (config `fsstats`: name -> snapshot file) into the store's fsstats
    table: seed 000's file-system growth and file sizes."""
    input:
        lambda wildcards: config["fsstats"][wildcards.name],
    output:
        touch(f"{DONE}/import_fsstats/{{name}}"),
    log:
        f"{LOGS}/import_fsstats/{{name}}.log",
    params:
        iostudy=iostudy(),
        # the store: the folder above the marker's .workflow/<rule>/ (a prefix of the output)
        store=lambda wildcards, output: Path(output[0]).parents[2],
    shell:
        "{params.iostudy} fsstats import {input:q} --name {wildcards.name:q} "
        "--store {params.store:q} > {log:q} 2>&1"
