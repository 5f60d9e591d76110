/* Runtime life cycle: resolving the real functions, configuration, start and shutdown, fork,
 * and the bounded record and name memory every module registers its records in. */
#include "wrap.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Atomic int ios_state = IOS_OFF;
__thread volatile int ios_in_runtime __attribute__((tls_model("initial-exec")));
int64_t ios_origin_ns;
struct ios_config ios_config;

atomic_uint ios_lock_flag;
static pid_t owner_pid; /* the process whose records these are (a vfork child is not it) */
static int warned;      /* at most one warning line per process */

/* The real functions a signal handler may reach first through the runtime (dlsym is not
 * async-signal-safe), and those its own I/O and the ends of a process use; every other one is
 * resolved at its first call (a dlsym each: resolving all ~150 at start was most of the fixed
 * cost of a process). */
static void resolve_early(void) {
#define EARLY(name)                                                                                \
    _Static_assert(IOS_IS_EARLY(name), #name " is resolved early: mark it IOS_EARLY_" #name);      \
    IOS_REAL(name)
    IOS_EARLY_REAL(EARLY)
#undef EARLY
}

/* What a wrapper calls when the real function is missing: the call fails, as MPI, HDF5 and
 * PnetCDF report failure (a nonzero MPI error code, a negative id or status), with ENOSYS. Called
 * through the wrapper's own pointer type: the arguments, in registers, are ignored. */
static long missing_function(void) {
    errno = ENOSYS;
    return -1;
}

/* The real function a wrapper of an MPI, HDF5 or PnetCDF call forwards to. Missing (the program
 * has no such library, or an unusual build of it): one warning, and the call fails; the runtime
 * never aborts the program it watches. */
void *ios_missing_symbol(const char *name, const char *library) {
    ios_warn("%s is not in the %s library the program uses: the call fails", name, library);
    return (void *)missing_function;
}

void *ios_next_symbol(const char *name, const char *library) {
    void *f = dlsym(RTLD_NEXT, name);
    return f ? f : ios_missing_symbol(name, library);
}

/* The file fd 2 was when the program started: the warning goes there only while fd 2 is still
 * that file. A program that closed fd 2 and opened its own data there must not find our line in
 * its data (coreutils close fd 2 at exit: the warning is then lost, not misplaced). */
static dev_t stderr_dev;
static ino_t stderr_ino;
static int stderr_known;

static void remember_stderr(void) {
    struct stat st;
    stderr_known = ios_real.fstat && IOS_CALL(fstat)(STDERR_FILENO, &st) == 0;
    if (stderr_known) {
        stderr_dev = st.st_dev;
        stderr_ino = st.st_ino;
    }
}

static int stderr_unchanged(void) {
    struct stat st;
    return stderr_known && IOS_CALL(fstat)(STDERR_FILENO, &st) == 0 && st.st_dev == stderr_dev &&
           st.st_ino == stderr_ino;
}

static void write_to_stderr(const char *line, size_t n) {
    if (ios_real.write && stderr_unchanged())
        (void)!IOS_CALL(write)(STDERR_FILENO, line, n);
}

static void warn_line(const char *fmt, va_list ap) {
    char line[512] = "iostudy: ";
    size_t n = strlen(line);
    vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    n = strlen(line);
    line[n++] = '\n';
    IOS_KEEP_ERRNO(write_to_stderr(line, n));
}

void ios_warn(const char *fmt, ...) {
    if (warned++)
        return;
    va_list ap;
    va_start(ap, fmt);
    warn_line(fmt, ap);
    va_end(ap);
}

void ios_warn_config(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    warn_line(fmt, ap);
    va_end(ap);
}

/* ---- bounded record and name memory -----------------------------------------------------------
 */
static struct ios_map names; /* record id -> name */
static size_t modmem_used, namemem_used;
static uint64_t partial_flags;

void ios_set_partial(int mod) {
    partial_flags |= UINT64_C(1) << mod;
    ios_mmap_set_partial(partial_flags);
}

uint64_t ios_partial_flags(void) { return partial_flags; }

const char *ios_record_name(uint64_t id) { return ios_map_get(&names, id); }

/* The names' copies, kept until the process ends or a forked child forgets its parent's records:
 * carved from chunks, freed together (a malloc per name was a tenth of what a new file cost). */
#define NAME_CHUNK 16384
struct name_chunk {
    struct name_chunk *next;
    size_t used, cap;
    char data[];
};
static struct name_chunk *name_chunks;

static char *name_memory(size_t n) {
    struct name_chunk *c = name_chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > NAME_CHUNK ? n : NAME_CHUNK;
        if (!(c = malloc(sizeof *c + cap)))
            return NULL;
        *c = (struct name_chunk){name_chunks, 0, cap};
        name_chunks = c;
    }
    c->used += n;
    return c->data + c->used - n;
}

