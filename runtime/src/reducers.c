/* The reduction rules of every module's shared records (opened by every rank: one rank -1
 * record, reference §7), as darshan-runtime 3.5.0 reduces them: the log writer's knowledge of
 * the modules, which the shutdown (shutdown.c) and the merge tool apply alike. */
#include "logwrite.h"

#include <string.h>

/* ---- common values -------------------------------------------------------------------- */
void ios_common_merge(int64_t *vals, int64_t *counts, const int64_t *in_vals,
                      const int64_t *in_counts, int n_in) {
    int64_t v[4 + IOS_CV_SLOTS], c[4 + IOS_CV_SLOTS];
    int n = 0;
    for (int i = 0; i < 4 + n_in; i++) {
        int64_t val = i < 4 ? vals[i] : in_vals[i - 4];
        int64_t cnt = i < 4 ? counts[i] : in_counts[i - 4];
        if (val == 0 || cnt <= 0)
            continue;
        int j = 0;
        while (j < n && v[j] != val)
            j++;
        if (j == n) {
            v[n] = val;
            c[n++] = 0;
        }
        c[j] += cnt;
    }
    for (int k = 0; k < 4; k++) {
        int best = -1;
        for (int j = 0; j < n; j++)
            if (c[j] > 0 && (best < 0 || c[j] > c[best] || (c[j] == c[best] && v[j] > v[best])))
                best = j;
        vals[k] = best < 0 ? 0 : v[best];
        counts[k] = best < 0 ? 0 : c[best];
        if (best >= 0)
            c[best] = 0;
    }
}

/* ---- POSIX --------------------------------------------------------------------------- */
static int64_t posix_bytes(const void *rec) {
    const struct ios_posix_record *r = rec;
    return r->counters[POSIX_BYTES_READ] + r->counters[POSIX_BYTES_WRITTEN];
}

static double posix_time(const void *rec) {
    const struct ios_posix_record *r = rec;
    return r->fcounters[POSIX_F_READ_TIME] + r->fcounters[POSIX_F_WRITE_TIME] +
           r->fcounters[POSIX_F_META_TIME];
}

static void posix_combine(const void *in_v, void *inout_v) {
    const struct ios_posix_record *in = in_v;
    struct ios_posix_record *io = inout_v;
    int64_t *c = io->counters;
    const int64_t *ic = in->counters;
    for (int j = POSIX_OPENS; j <= POSIX_RENAME_TARGETS; j++) {
        c[j] += ic[j];
        if (c[j] < 0) /* counters "not monitored" stay exactly -1 */
            c[j] = -1;
    }
    c[POSIX_RENAMED_FROM] = ic[POSIX_RENAMED_FROM] ? ic[POSIX_RENAMED_FROM] : c[POSIX_RENAMED_FROM];
    c[POSIX_MODE] = ic[POSIX_MODE] ? ic[POSIX_MODE] : c[POSIX_MODE];
    c[POSIX_BYTES_READ] += ic[POSIX_BYTES_READ];
    c[POSIX_BYTES_WRITTEN] += ic[POSIX_BYTES_WRITTEN];
    for (int j = POSIX_MAX_BYTE_READ; j <= POSIX_MAX_BYTE_WRITTEN; j++)
        c[j] = ic[j] > c[j] ? ic[j] : c[j];
    for (int j = POSIX_CONSEC_READS; j <= POSIX_MEM_NOT_ALIGNED; j++)
        c[j] += ic[j];
    c[POSIX_FILE_NOT_ALIGNED] += ic[POSIX_FILE_NOT_ALIGNED];
    for (int j = POSIX_SIZE_READ_0_100; j <= POSIX_SIZE_WRITE_1G_PLUS; j++)
        c[j] += ic[j];
    ios_common_merge(&c[POSIX_STRIDE1_STRIDE], &c[POSIX_STRIDE1_COUNT], &ic[POSIX_STRIDE1_STRIDE],
                     &ic[POSIX_STRIDE1_COUNT], 4);
    ios_common_merge(&c[POSIX_ACCESS1_ACCESS], &c[POSIX_ACCESS1_COUNT], &ic[POSIX_ACCESS1_ACCESS],
                     &ic[POSIX_ACCESS1_COUNT], 4);

    double *fc = io->fcounters;
    const double *ifc = in->fcounters;
    ios_reduce_starts(fc, ifc, POSIX_F_OPEN_START_TIMESTAMP, POSIX_F_CLOSE_START_TIMESTAMP);
    ios_reduce_ends(fc, ifc, POSIX_F_OPEN_END_TIMESTAMP, POSIX_F_CLOSE_END_TIMESTAMP);
    for (int j = POSIX_F_READ_TIME; j <= POSIX_F_META_TIME; j++)
        fc[j] += ifc[j];
    if (ifc[POSIX_F_MAX_READ_TIME] > fc[POSIX_F_MAX_READ_TIME]) {
        fc[POSIX_F_MAX_READ_TIME] = ifc[POSIX_F_MAX_READ_TIME];
        c[POSIX_MAX_READ_TIME_SIZE] = ic[POSIX_MAX_READ_TIME_SIZE];
    }
    if (ifc[POSIX_F_MAX_WRITE_TIME] > fc[POSIX_F_MAX_WRITE_TIME]) {
        fc[POSIX_F_MAX_WRITE_TIME] = ifc[POSIX_F_MAX_WRITE_TIME];
        c[POSIX_MAX_WRITE_TIME_SIZE] = ic[POSIX_MAX_WRITE_TIME_SIZE];
    }
    ios_combine_rank_extremes(&ios_posix_reducer, in, io);
}

