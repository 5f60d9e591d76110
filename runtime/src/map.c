/* The u64 -> pointer map (open addressing) of record ids, descriptors and stream pointers. */
#include "logwrite.h"

#include <stdlib.h>

/* ---- u64 -> pointer map; key 0 marks an empty slot, so 0 itself is stored off-table ----- */
static size_t map_slot(uint64_t key, size_t cap) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

void *ios_map_get(const struct ios_map *m, uint64_t key) {
    if (m->cap == 0)
        return NULL;
    for (size_t i = map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return m->vals[i];
        if (m->keys[i] == 0)
            return NULL;
    }
}

static int map_grow(struct ios_map *m, size_t cap) {
    struct ios_map bigger = {calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(void *)), cap, 0};
    if (!bigger.keys || !bigger.vals) {
        free(bigger.keys);
        free(bigger.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) { /* distinct keys, room to spare: placed as they come */
        if (m->keys[i] == 0)
            continue;
        size_t j = map_slot(m->keys[i], cap);
        while (bigger.keys[j] != 0)
            j = (j + 1) & (cap - 1);
        bigger.keys[j] = m->keys[i];
        bigger.vals[j] = m->vals[i];
    }
    bigger.count = m->count;
    ios_map_free(m);
    *m = bigger;
    return 0;
}

int ios_map_put(struct ios_map *m, uint64_t key, void *val) {
    if (key == 0)
        return -1; /* ids and pointers are never 0 in practice; refuse rather than corrupt */
    if ((m->count + 1) * 4 > m->cap * 3 && map_grow(m, m->cap ? m->cap * 2 : 64) != 0)
        return -1;
    size_t i = map_slot(key, m->cap);
    while (m->keys[i] != 0 && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == 0)
        m->count++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

int ios_map_reserve(struct ios_map *m, size_t n) {
    size_t cap = m->cap ? m->cap : 64;
    while (n * 4 > cap * 3)
        cap *= 2;
    return cap == m->cap ? 0 : map_grow(m, cap);
}

void ios_map_del(struct ios_map *m, uint64_t key) {
    if (m->cap == 0)
        return;
    size_t i = map_slot(key, m->cap);
    while (m->keys[i] != key) {
        if (m->keys[i] == 0)
            return;
        i = (i + 1) & (m->cap - 1);
    }
    /* Backward-shift deletion keeps probe sequences intact without tombstones. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (m->keys[j] == 0)
            break;
        size_t home = map_slot(m->keys[j], m->cap);
        if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->vals[i] = NULL;
    m->count--;
}

void ios_map_free(struct ios_map *m) {
    free(m->keys);
    free(m->vals);
    *m = (struct ios_map){0};
}
