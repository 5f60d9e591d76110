/* netbw: the network component of seed 001's component analysis (section 4.2, Fig. 2b, which used
 * NetPIPE): ping-pong bandwidth between pairs of MPI ranks across message sizes, including
 * unaligned ones, one pair alone and every pair at once.
 *
 * The ranks form pairs: rank r of the first half with rank r + N/2 (placed a node's ranks after
 * another's, the pairs cross nodes). For each size (powers of two from --min to --max, each also
 * with --perturb bytes more and less, as NetPIPE's perturbations), after a barrier, every pair
 * exchanges messages back and forth for at least --seconds (the repetitions are agreed on by all
 * ranks from a first timed exchange), first pair 0 alone (point to point), then all pairs at once
 * (aggregate). A pair's bandwidth is the bytes of one message over half a round trip. Rank 0
 * prints one JSON line: every size with the pair's MiB/s and the sum over pairs, and the peaks.
 * The CLI and the output are documented in reframe-checks/README.md.
 *
 * Exit status: 0 success, 2 bad parameters (an odd number of ranks among them).
 */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "bench_mpi.h"

enum { EXIT_USAGE = 2 };
#define MIB 1048576.0
#define MAX_PERTURB 4096L
#define MAX_POINTS 256

typedef struct {
    uint64_t min, max;
    long perturb;
    double seconds;
    bool help;
} options_t;

typedef struct {
    uint64_t bytes;
    double pair_mib_s, aggregate_mib_s;
} point_t;

#define USAGE_TEXT "usage: netbw [--min SIZE] [--max SIZE] [--perturb P] [--seconds S] [--help]\n"
static const char USAGE_LINE[] = USAGE_TEXT;

static const char USAGE[] = USAGE_TEXT
    "Network bandwidth (seed 001, Fig. 2b): ping-pong between rank r and rank r + N/2, one pair\n"
    "alone and all pairs at once, for every power of two from --min to --max and P bytes more\n"
    "and less. N must be even.\n"
    "\n"
    "  -m, --min SIZE      smallest message (default 1K); suffix K, M or G: KiB, MiB, GiB\n"
    "  -M, --max SIZE      largest message (default 4M), at least --min\n"
    "  -p, --perturb P     bytes added to and taken from each size, 0 to 4096 (default 3)\n"
    "  -s, --seconds S     time per size and mode, 0.001 to 60 (default 0.05)\n"
    "  -h, --help          this text\n";

static const struct option LONG_OPTIONS[] = {
    {"min", required_argument, NULL, 'm'},     {"max", required_argument, NULL, 'M'},
    {"perturb", required_argument, NULL, 'p'}, {"seconds", required_argument, NULL, 's'},
    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
};

static int parse_seconds(const char *s, double *out, char *err) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 0.001 && v <= 60))
        return fail(err, "--seconds '%s' is not a number from 0.001 to 60", s);
    *out = v;
    return 0;
}

static int apply_option(void *opts, int c, const char *arg, char *err) {
    options_t *o = opts;
    switch (c) {
    case 'm':
        return parse_size("--min", arg, &o->min, err);
    case 'M':
        return parse_size("--max", arg, &o->max, err);
    case 'p':
        if (strcmp(arg, "0") == 0) {
            o->perturb = 0;
            return 0;
        }
        return parse_count("--perturb", arg, MAX_PERTURB, &o->perturb, err);
    case 's':
        return parse_seconds(arg, &o->seconds, err);
    case 'h':
        o->help = true;
        return 0;
    default:
        return fail(err, "unknown option (see --help)");
    }
}

static int setup(options_t *o, int argc, char **argv, int nranks, char *err) {
    *o = (options_t){.min = 1024, .max = 4 << 20, .perturb = 3, .seconds = 0.05};
    if (parse_args(argc, argv, ":m:M:p:s:h", LONG_OPTIONS, apply_option, o, err) != 0)
        return -1;
    if (o->help)
        return 0;
    if (o->max < o->min)
        return fail(err, "--max %" PRIu64 " is smaller than --min %" PRIu64, o->max, o->min);
    if (o->max > ((uint64_t)1 << 30))
        return fail(err, "--max %" PRIu64 " is larger than 1 GiB", o->max);
    if ((uint64_t)o->perturb >= o->min)
        return fail(err, "--perturb %ld is not smaller than --min", o->perturb);
    if (nranks < 2 || nranks % 2 != 0)
        return fail(err, "%d ranks: netbw needs an even number of ranks, 2 or more", nranks);
    return 0;
}

