"""The system a campaign runs on, resolved once from its name before anything starts and handed
down as it is (`iostudy campaign run`: :mod:`iostudy.cli.campaign`), so that no step of a run
loads the system's files again."""

from __future__ import annotations

from dataclasses import dataclass

from iostudy.benchmarks import spackenv
from iostudy.core import config


@dataclass(frozen=True)
class RunSystem:
    """A system's validated description (configs/systems/<name>/system.json), its performance
    references (configs/references/<name>.json) and what a run takes from its storage and its
    Spack build."""

    description: dict
    references: dict
    #: the names of the devices behind its storage (config.storage_targets), in order
    storage_targets: tuple[str, ...]
    #: the MPI flavour its Spack view's programs are built with; None without a Spack build
    spack_view_mpi: str | None

    @property
    def name(self) -> str:
        return self.description["name"]


def resolve_system(name: str) -> RunSystem:
    """The system called name, read and validated."""
    description = config.load_system(name)
    references = config.load_references(name)
    targets = tuple(t["name"] for t in config.storage_targets(description))
    view_mpi = spackenv.view_mpi(name)
    return RunSystem(description, references, targets, view_mpi[0] if view_mpi else None)