const struct ios_reducer ios_posix_reducer =
    IOS_REDUCER(POSIX, struct ios_posix_record, POSIX_F_OPEN_START_TIMESTAMP,
                POSIX_F_CLOSE_END_TIMESTAMP, posix_bytes, posix_time, posix_combine);

/* ---- MPI-IO -------------------------------------------------------------------------- */
static int64_t mpiio_bytes(const void *rec) {
    const struct ios_mpiio_record *r = rec;
    return r->counters[MPIIO_BYTES_READ] + r->counters[MPIIO_BYTES_WRITTEN];
}

static double mpiio_time(const void *rec) {
    const struct ios_mpiio_record *r = rec;
    return r->fcounters[MPIIO_F_READ_TIME] + r->fcounters[MPIIO_F_WRITE_TIME] +
           r->fcounters[MPIIO_F_META_TIME];
}

static void mpiio_combine(const void *in_v, void *inout_v) {
    const struct ios_mpiio_record *in = in_v;
    struct ios_mpiio_record *io = inout_v;
    int64_t *c = io->counters;
    const int64_t *ic = in->counters;
    for (int j = MPIIO_INDEP_OPENS; j <= MPIIO_VIEWS; j++)
        c[j] += ic[j];
    c[MPIIO_MODE] = ic[MPIIO_MODE] ? ic[MPIIO_MODE] : c[MPIIO_MODE];
    for (int j = MPIIO_BYTES_READ; j <= MPIIO_RW_SWITCHES; j++)
        c[j] += ic[j];
    for (int j = MPIIO_SIZE_READ_AGG_0_100; j <= MPIIO_SIZE_WRITE_AGG_1G_PLUS; j++)
        c[j] += ic[j];
    ios_common_merge(&c[MPIIO_ACCESS1_ACCESS], &c[MPIIO_ACCESS1_COUNT], &ic[MPIIO_ACCESS1_ACCESS],
                     &ic[MPIIO_ACCESS1_COUNT], 4);

    double *fc = io->fcounters;
    const double *ifc = in->fcounters;
    ios_reduce_starts(fc, ifc, MPIIO_F_OPEN_START_TIMESTAMP, MPIIO_F_CLOSE_START_TIMESTAMP);
    ios_reduce_ends(fc, ifc, MPIIO_F_OPEN_END_TIMESTAMP, MPIIO_F_CLOSE_END_TIMESTAMP);
    for (int j = MPIIO_F_READ_TIME; j <= MPIIO_F_META_TIME; j++)
        fc[j] += ifc[j];
    if (ifc[MPIIO_F_MAX_READ_TIME] > fc[MPIIO_F_MAX_READ_TIME]) {
        fc[MPIIO_F_MAX_READ_TIME] = ifc[MPIIO_F_MAX_READ_TIME];
        c[MPIIO_MAX_READ_TIME_SIZE] = ic[MPIIO_MAX_READ_TIME_SIZE];
    }
    if (ifc[MPIIO_F_MAX_WRITE_TIME] > fc[MPIIO_F_MAX_WRITE_TIME]) {
        fc[MPIIO_F_MAX_WRITE_TIME] = ifc[MPIIO_F_MAX_WRITE_TIME];
        c[MPIIO_MAX_WRITE_TIME_SIZE] = ic[MPIIO_MAX_WRITE_TIME_SIZE];
    }
    ios_combine_rank_extremes(&ios_mpiio_reducer, in, io);
}

