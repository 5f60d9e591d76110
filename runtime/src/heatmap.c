/* HEATMAP module: bytes read and written per time slice, one record per API and process
 * (reference §6.5). Bins start 0.1 s wide; when time runs past the last of the 200 bins,
 * adjacent bins merge pairwise and the width doubles, so memory stays fixed. */
#include "iostudy.h"

#include <stdlib.h>
#include <string.h>

#define BINS IOS_HEATMAP_BINS
#define FIRST_WIDTH 0.1

struct ios_heatmap ios_heatmaps[IOS_HEATMAP_NAPIS];
#define maps ios_heatmaps
static const char *const names[IOS_HEATMAP_NAPIS] = {"heatmap:POSIX", "heatmap:MPIIO",
                                                     "heatmap:STDIO"};

/* The smallest whole number >= x (|x| < 2^63): ceil without libm, which the runtime would
 * otherwise load into every process for this alone. */
static int64_t round_up(double x) {
    int64_t i = (int64_t)x; /* toward zero */
    return i + (x > (double)i);
}

static double smaller(double a, double b) { return a < b ? a : b; }
static double larger(double a, double b) { return a > b ? a : b; }

static void collapse(struct ios_heatmap *h) {
    for (int dir = 0; dir < 2; dir++) {
        int64_t *b = h->bins[dir];
        for (int i = 0; i < BINS / 2; i++)
            b[i] = b[2 * i] + b[2 * i + 1];
        memset(b + BINS / 2, 0, sizeof(int64_t) * (BINS / 2));
    }
    h->width *= 2;
    h->end = h->width * BINS;
    h->from = h->to = 0; /* the remembered bin is gone */
    h->from_ns = h->to_ns = 0;
}

/* Spreads bytes over the bins [t1, t2] overlaps, in proportion to the overlap; the last bin
 * takes the rounding remainder so that the bins always sum to the bytes moved. */
static void spread(int64_t *bins, int nbins, double width, int64_t bytes, double t1, double t2) {
    /* [t1, t2) is half open: an interval ending exactly on a bin edge does not touch the next. */
    int b1 = (int)(t1 / width), b2 = (int)round_up(t2 / width) - 1;
    if (b2 < b1)
        b2 = b1;
    if (b1 >= nbins)
        b1 = nbins - 1;
    if (b2 >= nbins)
        b2 = nbins - 1;
    if (b1 == b2 || t2 <= t1) {
        bins[b1] += bytes;
        return;
    }
    int64_t left = bytes;
    for (int b = b1; b < b2; b++) {
        double overlap = smaller(t2, (b + 1) * width) - larger(t1, b * width);
        int64_t part = (int64_t)((double)bytes * overlap / (t2 - t1));
        if (part > left)
            part = left;
        bins[b] += part;
        left -= part;
    }
    bins[b2] += left;
}

/* The record's name and memory are claimed on first use, as modules claim theirs. */
static int claim(int api) {
    struct ios_heatmap *h = &maps[api];
    if (h->state < 0)
        return -1;
    if (ios_reserve_record(IOS_MOD_HEATMAP, ios_record_id(names[api]), names[api],
                           sizeof(struct ios_heatmap_record_head) + 2 * BINS * sizeof(int64_t)) !=
        0) {
        h->state = -1;
        return -1;
    }
    h->state = 1;
    h->width = FIRST_WIDTH;
    h->end = FIRST_WIDTH * BINS;
    return 0;
}

/* ios_heatmap_add's other cases: first use, a new time range, an operation across bins. */
void ios_heatmap_add_slow(int api, int is_write, int64_t bytes, double t1, double t2) {
    struct ios_heatmap *h = &maps[api];
    if (h->state <= 0 && claim(api) != 0)
        return;
    if (bytes <= 0)
        return;
    while (t2 >= h->end)
        collapse(h);
    if (t1 < 0)
        t1 = 0;
    int bin = (int)(t1 / h->width);                /* as spread() bins it */
    if (bin < BINS && t2 < (bin + 1) * h->width) { /* in one bin: the next will likely be too */
        h->bin = &h->bins[0][bin];
        h->from = bin * h->width;
        h->to = (bin + 1) * h->width;
        /* A margin above the rounding of ios_seconds (a few nanoseconds in a year) and of these
         * products: a time within it is left to this function, which compares seconds. */
        int64_t margin = 2 + (int64_t)(h->to * 1e9) / (INT64_C(1) << 40);
        h->from_ns = ios_origin_ns + (int64_t)(h->from * 1e9) + margin;
        h->to_ns = ios_origin_ns + (int64_t)(h->to * 1e9) - margin;
    }
    spread(h->bins[is_write], BINS, h->width, bytes, t1, t2);
}

double ios_heatmap_min_width(double end_time) {
    double width = FIRST_WIDTH;
    for (int api = 0; api < IOS_HEATMAP_NAPIS; api++)
        if (maps[api].state > 0 && maps[api].width > width)
            width = maps[api].width;
    while (end_time > width * BINS)
        width *= 2;
    return width;
}

int64_t ios_heatmap_nbins(double run_time, double width) {
    int64_t nbins = round_up(run_time / width);
    return nbins > 0 ? nbins : 1;
}

size_t ios_heatmap_record(int api, double width, int64_t nbins, double shift, void *out) {
    const struct ios_heatmap *h = &maps[api];
    int64_t total = 0;
    for (int i = 0; h->state > 0 && i < BINS; i++)
        total += h->bins[0][i] + h->bins[1][i];
    if (total == 0)
        return 0; /* all-zero heatmaps are not written */
    size_t size = ios_heatmap_record_size(nbins);
    memset(out, 0, size);
    struct ios_heatmap_record_head *head = out;
    head->base.id = ios_record_id(names[api]);
    head->bin_width_seconds = width;
    head->nbins = nbins;
    int64_t *bins = (int64_t *)(head + 1);
    /* On disk: write bins, then read bins; each source bin is spread over the record's bins. */
    for (int dir = 1; dir >= 0; dir--, bins += nbins)
        for (int i = 0; i < BINS; i++)
            if (h->bins[dir][i])
                spread(bins, (int)nbins, width, h->bins[dir][i], i * h->width + shift,
                       (i + 1) * h->width + shift);
    return size;
}

void ios_heatmap_collect(struct ios_record_set *set, double width, int64_t nbins, double shift) {
    size_t rec_size = ios_heatmap_record_size(nbins);
    set->mod = IOS_MOD_HEATMAP;
    set->rec_size = 0;
    set->count = set->len = 0;
    set->buf = calloc(IOS_HEATMAP_NAPIS, rec_size);
    if (!set->buf)
        return;
    for (int api = 0; api < IOS_HEATMAP_NAPIS; api++) {
        size_t n = ios_heatmap_record(api, width, nbins, shift, set->buf + set->len);
        set->len += n;
        set->count += n > 0;
    }
}

void ios_heatmap_reset(void) { memset(maps, 0, sizeof maps); }
