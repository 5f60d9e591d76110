/* MPI glue in the preloaded library. MPI_Init, MPI_Init_thread and MPI_Finalize have the same
 * binary interface in every MPI, so they are wrapped here without mpi.h; everything that needs
 * MPI's types lives in a plugin built once per MPI flavour (mpi_plugin.c), loaded from beside
 * this library when the program initializes MPI. A program that never calls MPI_Init therefore
 * never loads MPI because of iostudy. */
#include "iostudy.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static struct ios_comm comm;
static int have_comm;

/* The MPI library's function, or NULL; never one of this library's own PMPI_ names, which
 * would call themselves. */
static void *lookup_mpi(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    Dl_info found, self;
    if (!f && (f = dlsym(RTLD_DEFAULT, name)) != NULL && dladdr(f, &found) &&
        dladdr((void *)lookup_mpi, &self) && found.dli_fbase == self.dli_fbase)
        f = NULL;
    return f;
}

/* The real function; without it (a program that calls MPI_Init with no MPI library) the call
 * fails with a warning: the runtime never aborts the program it watches. */
static void *real_mpi(const char *name) {
    void *f = lookup_mpi(name);
    return f ? f : ios_missing_symbol(name, "MPI");
}

/* "openmpi" or "mpich" (and its derivatives), from the library version string. */
static const char *mpi_flavour(void) {
    int (*get_version)(char *, int *) = lookup_mpi("PMPI_Get_library_version");
    static char version[8192];
    int len = 0;
    if (!get_version || get_version(version, &len) != 0)
        return NULL;
    if (strstr(version, "Open MPI"))
        return "openmpi";
    if (strstr(version, "MPICH") || strstr(version, "Intel(R) MPI") || strstr(version, "MVAPICH"))
        return "mpich";
    return NULL;
}

static void load_plugin(void) {
    const char *flavour = mpi_flavour();
    Dl_info self;
    char path[PATH_MAX];
    if (!flavour) {
        ios_warn("unknown MPI library; each process writes its own log");
        return;
    }
    if (!dladdr((void *)load_plugin, &self) || !self.dli_fname) {
        ios_warn("cannot locate libiostudy; each process writes its own log");
        return;
    }
    const char *slash = strrchr(self.dli_fname, '/');
    int dirlen = slash ? (int)(slash - self.dli_fname) : 1;
    snprintf(path, sizeof path, "%.*s/libiostudy-mpi-%s.so", dirlen, slash ? self.dli_fname : ".",
             flavour);
    void *plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ios_mpi_plugin_init_fn init =
        plugin ? (ios_mpi_plugin_init_fn)dlsym(plugin, "ios_mpi_plugin_init") : NULL;
    if (!init || init(&comm) != 0) {
        ios_warn("cannot load %s (%s); each process writes its own log", path,
                 plugin ? "no ios_mpi_plugin_init" : dlerror());
        return;
    }
    have_comm = 1;
    ios_mpiio_enable(&comm);
    /* A job without a scheduler's job id is known by rank 0's process id. */
    int64_t jobid = ios_job_id();
    comm.bcast(&jobid, sizeof jobid);
    ios_mmap_set_rank(comm.rank, comm.size, jobid);
}

static void mpi_started(void) {
    if (getenv("DARSHAN_DISABLE"))
        return;
    int saved = ios_in_runtime;
    ios_guard(1);
    ios_core_start();
    if (atomic_load(&ios_state) == IOS_ON) { /* not when APP_EXCLUDE refused the program */
        load_plugin();
        ios_config_set_rank(have_comm ? comm.rank : 0);
    }
    ios_guard(saved);
}

IOS_EXPORT int MPI_Init(int *argc, char ***argv) {
    int (*real)(int *, char ***) = real_mpi("PMPI_Init");
    int ret = real(argc, argv);
    if (ret == 0)
        mpi_started();
    return ret;
}

/* Open MPI's Fortran bindings call PMPI_Init, PMPI_Init_thread and PMPI_Finalize: those names
 * are the same wrappers (the real calls are looked up past this library). */
IOS_EXPORT int PMPI_Init(int *argc, char ***argv) __attribute__((alias("MPI_Init")));

IOS_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int (*real)(int *, char ***, int, int *) = real_mpi("PMPI_Init_thread");
    int ret = real(argc, argv, required, provided);
    if (ret == 0)
        mpi_started();
    return ret;
}
IOS_EXPORT int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
    __attribute__((alias("MPI_Init_thread")));

int ios_mpi_unfinished(int *rank) {
    *rank = comm.rank;
    return have_comm;
}

/* The log is written collectively before MPI goes away. */
IOS_EXPORT int MPI_Finalize(void) {
    int (*real)(void) = real_mpi("PMPI_Finalize");
    ios_core_shutdown_mpi(have_comm ? &comm : NULL);
    have_comm = 0;
    return real();
}
IOS_EXPORT int PMPI_Finalize(void) __attribute__((alias("MPI_Finalize")));