const struct ios_reducer ios_mpiio_reducer =
    IOS_REDUCER(MPIIO, struct ios_mpiio_record, MPIIO_F_OPEN_START_TIMESTAMP,
                MPIIO_F_CLOSE_END_TIMESTAMP, mpiio_bytes, mpiio_time, mpiio_combine);

/* ---- STDIO --------------------------------------------------------------------------- */
static int64_t stdio_bytes(const void *rec) {
    const struct ios_stdio_record *r = rec;
    return r->counters[STDIO_BYTES_READ] + r->counters[STDIO_BYTES_WRITTEN];
}

static double stdio_time(const void *rec) {
    const struct ios_stdio_record *r = rec;
    return r->fcounters[STDIO_F_READ_TIME] + r->fcounters[STDIO_F_WRITE_TIME] +
           r->fcounters[STDIO_F_META_TIME];
}

static void stdio_combine(const void *in_v, void *inout_v) {
    const struct ios_stdio_record *in = in_v;
    struct ios_stdio_record *io = inout_v;
    int64_t *c = io->counters;
    const int64_t *ic = in->counters;
    for (int j = STDIO_OPENS; j <= STDIO_BYTES_READ; j++)
        c[j] += ic[j];
    for (int j = STDIO_MAX_BYTE_READ; j <= STDIO_MAX_BYTE_WRITTEN; j++)
        c[j] = ic[j] > c[j] ? ic[j] : c[j];
    double *fc = io->fcounters;
    const double *ifc = in->fcounters;
    for (int j = STDIO_F_META_TIME; j <= STDIO_F_READ_TIME; j++)
        fc[j] += ifc[j];
    ios_reduce_starts(fc, ifc, STDIO_F_OPEN_START_TIMESTAMP, STDIO_F_READ_START_TIMESTAMP);
    ios_reduce_ends(fc, ifc, STDIO_F_OPEN_END_TIMESTAMP, STDIO_F_READ_END_TIMESTAMP);
    ios_combine_rank_extremes(&ios_stdio_reducer, in, io);
}

const struct ios_reducer ios_stdio_reducer =
    IOS_REDUCER(STDIO, struct ios_stdio_record, STDIO_F_OPEN_START_TIMESTAMP,
                STDIO_F_READ_END_TIMESTAMP, stdio_bytes, stdio_time, stdio_combine);

/* ---- H5F ----------------------------------------------------------------------------- */
static void h5f_combine(const void *in_v, void *inout_v) {
    const struct ios_h5f_record *in = in_v;
    struct ios_h5f_record *io = inout_v;
    io->counters[H5F_OPENS] += in->counters[H5F_OPENS];
    io->counters[H5F_FLUSHES] += in->counters[H5F_FLUSHES];
    io->counters[H5F_USE_MPIIO] |= in->counters[H5F_USE_MPIIO];
    ios_reduce_starts(io->fcounters, in->fcounters, H5F_F_OPEN_START_TIMESTAMP,
                      H5F_F_CLOSE_START_TIMESTAMP);
    ios_reduce_ends(io->fcounters, in->fcounters, H5F_F_OPEN_END_TIMESTAMP,
                    H5F_F_CLOSE_END_TIMESTAMP);
    io->fcounters[H5F_F_META_TIME] += in->fcounters[H5F_F_META_TIME];
}

