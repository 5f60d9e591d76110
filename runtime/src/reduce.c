/* Shared-record reduction (reference §7): files every rank recorded become one rank -1 record,
 * with the fastest and slowest rank and the variances of time and bytes; and the other changes
 * a record takes on its way into the job's log (timestamps from the job's start). */
#include "logwrite.h"

#include <stdlib.h>
#include <string.h>

/* Chan et al.'s pairwise update: exact for any split of the ranks. */
void ios_variance_combine(const void *in_v, void *inout_v) {
    const struct variance *x = in_v;
    struct variance *y = inout_v;
    if (x->n == 0)
        return;
    if (y->n == 0) {
        *y = *x;
        return;
    }
    double n = x->n + y->n;
    double delta = y->sum / y->n - x->sum / x->n;
    y->m2 += x->m2 + delta * delta * x->n * y->n / n;
    y->sum += x->sum;
    y->n = n;
}

void ios_seed_extremes(const struct ios_reducer *r, void *rec, int rank) {
    if (!ios_ranked(r))
        return;
    int64_t *c = (int64_t *)((char *)rec + r->counters_off);
    double *fc = (double *)((char *)rec + r->fcounters_off);
    c[r->fastest_rank] = c[r->slowest_rank] = rank;
    c[r->fastest_bytes] = c[r->slowest_bytes] = r->bytes(rec);
    fc[r->fastest_time] = fc[r->slowest_time] = r->time(rec);
}

/* Which of rank 0's records every rank has: rank 0's ids (*ids, *n) and a flag per id; local
 * maps this rank's record ids to its records. NULL when nothing is shared or memory ran out
 * (the records then stay per rank). */
static int64_t *shared_flags(const struct ios_comm *comm, const struct ios_record_set *set,
                             struct ios_map *local, uint64_t **ids, int64_t *n) {
    *n = comm->rank == 0 ? (int64_t)set->count : 0;
    comm->bcast(n, sizeof *n);
    *ids = NULL;
    if (*n == 0)
        return NULL;
    *ids = calloc((size_t)*n, sizeof **ids);
    int64_t *shared = calloc((size_t)*n, sizeof *shared);
    for (size_t off = 0, i = 0; i < set->count; i++) {
        const struct ios_base_record *base = (const void *)(set->buf + off);
        if (comm->rank == 0 && *ids)
            (*ids)[i] = base->id;
        ios_map_put(local, base->id, set->buf + off);
        off += ios_record_size(set, base);
    }
    /* Every rank takes part in both collectives, whatever its allocations did. */
    int64_t failed = !*ids || !shared;
    comm->allreduce_i64(&failed, 1, IOS_OP_MAX);
    if (failed) {
        free(shared);
        free(*ids);
        *ids = NULL;
        return NULL;
    }
    comm->bcast(*ids, (size_t)*n * sizeof **ids);
    for (int64_t i = 0; i < *n; i++)
        shared[i] = ios_map_get(local, (*ids)[i]) != NULL;
    comm->allreduce_i64(shared, (int)*n, IOS_OP_MIN);
    return shared;
}

void ios_combine_rank_extremes(const struct ios_reducer *r, const void *in, void *inout) {
    const int64_t *ic = (const int64_t *)((const char *)in + r->counters_off);
    const double *ifc = (const double *)((const char *)in + r->fcounters_off);
    int64_t *c = (int64_t *)((char *)inout + r->counters_off);
    double *fc = (double *)((char *)inout + r->fcounters_off);
    if (ifc[r->fastest_time] < fc[r->fastest_time]) {
        fc[r->fastest_time] = ifc[r->fastest_time];
        c[r->fastest_rank] = ic[r->fastest_rank];
        c[r->fastest_bytes] = ic[r->fastest_bytes];
    }
    if (ifc[r->slowest_time] > fc[r->slowest_time]) {
        fc[r->slowest_time] = ifc[r->slowest_time];
        c[r->slowest_rank] = ic[r->slowest_rank];
        c[r->slowest_bytes] = ic[r->slowest_bytes];
    }
}

