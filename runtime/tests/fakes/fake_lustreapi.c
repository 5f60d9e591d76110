/* A stand-in for liblustreapi's layout API, for test_lustre.py (there is no Lustre here): every
 * file has the layout IOSTUDY_FAKE_LUSTRE_LAYOUT describes, "plain" or "composite" followed by
 * ";"-separated components "stripe_size,stripe_count,pattern,flags,ext_start,ext_end,mirror_id,
 * pool,ost ost ..." (pool "-" for none, OSTs space-separated). Built as liblustreapi.so.1, which
 * the runtime loads by that name. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct comp {
    uint64_t size, count, pattern, start, end;
    uint32_t flags, mirror;
    char pool[16];
    uint64_t osts[64];
    int nosts;
};
struct llapi_layout {
    bool composite;
    int ncomps, current;
    struct comp comps[16];
};

static void parse_comp(char *text, struct comp *c) {
    char *fields[9] = {0};
    int n = 0;
    for (char *save = NULL, *t = strtok_r(text, ",", &save); t && n < 9;
         t = strtok_r(NULL, ",", &save))
        fields[n++] = t;
    if (n >= 7) {
        c->size = strtoull(fields[0], NULL, 0);
        c->count = strtoull(fields[1], NULL, 0);
        c->pattern = strtoull(fields[2], NULL, 0);
        c->flags = (uint32_t)strtoul(fields[3], NULL, 0);
        c->start = strtoull(fields[4], NULL, 0);
        c->end = (uint64_t)strtoll(fields[5], NULL, 0);
        c->mirror = (uint32_t)strtoul(fields[6], NULL, 0);
    }
    if (n >= 8)
        snprintf(c->pool, sizeof c->pool, "%s", strcmp(fields[7], "-") ? fields[7] : "");
    for (char *save = NULL, *t = n >= 9 ? strtok_r(fields[8], " ", &save) : NULL;
         t && c->nosts < 64; t = strtok_r(NULL, " ", &save))
        c->osts[c->nosts++] = strtoull(t, NULL, 0);
}

struct llapi_layout *llapi_layout_get_by_fd(int fd, uint32_t flags) {
    const char *spec = getenv("IOSTUDY_FAKE_LUSTRE_LAYOUT");
    struct llapi_layout *l = spec ? calloc(1, sizeof *l) : NULL;
    if (!l)
        return NULL;
    char *copy = strdup(spec), *save = NULL;
    char *t = strtok_r(copy, ";", &save);
    l->composite = t && strcmp(t, "composite") == 0;
    while ((t = strtok_r(NULL, ";", &save)) && l->ncomps < 16)
        parse_comp(t, &l->comps[l->ncomps++]);
    free(copy);
    return l;
}

void llapi_layout_free(struct llapi_layout *l) { free(l); }
bool llapi_layout_is_composite(struct llapi_layout *l) { return l->composite; }

int llapi_layout_comp_use(struct llapi_layout *l, uint32_t pos) {
    if (pos == 1) /* FIRST */
        l->current = 0;
    else if (pos == 3) /* NEXT */
        l->current++;
    return l->current < l->ncomps ? 0 : 1;
}

#define CUR(l) (&(l)->comps[(l)->current])
int llapi_layout_stripe_size_get(const struct llapi_layout *l, uint64_t *v) {
    *v = CUR(l)->size;
    return 0;
}
int llapi_layout_stripe_count_get(const struct llapi_layout *l, uint64_t *v) {
    *v = CUR(l)->count;
    return 0;
}
int llapi_layout_pattern_get(const struct llapi_layout *l, uint64_t *v) {
    *v = CUR(l)->pattern;
    return 0;
}
int llapi_layout_comp_flags_get(const struct llapi_layout *l, uint32_t *v) {
    *v = CUR(l)->flags;
    return 0;
}
int llapi_layout_comp_extent_get(const struct llapi_layout *l, uint64_t *start, uint64_t *end) {
    *start = CUR(l)->start;
    *end = CUR(l)->end;
    return 0;
}
int llapi_layout_mirror_id_get(const struct llapi_layout *l, uint32_t *v) {
    *v = CUR(l)->mirror;
    return 0;
}
int llapi_layout_pool_name_get(const struct llapi_layout *l, char *dest, size_t n) {
    snprintf(dest, n, "%s", CUR(l)->pool);
    return 0;
}
int llapi_layout_ost_index_get(const struct llapi_layout *l, uint64_t stripe, uint64_t *v) {
    if (stripe >= (uint64_t)CUR(l)->nosts)
        return -1;
    *v = CUR(l)->osts[stripe];
    return 0;
}