/* reps round trips of bytes between this rank and its partner; the seconds they took (0 for a
 * rank that sits out). */
static double exchange(char *buf, uint64_t bytes, long reps, int partner, bool first, bool on) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (!on)
        return 0;
    double t0 = MPI_Wtime();
    for (long k = 0; k < reps; k++) {
        if (first) {
            MPI_Send(buf, (int)bytes, MPI_BYTE, partner, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)bytes, MPI_BYTE, partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_BYTE, partner, 0, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

/* One size in one mode (pair 0 alone, or all pairs): the repetitions for opt.seconds, from a
 * timed first exchange agreed on by every rank; returns this rank's MiB/s (0 when it sat out). */
static double measure(char *buf, uint64_t bytes, const options_t *o, int rank, int nranks,
                      bool all_pairs) {
    int half = nranks / 2;
    bool first = rank < half;
    int partner = first ? rank + half : rank - half;
    bool on = all_pairs || rank == 0 || rank == half;
    double once = exchange(buf, bytes, 1, partner, first, on), slowest = 0;
    MPI_Allreduce(&once, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long reps = slowest > 0 ? (long)(o->seconds / slowest) + 1 : 1;
    double t = exchange(buf, bytes, reps, partner, first, on);
    return on && first && t > 0 ? (double)bytes * reps / (t / 2) / MIB : 0;
}

/* The sizes: powers of two from min to max, each with perturb bytes less and more. */
static int sizes(const options_t *o, uint64_t *out) {
    int n = 0;
    for (uint64_t s = o->min; s <= o->max && n + 3 <= MAX_POINTS; s *= 2) {
        if (o->perturb > 0)
            out[n++] = s - (uint64_t)o->perturb;
        out[n++] = s;
        if (o->perturb > 0)
            out[n++] = s + (uint64_t)o->perturb;
    }
    return n;
}

static void print_json(const point_t *p, int n, int pairs, const options_t *o) {
    double peak = 0, peak_all = 0, peak_unaligned = 0;
    printf("{\"benchmark\": \"netbw\", \"pairs\": %d, \"perturb\": %ld, \"points\": [", pairs,
           o->perturb);
    for (int i = 0; i < n; i++) {
        printf("%s{\"bytes\": %" PRIu64 ", \"pair_mib_s\": %.6g, \"aggregate_mib_s\": %.6g}",
               i ? ", " : "", p[i].bytes, p[i].pair_mib_s, p[i].aggregate_mib_s);
        peak = p[i].pair_mib_s > peak ? p[i].pair_mib_s : peak;
        peak_all = p[i].aggregate_mib_s > peak_all ? p[i].aggregate_mib_s : peak_all;
        bool aligned = (p[i].bytes & (p[i].bytes - 1)) == 0;
        if (!aligned && p[i].pair_mib_s > peak_unaligned)
            peak_unaligned = p[i].pair_mib_s;
    }
    printf("], \"pair_mib_s\": %.6g, \"aggregate_mib_s\": %.6g, \"unaligned_mib_s\": %.6g}\n", peak,
           peak_all, o->perturb > 0 ? peak_unaligned : peak);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    options_t o;
    char err[ERR_LEN] = "";
    int bad = agree(setup(&o, argc, argv, nranks, err) != 0);
    if (bad || o.help) {
        if (rank == 0 && bad)
            fprintf(stderr, "netbw: error: %s\n%s(see netbw --help)\n", err, USAGE_LINE);
        else if (rank == 0)
            fputs(USAGE, stdout);
        MPI_Finalize();
        return bad ? EXIT_USAGE : 0;
    }
    uint64_t list[MAX_POINTS];
    int n = sizes(&o, list);
    char *buf = malloc(o.max + (uint64_t)o.perturb);
    if (buf == NULL) {
        fprintf(stderr, "netbw: error: rank %d: no memory for a %" PRIu64 "-byte message\n", rank,
                o.max + (uint64_t)o.perturb);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, fill_byte(rank), o.max + (uint64_t)o.perturb);
    point_t points[MAX_POINTS];
    for (int i = 0; i < n; i++) {
        double alone = measure(buf, list[i], &o, rank, nranks, false);
        double mine = measure(buf, list[i], &o, rank, nranks, true), sum = 0;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        points[i] = (point_t){list[i], alone, sum};
    }
    if (rank == 0)
        print_json(points, n, nranks / 2, &o);
    free(buf);
    MPI_Finalize();
    return 0;
}
