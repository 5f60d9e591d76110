"""ReFrame 4 configuration of every system under configs/systems/, derived at import time.

Nothing here is a fact: each system.json (validated against configs/schemas/system.schema.json)
is the one source of truth, turned into ReFrame's systems and environments by
iostudy.run.profiles.reframe_site_configuration. Every system matches any host name, so name one:

    reframe -C configs/reframe_settings.py --system testcluster -c CHECK -r

Needs the iostudy package importable (it is in the project's .venv). IOSTUDY_CONFIGS points at
another configs/ folder (a site's copy), as for the iostudy command.
"""

from iostudy.core import config
from iostudy.run import profiles

# A partition has one launcher, each MPI flavour its own mpirun: this launcher runs the one the
# environment names (see iostudy.run.profiles.reframe_launcher).
profiles.register_reframe_launcher()
profiles.give_jobs_the_callers_tmpdir()
site_configuration = profiles.reframe_site_configuration(
    [config.load_system(name) for name in config.system_names()]
)
