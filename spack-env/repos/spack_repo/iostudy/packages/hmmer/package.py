"""HMMER 3.4 from its GitHub tag, so that an air-gapped site can mirror it reproducibly."""

from spack.package import *
from spack_repo.builtin.packages.hmmer.package import Hmmer as BuiltinHmmer


class Hmmer(BuiltinHmmer):
    """The builtin recipe with 3.4 taken from GitHub: eddylab.org's release tarball cannot be
    rebuilt byte for byte from any public repository, GitHub's tag archives can (git archive |
    gzip -n), so a source mirror made on a connected machine can be checked offline. The tag
    carries neither Easel nor configure: Easel 0.49 (the release's) is a resource and
    autoconf generates both configure scripts."""

    version(
        "3.4",
        sha256="298cbe76ccc516a86a85cbe2e91690074deed1d66b19d88ff6829a837befd85e",
        url="https://github.com/EddyRivasLab/hmmer/archive/refs/tags/hmmer-3.4.tar.gz",
        preferred=True,
    )
    resource(
        name="easel",
        url="https://github.com/EddyRivasLab/easel/archive/refs/tags/easel-0.49.tar.gz",
        sha256="90f75bc4727e6dfb5f402d9f70cf4a606d9639f72d21e07461279d3f3f06b918",
        destination="",
        placement="easel",
        when="@3.4",
    )
    depends_on("autoconf", type="build", when="@3.4")

    def install(self, spec, prefix):
        if spec.satisfies("@3.4"):
            for source in (".", "easel"):
                with working_dir(source):
                    which("autoconf")()
        super().install(spec, prefix)
