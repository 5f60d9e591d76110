/* glusterplace: names one file onto a chosen brick of a distributed GlusterFS volume, with the
 * benchmarks' own mechanism (common/gluster.h: STEM, STEM.1, ... until pathinfo names the
 * brick), for a writer that is no benchmark: adaptive_check's competing writer, which a job's
 * shell starts beside the benchmark (seed 004's interference) on a known target.
 *
 *   glusterplace STEM BRICK
 *
 * creates the file (empty) and prints its path on stdout. Not MPI: one process, in the job's
 * shell. Exit status: 0; 1 the file could not be placed (the failing call on stderr, the
 * candidate removed); 2 usage.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gluster.h"

int main(int argc, char **argv) {
    if (argc != 3 || argv[1][0] == '\0' || argv[2][0] == '\0') {
        fprintf(stderr, "usage: glusterplace STEM BRICK\n"
                        "Creates STEM, or the first of STEM.1, STEM.2, ... whose\n"
                        "trusted.glusterfs.pathinfo names BRICK, and prints its path.\n");
        return 2;
    }
    char placed[4096];
    int suffix = 0;
    const char *call = NULL;
    int e = gluster_place(argv[1], argv[2], placed, sizeof placed, &suffix, &call);
    if (e != 0) {
        fprintf(stderr, "glusterplace: %s %s: %s\n", call, placed, strerror(e));
        /* the candidate whose place could not be read goes: a failed job leaves no file */
        if (strcmp(call, "naming") != 0 && strcmp(call, "open") != 0)
            unlink(placed);
        return 1;
    }
    printf("%s\n", placed);
    return 0;
}