static void free_names(void) {
    while (name_chunks) {
        struct name_chunk *c = name_chunks;
        name_chunks = c->next;
        free(c);
    }
}

/* Names a record not named yet (len: strlen(name)). */
static int name_new_record(uint64_t id, const char *name, size_t len) {
    char *copy = name_memory(len + 1);
    if (!copy)
        return -1;
    if (ios_map_put(&names, id, copy) != 0) {
        name_chunks->used -= len + 1; /* the copy was the last carved */
        return -1;
    }
    memcpy(copy, name, len + 1);
    ios_mmap_add_name(id, copy, len);
    return 0;
}

int ios_record_memory_spent(size_t size) {
    return modmem_used + size > (size_t)(ios_config.modmem_mib * 1048576.0);
}

void ios_refuse_record(int mod, const char *name) {
    if (ios_config_refuses(mod, name) != IOS_REFUSED_BY_RULE)
        ios_set_partial(mod); /* refused by MAX_RECORDS, or for memory */
}

int ios_reserve_record(int mod, uint64_t id, const char *name, size_t size) {
    int refused = ios_config_refuses(mod, name);
    if (refused) {
        if (refused == IOS_REFUSED_FULL)
            ios_set_partial(mod);
        return -1;
    }
    if (ios_record_memory_spent(size)) {
        ios_set_partial(mod); /* spent: every new name of a file-heavy program ends here */
        return -1;
    }
    int known = ios_map_get(&names, id) != NULL;
    size_t len = known ? 0 : strlen(name);
    size_t name_cost = known ? 0 : sizeof(uint64_t) + len + 1;
    if (namemem_used + name_cost > (size_t)(ios_config.namemem_mib * 1048576.0) ||
        (!known && name_new_record(id, name, len) != 0)) {
        ios_set_partial(mod);
        return -1;
    }
    modmem_used += size;
    namemem_used += name_cost;
    ios_config_count_record(mod);
    return 0;
}

void *ios_register_record(int mod, uint64_t id, const char *name, size_t size) {
    if (ios_reserve_record(mod, id, name, size) != 0)
        return NULL;
    void *rec = ios_mmap_on ? ios_mmap_alloc(mod, size) : NULL;
    if (!rec && !(rec = calloc(1, size)))
        ios_set_partial(mod);
    return rec;
}

/* Zeroed memory for a module's file struct. These live until the process ends (a forked child
 * leaks its parent's), so they are carved from chunks: one calloc per file was a sixth of what a
 * new file cost. Called inside the lock. */
#define FILE_CHUNK 16384
static void *file_memory(size_t size) {
    static unsigned char *next, *end;
    size = (size + 15) & ~(size_t)15; /* malloc's alignment */
    if (size > FILE_CHUNK / 4)
        return calloc(1, size);
    if (size > (size_t)(end - next)) {
        next = calloc(1, FILE_CHUNK);
        end = next ? next + FILE_CHUNK : NULL;
        if (!next)
            return NULL;
    }
    void *f = next;
    next += size;
    return f;
}

