/* The reduction of PNETCDF_VAR's shared records (a variable every rank defined or inquired: one
 * rank -1 record), as darshan-runtime 3.5.0 reduces them, and Darshan's update of the four most
 * common accesses, which are tuples (size, five lengths, five strides) in this module. */
#include "logwrite.h"

#define TUPLE (1 + 2 * IOS_PNETCDF_VAR_MAX_NDIMS)

/* Slots ranked above v stay, v comes next, the others follow without v's old slot. */
void ios_common_tuple_insert(int64_t *vals, int64_t *counts, const int64_t *v, int n,
                             int64_t total) {
    if (v[0] == 0 || n > TUPLE)
        return;
    int64_t tv[4 * TUPLE] = {0}, tc[4] = {0};
    int k = 0, i = 0;
    for (; i < 4; i++, k++) {
        if (!(counts[i] > total || (counts[i] == total && vals[i * n] > v[0])))
            break;
        memcpy(&tv[k * n], &vals[i * n], sizeof *v * (size_t)n);
        tc[k] = counts[i];
    }
    if (k == 4)
        return;
    memcpy(&tv[k * n], v, sizeof *v * (size_t)n);
    tc[k++] = total;
    for (; k < 4 && i < 4; i++) {
        if (memcmp(&vals[i * n], v, sizeof *v * (size_t)n) == 0)
            continue;
        memcpy(&tv[k * n], &vals[i * n], sizeof *v * (size_t)n);
        tc[k++] = counts[i];
    }
    memcpy(vals, tv, sizeof *v * (size_t)(4 * n));
    memcpy(counts, tc, sizeof tc);
}

static int64_t var_bytes(const void *rec) {
    const struct ios_pnetcdf_var_record *r = rec;
    return r->counters[PNETCDF_VAR_BYTES_READ] + r->counters[PNETCDF_VAR_BYTES_WRITTEN];
}

static double var_time(const void *rec) {
    const struct ios_pnetcdf_var_record *r = rec;
    return r->fcounters[PNETCDF_VAR_F_READ_TIME] + r->fcounters[PNETCDF_VAR_F_WRITE_TIME] +
           r->fcounters[PNETCDF_VAR_F_META_TIME];
}

/* The two records' common accesses: a tuple both have is counted once, with both counts; then
 * in's four and inout's four are ranked afresh. */
static void combine_accesses(int64_t *c, const int64_t *ic) {
    int64_t in_vals[4 * TUPLE], in_counts[4];
    memcpy(in_vals, &ic[PNETCDF_VAR_ACCESS1_ACCESS], sizeof in_vals);
    memcpy(in_counts, &ic[PNETCDF_VAR_ACCESS1_COUNT], sizeof in_counts);
    int64_t *vals = &c[PNETCDF_VAR_ACCESS1_ACCESS], *counts = &c[PNETCDF_VAR_ACCESS1_COUNT];
    for (int j = 0; j < 4; j++)
        for (int k = 0; k < 4; k++)
            if (memcmp(&in_vals[j * TUPLE], &vals[k * TUPLE], sizeof *vals * TUPLE) == 0) {
                memset(&vals[k * TUPLE], 0, sizeof *vals * TUPLE);
                in_counts[j] += counts[k];
                counts[k] = 0;
            }
    int64_t out_vals[4 * TUPLE] = {0}, out_counts[4] = {0};
    for (int j = 0; j < 4; j++)
        ios_common_tuple_insert(out_vals, out_counts, &in_vals[j * TUPLE], TUPLE, in_counts[j]);
    for (int j = 0; j < 4; j++)
        ios_common_tuple_insert(out_vals, out_counts, &vals[j * TUPLE], TUPLE, counts[j]);
    memcpy(vals, out_vals, sizeof out_vals);
    memcpy(counts, out_counts, sizeof out_counts);
}

static void max_time(int64_t *c, double *fc, const int64_t *ic, const double *ifc, int t, int s) {
    if (ifc[t] > fc[t]) {
        fc[t] = ifc[t];
        c[s] = ic[s];
    }
}

static void var_combine(const void *in_v, void *inout_v) {
    const struct ios_pnetcdf_var_record *in = in_v;
    struct ios_pnetcdf_var_record *io = inout_v;
    int64_t *c = io->counters;
    const int64_t *ic = in->counters;
    io->file_rec_id = in->file_rec_id;
    for (int j = PNETCDF_VAR_OPENS; j <= PNETCDF_VAR_BPUT_VARN; j++)
        c[j] += ic[j];
    for (int j = PNETCDF_VAR_SIZE_READ_AGG_0_100; j <= PNETCDF_VAR_SIZE_WRITE_AGG_1G_PLUS; j++)
        c[j] += ic[j];
    combine_accesses(c, ic);
    for (int j = PNETCDF_VAR_NDIMS; j <= PNETCDF_VAR_DATATYPE_SIZE; j++)
        c[j] = ic[j];
    c[PNETCDF_VAR_IS_RECORD_VAR] =
        c[PNETCDF_VAR_IS_RECORD_VAR] == 1 || ic[PNETCDF_VAR_IS_RECORD_VAR] == 1;

    double *fc = io->fcounters;
    const double *ifc = in->fcounters;
    ios_reduce_starts(fc, ifc, PNETCDF_VAR_F_OPEN_START_TIMESTAMP,
                      PNETCDF_VAR_F_CLOSE_START_TIMESTAMP);
    ios_reduce_ends(fc, ifc, PNETCDF_VAR_F_OPEN_END_TIMESTAMP, PNETCDF_VAR_F_CLOSE_END_TIMESTAMP);
    for (int j = PNETCDF_VAR_F_READ_TIME; j <= PNETCDF_VAR_F_META_TIME; j++)
        fc[j] += ifc[j];
    max_time(c, fc, ic, ifc, PNETCDF_VAR_F_MAX_READ_TIME, PNETCDF_VAR_MAX_READ_TIME_SIZE);
    max_time(c, fc, ic, ifc, PNETCDF_VAR_F_MAX_WRITE_TIME, PNETCDF_VAR_MAX_WRITE_TIME_SIZE);
    ios_combine_rank_extremes(&ios_pnetcdf_var_reducer, in, io);
}

const struct ios_reducer ios_pnetcdf_var_reducer =
    IOS_REDUCER(PNETCDF_VAR, struct ios_pnetcdf_var_record, PNETCDF_VAR_F_OPEN_START_TIMESTAMP,
                PNETCDF_VAR_F_CLOSE_END_TIMESTAMP, var_bytes, var_time, var_combine);
