"""HMMER's hmmsearch as seed 002's stdio case study (section V-B, Table I): what hmmer_check
computes, as pure functions unit tested without ReFrame.

Three configurations of one search, `hmmsearch --noali --notextw HMM FASTA`:

    A  the results to stdout (the job's output file)
    B  the results to a file on the storage (`-o`)
    C  as B, with the sequence database first copied to node-local memory (/dev/shm)

The inputs are generated (a few protein families, each planted in every tenth sequence of a
random database) unless a facility names its own (Pfam-A.hmm and uniprot_sprot.fasta in the
seed). hmmsearch runs as an MPI program (`--mpi`) when the Spack view's is built with the job's
MPI, else Debian's (no MPI) as one process with `--cpu` threads.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

from iostudy.benchmarks import checks

CONFIGS = ("A", "B", "C")
ALPHABET = "ACDEFGHIKLMNPQRSTVWY"
MOTIF_LENGTH = 30
#: every PLANT_EVERY-th sequence of the database carries a family's motif
PLANT_EVERY = 10
SEED = 2017  # the seed's year: any fixed number keeps the inputs the same from run to run
RESULTS = "hmmsearch.out"  # configurations B and C: the -o file


def program(system: str, environ: str) -> tuple[Path | None, bool, str]:
    """(hmmsearch, runs as MPI, why not): the Spack view's when built with environ's MPI
    (`--mpi`), else the distribution's on PATH (threads), else (None, False, the reason)."""
    view, why = checks.spack_program(system, "hmmsearch", environ)
    if view is not None:
        return view, True, ""
    found = shutil.which("hmmsearch")
    if found:
        return Path(found), False, ""
    return None, False, f"{why}; and no hmmsearch on PATH (apt-get install hmmer)"


def arguments(config: str, hmm: Path, fasta: Path, results: Path, mpi: bool, cpus: int):
    """hmmsearch's options of a configuration (the seed's `--mpi --noali --notextw`)."""
    if config not in CONFIGS:
        raise ValueError(f"HMMER configuration {config!r}: not one of {', '.join(CONFIGS)}")
    args = ["--mpi"] if mpi else ["--cpu", str(cpus)]
    args += ["--noali", "--notextw"]
    if config in ("B", "C"):
        args += ["-o", str(results)]
    return args + [str(hmm), str(fasta)]


def _motifs(rng: random.Random, families: int) -> list[str]:
    return ["".join(rng.choice(ALPHABET) for _ in range(MOTIF_LENGTH)) for _ in range(families)]