/* Files every rank recorded become one rank -1 record on rank 0; other ranks drop theirs. */
void ios_reduce_shared(const struct ios_comm *comm, struct ios_record_set *set,
                       const struct ios_reducer *r) {
    struct ios_map local = {0};
    uint64_t *ids;
    int64_t n;
    int64_t *shared = shared_flags(comm, set, &local, &ids, &n);
    unsigned char *reduced = shared ? calloc((size_t)n, r->rec_size) : NULL;
    struct variance *var = shared ? calloc(2 * (size_t)n, sizeof *var) : NULL;
    unsigned char *kept = malloc(set->len + 1);
    if (!shared || !reduced || !var || !kept)
        goto out; /* cannot fail in practice; the records stay per rank */

    size_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!shared[i])
            continue;
        void *rec = reduced + k * r->rec_size;
        memcpy(rec, ios_map_get(&local, ids[i]), r->rec_size);
        ios_seed_extremes(r, rec, comm->rank);
        if (ios_ranked(r)) {
            var[2 * k] = (struct variance){1, r->time(rec), 0};
            var[2 * k + 1] = (struct variance){1, (double)r->bytes(rec), 0};
        }
        ios_map_del(&local, ids[i]); /* what stays in local is this rank's own files */
        k++;
    }
    if (k == 0)
        goto out;
    comm->reduce_elems(reduced, k, r->rec_size, r->combine);
    if (ios_ranked(r))
        comm->reduce_elems(var, 2 * k, sizeof *var, ios_variance_combine);

    size_t len = 0;
    for (size_t i = 0; i < set->count; i++) {
        unsigned char *rec = set->buf + i * r->rec_size;
        if (ios_map_get(&local, ((struct ios_base_record *)rec)->id)) {
            memmove(kept + len, rec, r->rec_size);
            len += r->rec_size;
        }
    }
    size_t count = len / r->rec_size;
    if (comm->rank == 0) {
        unsigned char *grown = realloc(kept, len + k * r->rec_size + 1);
        if (!grown)
            goto out;
        kept = grown;
        for (size_t i = 0; i < k; i++) {
            unsigned char *rec = reduced + i * r->rec_size;
            double *fc = (double *)(rec + r->fcounters_off);
            ((struct ios_base_record *)rec)->rank = -1;
            if (ios_ranked(r)) {
                fc[r->variance_time] = var[2 * i].m2 / var[2 * i].n;
                fc[r->variance_bytes] = var[2 * i + 1].m2 / var[2 * i + 1].n;
            }
            memcpy(kept + len, rec, r->rec_size);
            len += r->rec_size;
            count++;
        }
    }
    free(set->buf);
    set->buf = kept;
    set->len = len;
    set->count = count;
    kept = NULL;
out:
    ios_map_free(&local);
    free(ids);
    free(shared);
    free(reduced);
    free(var);
    free(kept);
}

/* Records with nothing to add up (Lustre layouts): rank 0 keeps a shared one as rank -1, the
 * other ranks drop theirs. */
void ios_mark_shared(const struct ios_comm *comm, struct ios_record_set *set) {
    struct ios_map local = {0};
    uint64_t *ids;
    int64_t n;
    int64_t *shared = shared_flags(comm, set, &local, &ids, &n);
    struct ios_map is_shared = {0};
    for (int64_t i = 0; shared && i < n; i++)
        if (shared[i])
            ios_map_put(&is_shared, ids[i], set->buf);
    size_t len = 0, count = 0;
    for (size_t off = 0, i = 0; shared && i < set->count; i++) {
        struct ios_base_record *base = (void *)(set->buf + off);
        size_t size = ios_record_size(set, base);
        int dup = ios_map_get(&is_shared, base->id) != NULL;
        if (dup && comm->rank == 0)
            base->rank = -1;
        if (!dup || comm->rank == 0) {
            memmove(set->buf + len, base, size);
            len += size;
            count++;
        }
        off += size;
    }
    if (shared) {
        set->len = len;
        set->count = count;
    }
    ios_map_free(&is_shared);
    ios_map_free(&local);
    free(ids);
    free(shared);
}

/* Timestamps count from this process's start; the log counts them from the job's. */
void ios_shift_timestamps(struct ios_record_set *set, const struct ios_reducer *r, double by) {
    for (size_t i = 0; by != 0 && i < set->count; i++) {
        double *fc = (double *)(set->buf + i * set->rec_size + r->fcounters_off);
        for (int j = r->ts_first; j <= r->ts_last; j++)
            if (fc[j] != 0)
                fc[j] += by;
    }
}

void ios_set_job_span(struct ios_log_job *job, int64_t start_ns, int64_t end_ns) {
    job->start_time_sec = start_ns / 1000000000;
    job->start_time_nsec = start_ns % 1000000000;
    job->end_time_sec = end_ns / 1000000000;
    job->end_time_nsec = end_ns % 1000000000;
}