const struct ios_reducer ios_h5f_reducer = IOS_REDUCER_PLAIN(
    struct ios_h5f_record, H5F_F_OPEN_START_TIMESTAMP, H5F_F_CLOSE_END_TIMESTAMP, h5f_combine);

/* ---- H5D ----------------------------------------------------------------------------- */
void ios_h5d_common_insert(int64_t *slots, int64_t *counts, const int64_t *access, int64_t n) {
    enum { W = IOS_H5D_ACCESS };
    int64_t s[4 * W] = {0}, c[4] = {0};
    int k = 0, i = 0;
    if (access[0] == 0)
        return;
    /* Darshan's order: count down, then the access size down; the newest first among equals. */
    for (; i < 4 && (counts[i] > n || (counts[i] == n && slots[i * W] > access[0])); i++, k++) {
        memcpy(&s[k * W], &slots[i * W], sizeof(int64_t) * W);
        c[k] = counts[i];
    }
    if (k == 4)
        return;
    memcpy(&s[k * W], access, sizeof(int64_t) * W);
    c[k++] = n;
    for (; k < 4 && i < 4; i++)
        if (memcmp(&slots[i * W], access, sizeof(int64_t) * W) != 0) {
            memcpy(&s[k * W], &slots[i * W], sizeof(int64_t) * W);
            c[k++] = counts[i];
        }
    memcpy(slots, s, sizeof s);
    memcpy(counts, c, sizeof c);
}

static int64_t h5d_bytes(const void *rec) {
    const struct ios_h5d_record *r = rec;
    return r->counters[H5D_BYTES_READ] + r->counters[H5D_BYTES_WRITTEN];
}

static double h5d_time(const void *rec) {
    const struct ios_h5d_record *r = rec;
    return r->fcounters[H5D_F_READ_TIME] + r->fcounters[H5D_F_WRITE_TIME] +
           r->fcounters[H5D_F_META_TIME];
}

/* The four most common accesses of both: an access both have takes both counts (in's slot),
 * then in's four and inout's four go in one by one, as Darshan merges them. */
static void h5d_merge_accesses(int64_t *c, const int64_t *ic) {
    enum { W = IOS_H5D_ACCESS };
    int64_t in[4 * W], in_n[4], out[4 * W], out_n[4];
    memcpy(in, &ic[H5D_ACCESS1_ACCESS], sizeof in);
    memcpy(in_n, &ic[H5D_ACCESS1_COUNT], sizeof in_n);
    memcpy(out, &c[H5D_ACCESS1_ACCESS], sizeof out);
    memcpy(out_n, &c[H5D_ACCESS1_COUNT], sizeof out_n);
    for (int j = 0; j < 4; j++)
        for (int k = 0; k < 4; k++)
            if (memcmp(&in[j * W], &out[k * W], sizeof(int64_t) * W) == 0) {
                memset(&out[k * W], 0, sizeof(int64_t) * W);
                in_n[j] += out_n[k];
                out_n[k] = 0;
            }
    memset(&c[H5D_ACCESS1_ACCESS], 0, sizeof in);
    memset(&c[H5D_ACCESS1_COUNT], 0, sizeof in_n);
    for (int j = 0; j < 4; j++)
        ios_h5d_common_insert(&c[H5D_ACCESS1_ACCESS], &c[H5D_ACCESS1_COUNT], &in[j * W], in_n[j]);
    for (int j = 0; j < 4; j++)
        ios_h5d_common_insert(&c[H5D_ACCESS1_ACCESS], &c[H5D_ACCESS1_COUNT], &out[j * W], out_n[j]);
}

