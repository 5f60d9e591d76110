/* A deflate encoder (RFC 1951) for arrays of fixed-size records, what a log's module regions
 * are, and for its name region.
 *
 * Why not only libdeflate or zlib: a process with thousands of files spends most of its exit
 * compressing their records (20,000 creates: 5,953 POSIX records, 4 MB, 75M instructions at
 * libdeflate's fastest level, 60 % of all the runtime adds to that process). Those general
 * encoders search a hash of recent strings at every position. Records need no search: a counter
 * is most often equal to the same counter one or two records before, and a run of zeros to the
 * eight bytes before it. So this encoder tries exactly those three distances at each position,
 * comparing eight bytes at a time (32 along a match), and the commonest token, eight bytes or
 * more equal to the record before's, is taken without trying the others. Literals (ids, the low
 * bytes of timestamps) are kept as runs, whose bytes are read again from the input when the
 * block is written. Each block of tokens then gets its own Huffman codes, or deflate's fixed ones
 * when those come out smaller. Those 4 MB take 16.5M instructions (libdeflate's size within 5 %:
 * 5 % smaller there, 4 % larger for the records of a tar of /usr/include). Names are matched
 * against the name before (its folder, most of it), in 3.5M instructions where libdeflate
 * took 6.8M, 11 % smaller for names in one folder, 10 % larger for a tree's (tar of /usr/include).
 * The output is an ordinary deflate stream: zlib, PyDarshan and darshan-parser read it as any
 * other.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logwrite.h"

#define MIN_MATCH 3
#define MAX_MATCH 258
#define RUN_DISTANCE 8 /* a run of zeros, or of a repeated 8-byte value, in a record */
#define N_DISTANCES 3  /* one record back, two records back, RUN_DISTANCE back */
#define EXPLICIT_DISTANCE N_DISTANCES /* a match whose distance is the token after it (names) */
#define MATCH_KINDS (N_DISTANCES + 1)
#define MAX_DISTANCE 32768
#define BLOCK_TOKENS (1 << 15) /* tokens per block: codes adapt, the token buffer stays small */
#define SCAN_POSITIONS 6       /* of 8 bytes loaded, the positions with 3 bytes to compare */
#define N_LITLEN 286           /* literals, end of block, length symbols */
#define N_LITLEN_FIXED                                                                             \
    288 /* the fixed code also counts two unused symbols: its 9-bit codes                          \
           depend on them */
#define N_DIST 30
#define N_CLEN 19 /* the code-length alphabet */
#define END_OF_BLOCK 256
#define MAX_CODE_LEN 15
#define MAX_CLEN_LEN 7

/* ---- the symbols of lengths and distances (RFC 1951 3.2.5) ----------------------------------- */
static const uint16_t length_base[29] = {3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                         15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                         67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                         2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t distance_base[N_DIST] = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t distance_extra[N_DIST] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                               6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
/* The order in which a dynamic block sends the code lengths of the code-length alphabet. */
static const uint8_t clen_order[N_CLEN] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                           11, 4,  12, 3, 13, 2, 14, 1, 15};

/* The length symbol of each match length (257 + it), built once. */
static uint8_t length_symbol[MAX_MATCH + 1];

static void build_length_symbols(void) {
    for (int i = 0, len = MIN_MATCH; len <= MAX_MATCH; len++) {
        while (i < 28 && length_base[i + 1] <= len)
            i++;
        length_symbol[len] = (uint8_t)i;
    }
}

/* Two symbols for each power of two above 4: the bit below the highest of distance - 1 picks. */
static int distance_symbol(uint32_t distance) {
    uint32_t d = distance - 1;
    if (d < 4)
        return (int)d;
    int high = 31 - __builtin_clz(d);
    return 2 * high + (int)((d >> (high - 1)) & 1);
}

/* ---- bits ---------------------------------------------------------------------------------- */
/* Bits gather in acc, least significant first, and leave four bytes at a time. A Huffman code is
 * sent from its most significant bit, so codes are kept bit-reversed, ready to append. */
struct bit_writer {
    uint64_t acc;
    unsigned n;
    unsigned char *out;
};

