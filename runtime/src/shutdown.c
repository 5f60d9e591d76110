/* Shutdown: the runtime's side of its log. Collects every module's records, moves their
 * timestamps to the job's start, reduces files shared by all ranks to one rank -1 record
 * (reference §7), fills the job record, and has the log writer (logwrite.c) write the log. */
#include "iostudy.h"

#include <string.h>
#include <unistd.h>

const struct ios_module_ops ios_module_ops[IOS_NMODULES] = {
#define X(NAME, id_, version_, rec_size_, collect_, reset_, reducer_, in_mmap_)                    \
    [IOS_M_##NAME] = {.collect = collect_, .reset = reset_},
#include "modules.def"
#undef X
};

static int64_t timespec_ns(struct timespec ts) {
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void set_ranks(struct ios_record_set *set, int rank) {
    for (size_t off = 0, i = 0; i < set->count; i++) {
        struct ios_base_record *base = (void *)(set->buf + off);
        base->rank = rank;
        off += ios_record_size(set, base);
    }
}

/* Every module's records into sets, as the job's log holds them: timestamps from the job's
 * start (shift seconds before this process's), this rank's, and in an MPI job the shared ones
 * reduced. */
static void collect_records(const struct ios_comm *comm, struct ios_record_set *sets,
                            double shift) {
    for (int r = R_MODULES; r < N_REGIONS; r++) {
        const struct ios_reducer *reducer = module_of(r)->reducer;
        if (!ios_module_ops[r - R_MODULES].collect)
            continue;
        if (ios_dxt_module(module_of(r)->id)) { /* per rank, never reduced */
            ios_dxt_shift(&sets[r], shift);
            set_ranks(&sets[r], comm->rank);
            continue;
        }
        if (reducer)
            ios_shift_timestamps(&sets[r], reducer, shift);
        set_ranks(&sets[r], comm->rank);
        if (comm->mpi && !ios_config.disable_shared_redux) {
            if (reducer)
                ios_reduce_shared(comm, &sets[r], reducer);
            else
                ios_mark_shared(comm, &sets[r]);
        }
    }
}

/* The job record: fixed part, then command line and mount table; and where the log goes. */
static void fill_job(const struct ios_comm *comm, struct log_content *c, int64_t job_start,
                     int64_t job_end) {
    c->jr.job.uid = getuid();
    ios_set_job_span(&c->jr.job, job_start, job_end);
    c->jr.job.nprocs = comm->size;
    c->jr.job.jobid = ios_job_id();
    ios_job_metadata(c->jr.job.metadata, sizeof c->jr.job.metadata);
    ios_job_exe_mounts(c->jr.exe, sizeof c->jr.exe);
    if (ios_job_log_path(c->jr.job.jobid, c->path, sizeof c->path, c->stem, sizeof c->stem,
                         &c->why) != 0 &&
        !c->why)
        c->why = "no log path";
}

void ios_warn_log_lost(const char *path, const char *why) {
    const char *mapped = ios_mmap_path(); /* NULL: no file was made, or none at all */
    ios_warn("cannot write the log %s: %s; %s%s", path[0] ? path : "(none)", why,
             mapped ? "its records stay in " : "this run leaves no log", mapped ? mapped : "");
}

int ios_write_log(const struct ios_comm *comm) {
    static struct log_content c; /* large: not on the stack of a program's last moments */
    double write_start = ios_now();
    memset(&c, 0, sizeof c);
    for (int r = R_MODULES; r < N_REGIONS; r++) {
        /* A process alone writes its records where they stand; an MPI rank's are shifted and
         * reduced, which must not reach the memory-mapped log a kill would leave. */
        c.sets[r].in_place = !comm->mpi;
        if (ios_module_ops[r - R_MODULES].collect)
            ios_module_ops[r - R_MODULES].collect(&c.sets[r]);
    }

    /* Job start is the earliest process start, end the latest shutdown. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t own_start = timespec_ns(ios_job_start());
    int64_t span[2] = {-own_start, timespec_ns(now)};
    comm->allreduce_i64(span, 2, IOS_OP_MAX);
    int64_t job_start = -span[0], job_end = span[1];
    double shift = (double)(own_start - job_start) * 1e-9;
    collect_records(comm, c.sets, shift);

    /* Every heatmap record of a log must have the same bins (PyDarshan requires it). */
    double run_time = (double)(job_end - job_start) * 1e-9;
    double width = ios_heatmap_min_width(run_time);
    comm->allreduce_f64(&width, 1, IOS_OP_MAX);
    struct ios_record_set *heatmaps = &c.sets[R_MODULES + IOS_M_HEATMAP];
    ios_heatmap_collect(heatmaps, width, ios_heatmap_nbins(run_time, width), shift);
    set_ranks(heatmaps, comm->rank);

    c.partial = (int64_t)ios_partial_flags();
    c.name_of = ios_record_name;
    c.names_region = ios_mmap_region(-1, &c.names_region_len);
    if (comm->rank == 0)
        fill_job(comm, &c, job_start, job_end);
    int failed = ios_write_content(comm, &c);
    if (comm->rank == 0 && failed)
        ios_warn_log_lost(c.path, c.why ? c.why : "out of memory");
    else if (comm->rank == 0)
        ios_log_finish(c.path, sizeof c.path, c.stem, (int)(ios_now() - write_start + 1));
    return failed;
}
