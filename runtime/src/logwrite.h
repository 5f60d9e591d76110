/* What the log writer (logwrite.c) shares with the merge tool (tools/iostudy_merge.c), which
 * assembles a log from the memory-mapped logs of a killed job's processes as the shutdown
 * assembles it from their records. */
#ifndef IOS_LOGWRITE_H
#define IOS_LOGWRITE_H

#include "iostudy.h"

#include <limits.h>

/* Regions after the job region, in file order: names, then the modules (ios_modules). */
enum { R_NAMES, R_MODULES, N_REGIONS = R_MODULES + IOS_NMODULES };
static inline const struct ios_module *module_of(int r) { return &ios_modules[r - R_MODULES]; }

/* What a log file is made of, whoever assembled it (a job's shutdown, `iostudy logs merge`):
 * every rank's records, and on rank 0 the job record and where the file goes. */
struct log_content {
    struct ios_record_set sets[N_REGIONS]; /* sets[R_NAMES] unused */
    int64_t partial;                       /* this rank's partial flags */
    struct {                               /* rank 0 */
        struct ios_log_job job;
        char exe[IOS_EXE_LEN]; /* command line and mount table */
    } jr;
    char path[PATH_MAX], stem[PATH_MAX]; /* rank 0; stem: renamed to <stem>_<secs>.darshan */
    const char *why;                     /* rank 0: why path is unusable (NULL: fine) */
};

/* Compresses every rank's part of each region and writes them, collectively, into one new file;
 * returns non-zero when this rank's part could not be written (rank 0 warns). */
int ios_write_content(const struct ios_comm *comm, struct log_content *c,
                      double write_start) IOS_HIDDEN;

/* The size of one record of set: fixed, or given by the record for the variable ones. */
size_t ios_record_size(const struct ios_record_set *set, const void *rec) IOS_HIDDEN;
/* Timestamps count from a process's start; the log counts them from the job's. */
void ios_shift_timestamps(struct ios_record_set *set, const struct ios_reducer *r,
                          double by) IOS_HIDDEN;
void ios_set_job_span(struct ios_log_job *job, int64_t start_ns, int64_t end_ns) IOS_HIDDEN;

/* Per-rank time or bytes, for the variance of a shared record (count, sum, sum of squared
 * deviations from the mean); ios_variance_combine adds in to inout. */
struct variance {
    double n, sum, m2;
};
void ios_variance_combine(const void *in, void *inout) IOS_HIDDEN;
/* Whether a module's records carry the fastest/slowest rank and the variances (not H5F's and
 * PNETCDF_FILE's). */
static inline int ios_ranked(const struct ios_reducer *r) { return r->fastest_rank >= 0; }
/* A record's fastest and slowest rank are its own rank, with its bytes and time. */
void ios_seed_extremes(const struct ios_reducer *r, void *rec, int rank) IOS_HIDDEN;

/* A region of records of record_size bytes (at most IOS_DEFLATE_RECORD_MAX: two records back
 * must lie within deflate's 32 KiB window) as a raw deflate stream (recdeflate.c) into out,
 * which holds cap >= ios_deflate_records_bound(len) bytes; its length, or 0 without memory. */
#define IOS_DEFLATE_RECORD_MAX 16384
size_t ios_deflate_records(const unsigned char *in, size_t len, size_t record_size,
                           unsigned char *out, size_t cap) IOS_HIDDEN;
/* At most 9 bits a byte with the fixed codes (a block never takes more than with them), and
 * each block's 10 bits of header and end. */
static inline size_t ios_deflate_records_bound(size_t len) {
    return len + len / 8 + len / 1024 + 16;
}

#endif