static inline void put_bits(struct bit_writer *w, uint32_t bits, unsigned len) {
    w->acc |= (uint64_t)bits << w->n;
    w->n += len;
    if (w->n >= 32) { /* at most 31 + 30 bits held */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        uint32_t low = (uint32_t)w->acc;
        memcpy(w->out, &low, 4);
        w->out += 4;
#else
        for (int i = 0; i < 4; i++)
            *w->out++ = (unsigned char)(w->acc >> (8 * i));
#endif
        w->acc >>= 32;
        w->n -= 32;
    }
}

static void flush_bits(struct bit_writer *w) {
    for (; w->n > 0; w->n = w->n > 8 ? w->n - 8 : 0, w->acc >>= 8)
        *w->out++ = (unsigned char)w->acc;
}

static uint32_t reversed(uint32_t v, unsigned len) {
    uint32_t r = 0;
    for (unsigned i = 0; i < len; i++, v >>= 1)
        r = r << 1 | (v & 1);
    return r;
}

/* ---- Huffman codes --------------------------------------------------------------------------- */
struct huffman {
    uint8_t len[N_LITLEN_FIXED];
    uint16_t code[N_LITLEN_FIXED]; /* bit-reversed */
};

/* A leaf as one number, its frequency above its symbol: the order of leaves is the order of
 * numbers. */
#define LEAF(freq, sym) ((uint64_t)(freq) << 16 | (sym))
#define LEAF_FREQ(leaf) ((uint32_t)((leaf) >> 16))
#define LEAF_SYM(leaf) ((uint16_t)(leaf))

/* Shell sort, Ciura's gaps: a few thousand comparisons of integers for a block's 286 symbols,
 * where qsort's calls of a comparison function cost ten times as much. */
static void sort_leaves(uint64_t *v, int n) {
    static const int gaps[] = {132, 57, 23, 10, 4, 1};
    for (size_t g = 0; g < sizeof gaps / sizeof *gaps; g++)
        for (int i = gaps[g], gap = gaps[g]; i < n; i++) {
            uint64_t x = v[i];
            int j = i;
            for (; j >= gap && v[j - gap] > x; j -= gap)
                v[j] = v[j - gap];
            v[j] = x;
        }
}

/* Code lengths for freq[0..n) of at most max_len bits. Two symbols at least get a code (an
 * inflater wants a complete code). Huffman's construction over leaves sorted by frequency, with
 * a second queue of the merged nodes (created in increasing weight); while its depth exceeds
 * max_len the frequencies are halved, which flattens the tree. */
static void huffman_lengths(const uint32_t *freq_in, int n, unsigned max_len, uint8_t *len) {
    uint64_t leaves[N_LITLEN];
    uint32_t weight[2 * N_LITLEN], freq[N_LITLEN];
    uint16_t parent[2 * N_LITLEN];
    uint8_t depth[2 * N_LITLEN];
    memcpy(freq, freq_in, n * sizeof *freq);
    int used = 0;
    for (int s = 0; s < n; s++)
        used += freq[s] != 0;
    for (int s = 0; s < n && used < 2; s++)
        if (!freq[s])
            freq[s] = 1, used++;
    for (;;) {
        int m = 0;
        for (int s = 0; s < n; s++)
            if (freq[s])
                leaves[m++] = LEAF(freq[s], s);
        sort_leaves(leaves, m);
        for (int i = 0; i < m; i++)
            weight[i] = LEAF_FREQ(leaves[i]);
        int leaf = 0, merged = m;
        for (int next = m; next < 2 * m - 1; next++) {
            int pick[2];
            for (int k = 0; k < 2; k++)
                pick[k] = leaf < m && (merged == next || weight[leaf] <= weight[merged]) ? leaf++
                                                                                         : merged++;
            weight[next] = weight[pick[0]] + weight[pick[1]];
            parent[pick[0]] = parent[pick[1]] = (uint16_t)next;
        }
        unsigned deepest = 0;
        depth[2 * m - 2] = 0;
        for (int k = 2 * m - 3; k >= 0; k--)
            if ((depth[k] = depth[parent[k]] + 1) > deepest)
                deepest = depth[k];
        if (deepest <= max_len) {
            memset(len, 0, n);
            for (int i = 0; i < m; i++)
                len[LEAF_SYM(leaves[i])] = depth[i];
            return;
        }
        for (int s = 0; s < n; s++)
            freq[s] = freq[s] ? (freq[s] + 1) / 2 : 0;
    }
}