void *ios_file_by_name(struct ios_map *files, int mod, const char *name, size_t file_size,
                       size_t rec_size, int *created) {
    uint64_t id = ios_record_id(name);
    void **f = ios_map_get(files, id);
    if (f)
        return f;
    /* The record first: once memory is spent, every new name stops here, allocating nothing. */
    struct ios_base_record *rec = ios_register_record(mod, id, name, rec_size);
    if (!rec)
        return NULL;
    rec->id = id;
    f = file_memory(file_size);
    if (!f || ios_map_put(files, id, f) != 0)
        return NULL; /* a registered record without its file keeps its zero counters */
    *f = rec;
    if (created)
        *created = 1;
    return f;
}

/* Forgets every record (a forked child starts its own log). Records of the parent are leaked on
 * purpose: other modules' state may still point at them until their own reset. */
static void reset_records(void) {
    free_names();
    ios_map_free(&names);
    modmem_used = namemem_used = 0;
    partial_flags = 0;
    ios_config_forget_records();
    for (int m = 0; m < IOS_NMODULES; m++)
        ios_module_ops[m].reset();
}

/* ---- life cycle ---------------------------------------------------------------------------------
 */

void ios_core_start(void) {
    if (atomic_load(&ios_state) != IOS_OFF)
        return;
    resolve_early(); /* done by the constructor, unless another library's started the runtime */
    ios_guard(1);
    ios_config_read();
    if (ios_config_app_excluded(ios_job_app_name())) { /* APP_EXCLUDE: no records, no log */
        ios_guard(0);
        return;
    }
    owner_pid = getpid();
    ios_job_begin();
    ios_mmap_open();
    ios_guard(0);
    atomic_store(&ios_state, IOS_ON);
}

/* Stops recording: 1 for the one caller that does it, in the process whose records these are
 * (a vfork child shares them, but they are not its own). */
static int stop_recording(void) {
    int expected = IOS_ON;
    return getpid() == owner_pid && atomic_compare_exchange_strong(&ios_state, &expected, IOS_DONE);
}

/* Stops recording and takes the lock, which waits for the updates in flight on other threads:
 * 1, with the guard set, for the one caller that does it. 0 for any other caller, and for a
 * signal handler that interrupted the runtime on its own thread (it may hold the lock, a record
 * half updated) and ends the process: the memory-mapped log then stays, as a killed one's does. */
static int stop_and_hold(void) {
    if (ios_in_runtime || !stop_recording())
        return 0;
    ios_guard(1);
    ios_lock();
    return 1;
}

/* Stops recording and writes the log; only the first caller does anything. */
static void shutdown_with(const struct ios_comm *comm) {
    int saved = errno;
    if (!stop_and_hold())
        return;
    ios_unlock(); /* later updates see the state and leave the records alone */
    ios_mmap_close(ios_write_log(comm));
    ios_guard(0);
    errno = saved;
}

void ios_core_shutdown(void) { shutdown_with(ios_local_comm()); }

void ios_core_shutdown_mpi(const struct ios_comm *comm) {
    shutdown_with(comm ? comm : ios_local_comm());
}

/* An MPI process that ends without MPI_Finalize: no collective is possible any more, so each
 * process leaves its memory-mapped log (rank, size and job id in it) and the job's log is merged
 * from them as from a killed job's (the Slurm epilog; iostudy logs merge). Without memory-mapped
 * logs each process writes a log of its own. Returns 1 when it took care of the ending. */
static int leave_for_merge(void) {
    int rank;
    if (!ios_mpi_unfinished(&rank) || !ios_mmap_on)
        return 0;
    int saved = errno;
    if (stop_and_hold()) {
        ios_unlock();
        if (rank == 0) {
            const char *path = ios_mmap_path(), *slash = strrchr(path, '/');
            ios_warn("MPI_Finalize was not called: each process leaves its log in %.*s "
                     "(*_mmap-log-*); `iostudy logs merge` makes the job's log of them",
                     slash ? (int)(slash - path) : 1, slash ? path : ".");
        }
        ios_mmap_close(1);
        ios_guard(0);
    }
    errno = saved;
    return 1;
}