def write_inputs(folder: Path, families: int, sequences: int, length: int) -> dict:
    """Writes folder/families.sto (one Stockholm alignment of 4 mutated copies per family's
    motif; hmmbuild makes the HMM file from it) and folder/db.fa (sequences random proteins of
    length residues, sequence i carrying family (i / 10) mod families's motif when i is a
    multiple of 10: :func:`planted`). Returns the alignment's and the database's paths."""
    if families < 1 or sequences < 1 or length < MOTIF_LENGTH:
        raise ValueError(
            f"families {families}, sequences {sequences}, length {length}: need at least one "
            f"family and sequence, and length >= {MOTIF_LENGTH}"
        )
    rng = random.Random(SEED)
    motifs = _motifs(rng, families)
    folder.mkdir(parents=True, exist_ok=True)
    alignment = folder / "families.sto"
    with open(alignment, "w") as sto:
        for k, motif in enumerate(motifs):
            sto.write(f"# STOCKHOLM 1.0\n#=GF ID fam{k}\n")
            for copy in range(4):
                row = list(motif)
                for _ in range(3):
                    row[rng.randrange(MOTIF_LENGTH)] = rng.choice(ALPHABET)
                sto.write(f"fam{k}_{copy} {''.join(row)}\n")
            sto.write("//\n")
    fasta = folder / "db.fa"
    with open(fasta, "w") as db:
        for i in range(sequences):
            seq = "".join(rng.choice(ALPHABET) for _ in range(length - MOTIF_LENGTH))
            if i % PLANT_EVERY == 0:
                k = (i // PLANT_EVERY) % families
                at = rng.randrange(len(seq) + 1)
                seq = seq[:at] + motifs[k] + seq[at:]
            else:
                seq += "".join(rng.choice(ALPHABET) for _ in range(MOTIF_LENGTH))
            db.write(f">s{i}\n{seq}\n")
    return alignment, fasta


def planted(families: int, sequences: int) -> dict[str, set[str]]:
    """{family: the names of the sequences carrying its motif} of :func:`write_inputs`."""
    found = {f"fam{k}": set() for k in range(families)}
    for i in range(0, sequences, PLANT_EVERY):
        found[f"fam{(i // PLANT_EVERY) % families}"].add(f"s{i}")
    return found


_QUERY = re.compile(r"^Query:\s+(\S+)\s+\[M=(\d+)\]", re.M)
_TARGETS = re.compile(r"^Target sequences:\s+(\d+)\s+\((\d+) residues searched\)", re.M)
_ELAPSED = re.compile(r"^# CPU time: .*Elapsed: (\d+):(\d+):([\d.]+)", re.M)
_HIT = re.compile(r"^\s+\S+\s+[\d.]+\s+[\d.]+\s+\S+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\d+\s+(\S+)")


def parse(text: str) -> dict:
    """hmmsearch's output: {"version", "queries": [{"name", "length", "hits": [names],
    "targets", "residues", "elapsed_s"}], "ok"}. ValueError when it is not hmmsearch's."""
    version = re.search(r"^# HMMER (\S+)", text, re.M)
    if not version or "# hmmsearch ::" not in text:
        raise ValueError("not hmmsearch output (no '# hmmsearch ::' header)")
    queries = []
    # Each query's block runs from its Query: line to the "//" that ends it.
    for block in re.split(r"^//$", text, flags=re.M):
        query = _QUERY.search(block)
        if not query:
            continue
        targets, elapsed = _TARGETS.search(block), _ELAPSED.search(block)
        if not targets or not elapsed:
            missing = "Target sequences" if not targets else "Elapsed"
            raise ValueError(f"query {query.group(1)}: no '{missing}' line (truncated output?)")
        scores = block.split("Scores for complete sequences", 1)[-1]
        scores = re.split(r"\n\n|Domain annotation", scores, maxsplit=1)[0]
        hours, minutes, seconds = elapsed.groups()
        queries.append(
            {
                "name": query.group(1),
                "length": int(query.group(2)),
                # hits above the inclusion threshold only: the table's rows before that line
                "hits": [
                    m.group(1)
                    for m in map(_HIT.match, scores.split("inclusion threshold")[0].splitlines())
                    if m
                ],
                "targets": int(targets.group(1)),
                "residues": int(targets.group(2)),
                "elapsed_s": int(hours) * 3600 + int(minutes) * 60 + float(seconds),
            }
        )
    if not queries:
        raise ValueError("hmmsearch output without any query (no 'Query:' line)")
    return {"version": version.group(1), "queries": queries, "ok": text.rstrip().endswith("[ok]")}


def sanity(parsed: dict, sequences: int | None, planted: dict | None) -> list[str]:
    """What is wrong with a search: not finished ([ok]), and, for generated inputs, a query
    that did not search the whole database, planted sequences missed or unplanted ones found."""
    problems = [] if parsed["ok"] else ["hmmsearch did not finish ([ok] missing)"]
    for query in parsed["queries"]:
        if sequences is not None and query["targets"] != sequences:
            problems.append(
                f"{query['name']}: {query['targets']} sequences searched, expected {sequences}"
            )
        if planted is None:
            continue
        expected = planted.get(query["name"], set())
        missed, extra = expected - set(query["hits"]), set(query["hits"]) - expected
        if missed or extra:
            problems.append(
                f"{query['name']}: planted sequences missed {sorted(missed)[:5]}, "
                f"unplanted found {sorted(extra)[:5]}"
            )
    if planted is not None and {q["name"] for q in parsed["queries"]} != set(planted):
        problems.append(
            f"queries {[q['name'] for q in parsed['queries']]}, expected {sorted(planted)}"
        )
    return problems


def performance(parsed: dict) -> dict[str, float]:
    """elapsed_s: hmmsearch's own elapsed time summed over the queries (s)."""
    return {"elapsed_s": sum(q["elapsed_s"] for q in parsed["queries"])}