/* The canonical codes of the lengths (RFC 1951 3.2.2). */
static void canonical_codes(struct huffman *h, int n) {
    uint16_t count[MAX_CODE_LEN + 1] = {0}, next[MAX_CODE_LEN + 1];
    for (int s = 0; s < n; s++)
        count[h->len[s]]++;
    count[0] = 0;
    uint16_t code = 0;
    for (int bits = 1; bits <= MAX_CODE_LEN; bits++)
        next[bits] = code = (uint16_t)((code + count[bits - 1]) << 1);
    for (int s = 0; s < n; s++)
        if (h->len[s])
            h->code[s] = (uint16_t)reversed(next[h->len[s]]++, h->len[s]);
}

static void fixed_huffman(struct huffman *lit, struct huffman *dist) {
    for (int s = 0; s < N_LITLEN_FIXED; s++)
        lit->len[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
    canonical_codes(lit, N_LITLEN_FIXED);
    memset(dist->len, 5, N_DIST);
    canonical_codes(dist, N_DIST);
}

/* ---- one block ----------------------------------------------------------------------------- */
/* A token: a run of 1..MAX_LITERAL_RUN literals (the run's length; its bytes are the input's,
 * read again when the block is written), or 256 + ((length - MIN_MATCH) * MATCH_KINDS + which
 * distance), the distance itself in the token after it when which is EXPLICIT_DISTANCE. A
 * block's tokens, their symbols' counts and its codes. */
#define MAX_LITERAL_RUN 255
struct block {
    uint16_t tokens[BLOCK_TOKENS];
    int ntokens;
    int open_run; /* 1 when the last token is a run of literals (a distance token may look one) */
    uint32_t distance[N_DISTANCES];
    int distance_symbol[N_DISTANCES];
    uint32_t lit_freq[N_LITLEN], dist_freq[N_DIST]; /* of the tokens, counted as they come */
    struct huffman lit, dist;
};

/* The bits the block's tokens take with these codes, extra bits included. */
static uint64_t payload_bits(const struct block *b, const struct huffman *lit,
                             const struct huffman *dist) {
    uint64_t bits = 0;
    for (int s = 0; s < N_LITLEN; s++)
        bits += (uint64_t)b->lit_freq[s] * (lit->len[s] + (s > 256 ? length_extra[s - 257] : 0));
    for (int s = 0; s < N_DIST; s++)
        bits += (uint64_t)b->dist_freq[s] * (dist->len[s] + distance_extra[s]);
    return bits;
}

/* A dynamic block's header: the two codes' lengths, run-length coded (16: repeat the previous
 * 3-6 times, 17: 3-10 zeros, 18: 11-138 zeros), themselves Huffman coded. */
struct header {
    int hlit, hdist, hclen;
    uint8_t rle[N_LITLEN + N_DIST], rle_extra[N_LITLEN + N_DIST];
    int nrle;
    struct huffman clen;
    uint64_t bits;
};

static const uint8_t rle_extra_bits[N_CLEN] = {[16] = 2, [17] = 3, [18] = 7};

static void run_length_code(struct header *h, const uint8_t *lens, int n) {
    for (int i = 0; i < n;) {
        int run = 1;
        while (i + run < n && lens[i + run] == lens[i])
            run++;
        int sym = lens[i], take = 1, extra = 0;
        if (sym == 0 && run >= 11)
            take = run > 138 ? 138 : run, extra = take - 11, sym = 18;
        else if (sym == 0 && run >= 3)
            take = run > 10 ? 10 : run, extra = take - 3, sym = 17;
        else if (i > 0 && lens[i - 1] == sym && run >= 3)
            take = run > 6 ? 6 : run, extra = take - 3, sym = 16;
        h->rle[h->nrle] = (uint8_t)sym;
        h->rle_extra[h->nrle++] = (uint8_t)extra;
        i += take;
    }
}

static void build_header(struct header *h, const struct huffman *lit, const struct huffman *dist) {
    h->hlit = N_LITLEN;
    while (h->hlit > 257 && !lit->len[h->hlit - 1])
        h->hlit--;
    h->hdist = N_DIST;
    while (h->hdist > 1 && !dist->len[h->hdist - 1])
        h->hdist--;
    uint8_t lens[N_LITLEN + N_DIST];
    memcpy(lens, lit->len, h->hlit);
    memcpy(lens + h->hlit, dist->len, h->hdist);
    h->nrle = 0;
    run_length_code(h, lens, h->hlit + h->hdist);
    uint32_t freq[N_CLEN] = {0};
    for (int i = 0; i < h->nrle; i++)
        freq[h->rle[i]]++;
    huffman_lengths(freq, N_CLEN, MAX_CLEN_LEN, h->clen.len);
    canonical_codes(&h->clen, N_CLEN);
    h->hclen = N_CLEN;
    while (h->hclen > 4 && !h->clen.len[clen_order[h->hclen - 1]])
        h->hclen--;
    h->bits = 5 + 5 + 4 + 3 * (uint64_t)h->hclen;
    for (int i = 0; i < h->nrle; i++)
        h->bits += h->clen.len[h->rle[i]] + rle_extra_bits[h->rle[i]];
}

static void put_header(struct bit_writer *w, const struct header *h) {
    put_bits(w, (uint32_t)(h->hlit - 257), 5);
    put_bits(w, (uint32_t)(h->hdist - 1), 5);
    put_bits(w, (uint32_t)(h->hclen - 4), 4);
    for (int i = 0; i < h->hclen; i++)
        put_bits(w, h->clen.len[clen_order[i]], 3);
    for (int i = 0; i < h->nrle; i++) {
        put_bits(w, h->clen.code[h->rle[i]], h->clen.len[h->rle[i]]);
        put_bits(w, h->rle_extra[i], rle_extra_bits[h->rle[i]]);
    }
}

/* The block's tokens, the input they cover from in on. */
static void put_tokens(struct bit_writer *w, const struct block *b, const unsigned char *in,
                       const struct huffman *lit, const struct huffman *dist) {
    struct {
        uint32_t bits;
        unsigned len;
    } length_code[MAX_MATCH + 1], distance_code[N_DISTANCES];
    for (int len = MIN_MATCH; len <= MAX_MATCH; len++) {
        int i = length_symbol[len], s = 257 + i;
        length_code[len].bits = lit->code[s] | (uint32_t)(len - length_base[i]) << lit->len[s];
        length_code[len].len = lit->len[s] + length_extra[i];
    }
    for (int k = 0; k < N_DISTANCES; k++) {
        int s = b->distance_symbol[k];
        distance_code[k].bits = dist->code[s] | (b->distance[k] - distance_base[s]) << dist->len[s];
        distance_code[k].len = dist->len[s] + distance_extra[s];
    }
    for (int i = 0; i < b->ntokens; i++) {
        unsigned t = b->tokens[i];
        if (t < 256) {
            const unsigned char *end = in + t;
            for (; in + 2 <= end; in += 2) /* two literals take at most 30 bits: one append */
                put_bits(w, lit->code[in[0]] | (uint32_t)lit->code[in[1]] << lit->len[in[0]],
                         lit->len[in[0]] + lit->len[in[1]]);
            if (in < end)
                put_bits(w, lit->code[*in], lit->len[*in]), in++;
            continue;
        }
        t -= 256;
        unsigned len = t / MATCH_KINDS + MIN_MATCH, k = t % MATCH_KINDS;
        in += len;
        put_bits(w, length_code[len].bits, length_code[len].len);
        if (k == EXPLICIT_DISTANCE) {
            uint32_t d = b->tokens[++i];
            int s = distance_symbol(d);
            put_bits(w, dist->code[s] | (d - distance_base[s]) << dist->len[s],
                     dist->len[s] + distance_extra[s]);
        } else {
            put_bits(w, distance_code[k].bits, distance_code[k].len);
        }
    }
    put_bits(w, lit->code[END_OF_BLOCK], lit->len[END_OF_BLOCK]);
}

/* The block (its tokens cover the input from in on) with its own codes, or with the fixed ones
 * when that is smaller. */
static void put_block(struct bit_writer *w, struct block *b, const unsigned char *in, int final) {
    static struct huffman fixed_lit, fixed_dist; /* built at the first log, by its one writer */
    if (!fixed_lit.len[0])
        fixed_huffman(&fixed_lit, &fixed_dist);
    b->lit_freq[END_OF_BLOCK] = 1;
    huffman_lengths(b->lit_freq, N_LITLEN, MAX_CODE_LEN, b->lit.len);
    canonical_codes(&b->lit, N_LITLEN);
    huffman_lengths(b->dist_freq, N_DIST, MAX_CODE_LEN, b->dist.len);
    canonical_codes(&b->dist, N_DIST);
    struct header header;
    build_header(&header, &b->lit, &b->dist);
    int dynamic =
        header.bits + payload_bits(b, &b->lit, &b->dist) < payload_bits(b, &fixed_lit, &fixed_dist);
    put_bits(w, (uint32_t) final | (dynamic ? 2u : 1u) << 1, 3);
    if (dynamic)
        put_header(w, &header);
    put_tokens(w, b, in, dynamic ? &b->lit : &fixed_lit, dynamic ? &b->dist : &fixed_dist);
}

/* ---- matching ----------------------------------------------------------------------------------
 */
static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* How many bytes, up to max, at a equal those at b (b < a: an overlapping copy is fine). Most
 * matches span whole stretches of equal counters: 32 bytes are compared at a time while they
 * last. */
static inline size_t match_length(const unsigned char *a, const unsigned char *b, size_t max) {
    size_t n = 0;
    while (n + 32 <= max &&
           ((load64(a + n) ^ load64(b + n)) | (load64(a + n + 8) ^ load64(b + n + 8)) |
            (load64(a + n + 16) ^ load64(b + n + 16)) |
            (load64(a + n + 24) ^ load64(b + n + 24))) == 0)
        n += 32;
    while (n + 8 <= max) {
        uint64_t x = load64(a + n), y = load64(b + n);
        if (x != y)
            return n + (size_t)__builtin_ctzll(x ^ y) / 8;
        n += 8;
    }
    while (n < max && a[n] == b[n])
        n++;
    return n;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FIRST_THREE_BYTES 0x00ffffffu /* of four bytes loaded into a uint32_t */
#else
#define FIRST_THREE_BYTES 0xffffff00u
#endif

static inline uint32_t load32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Appends a match of len bytes at the distance numbered which to the block. */
static inline void put_match(struct block *b, size_t len, int which) {
    b->tokens[b->ntokens++] = (uint16_t)(256 + (len - MIN_MATCH) * MATCH_KINDS + which);
    b->open_run = 0;
    b->lit_freq[257 + length_symbol[len]]++;
    b->dist_freq[b->distance_symbol[which]]++;
}

/* Appends a match of len bytes at distance (at most MAX_DISTANCE) to the block: two tokens. */
static void put_far_match(struct block *b, size_t len, size_t distance) {
    b->tokens[b->ntokens++] = (uint16_t)(256 + (len - MIN_MATCH) * MATCH_KINDS + EXPLICIT_DISTANCE);
    b->tokens[b->ntokens++] = (uint16_t)distance;
    b->open_run = 0;
    b->lit_freq[257 + length_symbol[len]]++;
    b->dist_freq[distance_symbol((uint32_t)distance)]++;
}

/* Appends n (at most MAX_LITERAL_RUN) literals from p to the block: to its last token when
 * that is a run of literals with room. */
static inline void put_literals(const unsigned char *in, size_t p, size_t n, struct block *b) {
    for (size_t i = 0; i < n; i++)
        b->lit_freq[in[p + i]]++;
    if (b->open_run && b->tokens[b->ntokens - 1] + n <= MAX_LITERAL_RUN)
        b->tokens[b->ntokens - 1] += (uint16_t)n;
    else
        b->tokens[b->ntokens++] = (uint16_t)n;
    b->open_run = 1;
}

/* Appends the token at p to the block and counts its symbols; returns the bytes it covers. The
 * record before is the likeliest match, then a run, then two records back. A distance whose
 * first three bytes differ (the usual case at a literal) costs a few instructions. */
static size_t next_token(const unsigned char *in, size_t len, size_t p, struct block *b) {
    size_t max = len - p < MAX_MATCH ? len - p : MAX_MATCH, best = 0;
    int which = 0;
    uint32_t head = max >= 4 ? load32(in + p) : 0;
    for (int k = 0; k < N_DISTANCES; k++) {
        size_t d = b->distance[k];
        if (p < d || (max >= 4 && ((head ^ load32(in + p - d)) & FIRST_THREE_BYTES) != 0))
            continue;
        size_t n = match_length(in + p, in + p - d, max);
        if (n > best)
            best = n, which = k;
        if (best >= MIN_MATCH)
            break;
    }
    if (best < MIN_MATCH) {
        put_literals(in, p, 1, b);
        return 1;
    }
    put_match(b, best, which);
    return best;
}

#define BYTES_7F 0x7f7f7f7f7f7f7f7fULL
#define BYTES_80 0x8080808080808080ULL

/* The high bit of each byte of x that is zero (exact: no borrow between bytes). */
static inline uint64_t zero_bytes(uint64_t x) {
    return ~(((x & BYTES_7F) + BYTES_7F) | x | BYTES_7F);
}

/* The positions (the high bit of their byte) of x's first SCAN_POSITIONS bytes where three
 * zero bytes start: where the eight bytes x compares match for three bytes or more. */
static inline uint64_t three_equal(uint64_t x) {
    uint64_t equal = zero_bytes(x);
    return equal & equal >> 8 & equal >> 16;
}

/* How many positions from p on, up to SCAN_POSITIONS, are literals: positions where no distance
 * has its first three bytes equal, the test next_token makes one position at a time, here made
 * for six at once (to_record: the eight bytes at p xor those a record back). Needs every distance
 * behind p and 16 bytes ahead (so each position scanned has at least 4 bytes left, as
 * next_token's test requires). Most of a record's literals are the low bytes of timestamps and
 * ids: this keeps them from costing a full token search each. */
static inline size_t literal_span(const unsigned char *in, size_t p, uint64_t to_record,
                                  size_t two_records) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t here = load64(in + p);
    uint64_t starts = three_equal(to_record) | three_equal(here ^ load64(in + p - RUN_DISTANCE)) |
                      three_equal(here ^ load64(in + p - two_records));
    starts &= BYTES_80 >> (8 * (8 - SCAN_POSITIONS));
    return starts ? (size_t)__builtin_ctzll(starts) / 8 : SCAN_POSITIONS;
#else
    (void)in, (void)p, (void)to_record, (void)two_records;
    return 0; /* the byte order the scan's shifts assume is not this one: test each position */
#endif
}

/* The block's tokens from p on, until the block is full or the input ends; returns where they
 * end. */
static size_t tokenize(const unsigned char *in, size_t len, size_t p, struct block *b) {
    const size_t record = b->distance[0], two_records = b->distance[2];
    const size_t farthest = two_records > RUN_DISTANCE ? two_records : RUN_DISTANCE;
    while (p < len && b->ntokens < BLOCK_TOKENS) {
        if (p < farthest || len - p < 16) { /* the first records, the end: no scan */
            p += next_token(in, len, p, b);
            continue;
        }
        /* The commonest token first: eight bytes or more equal to the record before's, the
         * match next_token would choose, found without a scan. */
        uint64_t to_record = load64(in + p) ^ load64(in + p - record);
        if (to_record == 0) {
            size_t max = len - p < MAX_MATCH ? len - p : MAX_MATCH;
            size_t n = 8 + match_length(in + p + 8, in + p + 8 - record, max - 8);
            put_match(b, n, 0);
            p += n;
            continue;
        }
        size_t n = literal_span(in, p, to_record, two_records);
        if (n) {
            put_literals(in, p, n, b);
            p += n;
        } else {
            p += next_token(in, len, p, b);
        }
    }
    return p;
}

/* ---- the stream ------------------------------------------------------------------------------
 */
/* The block's tokens from p on, until it is full or the input ends; returns where they end. */
typedef size_t tokenizer(const unsigned char *in, size_t len, size_t p, struct block *b,
                         void *state);

static size_t records_tokens(const unsigned char *in, size_t len, size_t p, struct block *b,
                             void *state) {
    (void)state;
    return tokenize(in, len, p, b);
}

/* in as blocks of next's tokens, into out (cap: ios_deflate_records_bound(len) at least). */
static size_t deflate_blocks(const unsigned char *in, size_t len, struct block *b, tokenizer *next,
                             void *state, unsigned char *out) {
    if (!length_symbol[MAX_MATCH])
        build_length_symbols();
    struct bit_writer w = {.out = out};
    size_t p = 0;
    do {
        b->ntokens = b->open_run = 0;
        memset(b->lit_freq, 0, sizeof b->lit_freq);
        memset(b->dist_freq, 0, sizeof b->dist_freq);
        size_t from = p;
        p = next(in, len, p, b, state);
        put_block(&w, b, in + from, p == len);
    } while (p < len);
    flush_bits(&w);
    return (size_t)(w.out - out);
}

size_t ios_deflate_records(const unsigned char *in, size_t len, size_t record_size,
                           unsigned char *out, size_t cap) {
    if (record_size == 0 || record_size > IOS_DEFLATE_RECORD_MAX ||
        cap < ios_deflate_records_bound(len))
        return 0;
    struct block *b = malloc(sizeof *b);
    if (!b)
        return 0;
    const uint32_t distances[N_DISTANCES] = {(uint32_t)record_size, RUN_DISTANCE,
                                             (uint32_t)(2 * record_size)};
    for (int k = 0; k < N_DISTANCES; k++) {
        b->distance[k] = distances[k];
        b->distance_symbol[k] = distance_symbol(distances[k]);
    }
    size_t n = deflate_blocks(in, len, b, records_tokens, NULL, out);
    free(b);
    return n;
}

/* ---- names --------------------------------------------------------------------------------- */
/* The name region's entries: an 8-byte record id, the name, its NUL. A name shares most of its
 * bytes, its folder first, with the name before it: each entry is matched against the entry
 * before (a distance of that entry's length), its id taken as literals (a hash: no match). */
#define ID_BYTES 8

struct names_cursor {
    size_t entry, end; /* where the entry being coded starts, and ends after its NUL */
    size_t distance;   /* back to the entry before's start; 0 for the first */
};

static void next_entry(const unsigned char *in, size_t len, struct names_cursor *c) {
    c->distance = c->end - c->entry;
    c->entry = c->end;
    size_t name = len - c->entry > ID_BYTES ? c->entry + ID_BYTES : len;
    const unsigned char *nul = memchr(in + name, 0, len - name);
    c->end = nul ? (size_t)(nul - in) + 1 : len;
}

static size_t names_tokens(const unsigned char *in, size_t len, size_t p, struct block *b,
                           void *state) {
    struct names_cursor *c = state;
    while (p < len && b->ntokens < BLOCK_TOKENS - 1) { /* a match takes two tokens */
        if (p == c->end)
            next_entry(in, len, c);
        size_t name = c->entry + ID_BYTES, n = 0;
        if (p < name) {
            put_literals(in, p, (name < c->end ? name : c->end) - p, b);
            p = name < c->end ? name : c->end;
            continue;
        }
        if (c->distance && c->distance <= MAX_DISTANCE) {
            size_t max = c->end - p < MAX_MATCH ? c->end - p : MAX_MATCH;
            n = match_length(in + p, in + p - c->distance, max);
        }
        if (n >= MIN_MATCH) {
            put_far_match(b, n, c->distance);
            p += n;
        } else {
            put_literals(in, p++, 1, b);
        }
    }
    return p;
}

size_t ios_deflate_names(const unsigned char *in, size_t len, unsigned char *out, size_t cap) {
    if (cap < ios_deflate_records_bound(len))
        return 0;
    struct block *b = malloc(sizeof *b);
    if (!b)
        return 0;
    for (int k = 0; k < N_DISTANCES; k++) { /* unused: every match has its distance */
        b->distance[k] = 1;
        b->distance_symbol[k] = 0;
    }
    struct names_cursor c = {0};
    size_t n = deflate_blocks(in, len, b, names_tokens, &c, out);
    free(b);
    return n;
}