static void h5d_combine(const void *in_v, void *inout_v) {
    const struct ios_h5d_record *in = in_v;
    struct ios_h5d_record *io = inout_v;
    int64_t *c = io->counters;
    const int64_t *ic = in->counters;
    io->file_rec_id = in->file_rec_id;
    for (int j = H5D_OPENS; j <= H5D_POINT_SELECTS; j++)
        c[j] += ic[j];
    for (int j = H5D_SIZE_READ_AGG_0_100; j <= H5D_SIZE_WRITE_AGG_1G_PLUS; j++)
        c[j] += ic[j];
    h5d_merge_accesses(c, ic);
    for (int j = H5D_DATASPACE_NDIMS; j <= H5D_CHUNK_SIZE_D5; j++) /* the shape: in's */
        c[j] = ic[j];
    c[H5D_USE_MPIIO_COLLECTIVE] =
        c[H5D_USE_MPIIO_COLLECTIVE] == 1 || ic[H5D_USE_MPIIO_COLLECTIVE] == 1;
    c[H5D_USE_DEPRECATED] = c[H5D_USE_DEPRECATED] == 1 || ic[H5D_USE_DEPRECATED] == 1;
    double *fc = io->fcounters;
    const double *ifc = in->fcounters;
    ios_reduce_starts(fc, ifc, H5D_F_OPEN_START_TIMESTAMP, H5D_F_CLOSE_START_TIMESTAMP);
    ios_reduce_ends(fc, ifc, H5D_F_OPEN_END_TIMESTAMP, H5D_F_CLOSE_END_TIMESTAMP);
    for (int j = H5D_F_READ_TIME; j <= H5D_F_META_TIME; j++)
        fc[j] += ifc[j];
    if (ifc[H5D_F_MAX_READ_TIME] > fc[H5D_F_MAX_READ_TIME]) {
        fc[H5D_F_MAX_READ_TIME] = ifc[H5D_F_MAX_READ_TIME];
        c[H5D_MAX_READ_TIME_SIZE] = ic[H5D_MAX_READ_TIME_SIZE];
    }
    if (ifc[H5D_F_MAX_WRITE_TIME] > fc[H5D_F_MAX_WRITE_TIME]) {
        fc[H5D_F_MAX_WRITE_TIME] = ifc[H5D_F_MAX_WRITE_TIME];
        c[H5D_MAX_WRITE_TIME_SIZE] = ic[H5D_MAX_WRITE_TIME_SIZE];
    }
    ios_combine_rank_extremes(&ios_h5d_reducer, in, io);
}

const struct ios_reducer ios_h5d_reducer =
    IOS_REDUCER(H5D, struct ios_h5d_record, H5D_F_OPEN_START_TIMESTAMP, H5D_F_CLOSE_END_TIMESTAMP,
                h5d_bytes, h5d_time, h5d_combine);

/* ---- PNETCDF_FILE -------------------------------------------------------------------- */
static void pnetcdf_file_combine(const void *in_v, void *inout_v) {
    const struct ios_pnetcdf_file_record *in = in_v;
    struct ios_pnetcdf_file_record *io = inout_v;
    for (int j = 0; j < PNETCDF_FILE_NUM_INDICES; j++)
        io->counters[j] += in->counters[j];
    ios_reduce_starts(io->fcounters, in->fcounters, PNETCDF_FILE_F_OPEN_START_TIMESTAMP,
                      PNETCDF_FILE_F_WAIT_START_TIMESTAMP);
    ios_reduce_ends(io->fcounters, in->fcounters, PNETCDF_FILE_F_OPEN_END_TIMESTAMP,
                    PNETCDF_FILE_F_WAIT_END_TIMESTAMP);
    io->fcounters[PNETCDF_FILE_F_META_TIME] += in->fcounters[PNETCDF_FILE_F_META_TIME];
    io->fcounters[PNETCDF_FILE_F_WAIT_TIME] += in->fcounters[PNETCDF_FILE_F_WAIT_TIME];
}

const struct ios_reducer ios_pnetcdf_file_reducer =
    IOS_REDUCER_PLAIN(struct ios_pnetcdf_file_record, PNETCDF_FILE_F_OPEN_START_TIMESTAMP,
                      PNETCDF_FILE_F_WAIT_END_TIMESTAMP, pnetcdf_file_combine);