/* _exit and exec are async-signal-safe and programs call them from signal handlers, so what the
 * runtime does before them is too: no allocation, no stdio, no lock but its own taken from
 * outside it. The records already are a log, in the memory-mapped file: it is written out as
 * this image's log (when anything was recorded, or always: every) and the file removed. Returns
 * 1 with recording stopped and the lock held, *log naming the log written ("" if none). */
static int stop_into_log(int every, char *log, size_t loglen) {
    log[0] = '\0';
    int saved = errno;
    if (!ios_mmap_on || !stop_and_hold())
        return 0;
    const char *why = NULL;
    if ((every || modmem_used > 0 || partial_flags) && ios_mmap_write_log(log, loglen, &why) != 0) {
        ios_warn_log_lost(log, why ? why : "");
        log[0] = '\0';
    } else {
        ios_mmap_unlink();
    }
    errno = saved;
    return 1;
}

IOS_EXPORT void _exit(int status) {
    static char log[PATH_MAX];
    IOS_REAL(_exit);
    if (!leave_for_merge() && !stop_into_log(1, log, sizeof log))
        ios_core_shutdown(); /* without a memory-mapped log: the whole shutdown, as exit does */
    IOS_CALL(_exit)(status);
    __builtin_unreachable();
}

/* exec replaces the process image: the image's log is written first (an image that recorded
 * nothing leaves none: a shell's child that only execs). If exec fails the image goes on: the
 * log just written is removed and the records go on growing, into a memory-mapped file made
 * again, so the process still ends with one log of everything. */
static char exec_log[PATH_MAX];

int ios_core_before_exec(void) {
    if (leave_for_merge())
        return 0;
    return stop_into_log(0, exec_log, sizeof exec_log);
}

void ios_core_exec_failed(int stopped) {
    if (!stopped)
        return;
    int saved = errno;
    if (exec_log[0])
        unlink(exec_log);
    ios_mmap_relink();
    atomic_store(&ios_state, IOS_ON);
    ios_unlock();
    ios_guard(0);
    errno = saved;
}

/* fork from a signal handler that interrupted the runtime on this thread: the lock may be this
 * thread's already, so it is not taken (it would wait for ever). */
static __thread int fork_took_lock;

static void atfork_prepare(void) {
    fork_took_lock = !ios_in_runtime;
    if (fork_took_lock)
        ios_lock();
}

static void atfork_parent(void) {
    if (fork_took_lock)
        ios_unlock();
}

static void atfork_child(void) {
    ios_unlock();
    if (atomic_load(&ios_state) != IOS_ON)
        return;
    ios_mmap_forget();
    if (!fork_took_lock) {
        /* The interrupted update resumes in this child, half done: the child records nothing,
         * and the update lands in private memory, not in the parent's log. */
        atomic_store(&ios_state, IOS_DONE);
        return;
    }
    /* The child is a new, non-MPI process: it writes its own log of its own I/O. */
    ios_guard(1);
    pid_t parent = getppid();
    reset_records();
    warned = 0;
    owner_pid = getpid();
    ios_job_begin();
    ios_job_set_fork_parent(parent);
    ios_mmap_open();
    ios_guard(0);
}

/* glibc passes argc and argv to ELF constructors; they give the command line for the log. */
__attribute__((constructor)) static void ios_constructor(int argc, char **argv) {
    resolve_early();
    remember_stderr();
    ios_job_save_args(argc, argv);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    if (getenv("DARSHAN_DISABLE"))
        return;
    if (getenv("DARSHAN_ENABLE_NONMPI")) {
        ios_core_start();
        ios_config_set_rank(0);
    }
}

__attribute__((destructor)) static void ios_destructor(void) {
    /* An MPI program that never reached MPI_Finalize leaves its memory-mapped log. */
    if (!leave_for_merge())
        ios_core_shutdown();
}
