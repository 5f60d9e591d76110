/* Darshan 3.5.0's runtime configuration, as its users write it: the file DARSHAN_CONFIG_PATH
 * names, then the environment, whose variables override the file's settings (Darshan's order).
 * Everything is decided here once, at start-up (regexes compiled, ranges parsed); what the
 * wrappers see is the outcome: a record is refused when it is made (ios_config_refuses), and
 * DXT's flags. A bad setting costs one warning line, naming the file, its line and the key (or
 * the variable), and is ignored: the program is never failed because of its configuration. */
#include "iostudy.h"

#include <ctype.h>
#include <limits.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* Darshan 3.5.0's module names, by module id: the bits of a module list. */
static const char *const module_names[] = {
    "NULL",        "POSIX", "MPI-IO", "H5F",     "H5D",       "PNETCDF_FILE",
    "PNETCDF_VAR", "BG/Q",  "LUSTRE", "STDIO",   "DXT_POSIX", "DXT_MPIIO",
    "MDHIM",       "APXC",  "APMPI",  "HEATMAP", "DFS",       "DAOS"};
#define N_MODULES ((int)(sizeof module_names / sizeof *module_names))
#define ALL_MODULES ((UINT64_C(1) << N_MODULES) - 1)
#define BIT(mod) (UINT64_C(1) << (mod))
#define DXT_BITS (BIT(IOS_MOD_DXT_POSIX) | BIT(IOS_MOD_DXT_MPIIO))
#define DXT_DEFAULT_MEM (2 * 1024 * 1024) /* Darshan's DXT_IO_TRACE_MEM_MAX, per module */
#define DXT_RECORD_UNIT 1024 /* a DXT "record" of MAX_RECORDS, in bytes, as Darshan's */

struct pattern {
    regex_t re;
    uint64_t mods; /* NAME_ rules: the modules it applies to */
    char *text;
};
struct patterns {
    struct pattern *v;
    size_t n;
};
struct rank_range {
    int lo, hi; /* inclusive; hi INT_MAX: to the last rank */
};
struct ranks {
    struct rank_range *v;
    size_t n;
};
/* Where a setting was read, for its warnings: a file's line, or a variable (line 0). */
struct origin {
    const char *where;
    int line;
    const char *key;
};

static struct patterns name_exclude, name_include, app_exclude, app_include;
static struct ranks rank_exclude, rank_include;
static uint64_t mod_disable, mod_enable; /* MOD_DISABLE, MOD_ENABLE (enabling wins) */
static uint64_t mod_disabled_all_ranks;  /* before the rank rules */
static int64_t max_records[N_MODULES];   /* MAX_RECORDS (0: no limit but memory) */
static int64_t records[N_MODULES];       /* records made, against max_records */
static int dump_config, dumped;

static void warn(const struct origin *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(const struct origin *o, const char *fmt, ...) {
    char what[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (o->line)
        ios_warn_config("%s:%d: %s: %s, ignored", o->where, o->line, o->key, what);
    else
        ios_warn_config("%s: %s, ignored", o->key, what);
}

/* ---- values ------------------------------------------------------------------------------ */

/* A positive number (MiB of memory, an alignment), fractions allowed. */
static int positive(const char *v, double *out) {
    char *end;
    if (!v || !*v)
        return -1;
    double d = strtod(v, &end);
    if (*end != '\0' || !(d > 0))
        return -1;
    *out = d;
    return 0;
}

/* A DXT trigger's fraction, read as a float, as Darshan reads it. */
static int fraction(const char *v, double *out) {
    char *end;
    if (!v)
        return -1;
    float p = strtof(v, &end);
    if (end == v || *end != '\0')
        return -1;
    *out = (double)p;
    return 0;
}

static int whole(const char *v, int64_t *out) {
    char *end;
    if (!v || !*v)
        return -1;
    long long n = strtoll(v, &end, 10);
    if (*end != '\0' || n < 0)
        return -1;
    *out = n;
    return 0;
}

/* A module list: names separated by commas, or `*` first for all of them. */
static uint64_t modules(const struct origin *o, const char *list) {
    uint64_t bits = 0;
    if (list[0] == '*' && (list[1] == ',' || list[1] == '\0'))
        return ALL_MODULES;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int m = 0;
        while (m < N_MODULES &&
               !(strlen(module_names[m]) == len && !memcmp(module_names[m], p, len)))
            m++;
        if (m < N_MODULES)
            bits |= BIT(m);
        else if (len)
            warn(o, "unknown module \"%.*s\"", (int)len, p);
        p += len + (p[len] == ',');
    }
    return bits;
}

/* Appends the comma-separated POSIX extended regexes of list, each applying to mods. */
static void add_patterns(const struct origin *o, struct patterns *to, const char *list,
                         uint64_t mods) {
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char *text = strndup(p, len);
        struct pattern *v = realloc(to->v, (to->n + 1) * sizeof *v);
        p += len + (p[len] == ',');
        if (!text || !v) {
            free(text);
            if (v)
                to->v = v;
            return;
        }
        to->v = v;
        if (!len || regcomp(&v[to->n].re, text, REG_EXTENDED | REG_NOSUB) != 0) {
            warn(o, "cannot compile the regex \"%s\"", text);
            free(text);
            continue;
        }
        v[to->n].mods = mods;
        v[to->n++].text = text;
    }
}

static void free_patterns(struct patterns *ps) {
    for (size_t i = 0; i < ps->n; i++) {
        regfree(&ps->v[i].re);
        free(ps->v[i].text);
    }
    free(ps->v);
    ps->v = NULL;
    ps->n = 0;
}

static int matches(const struct patterns *ps, uint64_t mod_bit, const char *s) {
    for (size_t i = 0; i < ps->n; i++)
        if ((ps->v[i].mods & mod_bit) && regexec(&ps->v[i].re, s, 0, NULL, 0) == 0)
            return 1;
    return 0;
}

/* One rank or range of a rank list: `r`, `lo:hi`, `lo:` (to the last), `:hi` (from 0), `*`. */
static int rank_range(const char *tok, size_t len, struct rank_range *out) {
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, tok, len);
    buf[len] = '\0';
    if (strcmp(buf, "*") == 0) {
        *out = (struct rank_range){0, INT_MAX};
        return 0;
    }
    char *colon = strchr(buf, ':');
    int64_t lo = 0, hi;
    if (colon)
        *colon = '\0';
    if ((buf[0] && whole(buf, &lo) != 0) || lo > INT_MAX)
        return -1;
    hi = lo;
    if (colon && (colon[1] ? whole(colon + 1, &hi) != 0 || hi > INT_MAX : (hi = INT_MAX, 0)))
        return -1;
    *out = (struct rank_range){(int)lo, (int)hi};
    return 0;
}

static void add_ranks(const struct origin *o, struct ranks *to, const char *list) {
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        struct rank_range r;
        if (rank_range(p, len, &r) != 0) {
            warn(o, "\"%.*s\" is not a rank or a range of ranks", (int)len, p);
        } else {
            struct rank_range *v = realloc(to->v, (to->n + 1) * sizeof *v);
            if (!v)
                return;
            to->v = v;
            v[to->n++] = r;
        }
        p += len + (p[len] == ',');
    }
}

static int in_ranks(const struct ranks *rs, int rank) {
    for (size_t i = 0; i < rs->n; i++)
        if (rank >= rs->v[i].lo && rank <= rs->v[i].hi)
            return 1;
    return 0;
}

static void set_text(char **slot, const char *v) {
    char *copy = strdup(v);
    if (copy) {
        free(*slot);
        *slot = copy;
    }
}

/* ---- the file ---------------------------------------------------------------------------- */

/* Settings of one value, by their name in the file (key); -1: not one of them. */
static int single_value(const struct origin *o, const char *key, const char *v) {
    double d;
    if (!strcmp(key, "MODMEM") || !strcmp(key, "NAMEMEM")) {
        if (positive(v, &d) != 0)
            warn(o, "\"%s\" is not a positive number of MiB", v ? v : "");
        else
            *(key[0] == 'M' ? &ios_config.modmem_mib : &ios_config.namemem_mib) = d;
    } else if (!strcmp(key, "MEM_ALIGNMENT") || !strcmp(key, "MEMALIGN")) {
        if (positive(v, &d) != 0)
            warn(o, "\"%s\" is not a positive number", v ? v : "");
        else
            ios_config.mem_alignment = (int64_t)d;
    } else if (!strcmp(key, "DXT_SMALL_IO_TRIGGER") || !strcmp(key, "DXT_UNALIGNED_IO_TRIGGER")) {
        if (fraction(v, &d) != 0)
            warn(o, "\"%s\" is not a number", v ? v : "");
        else
            *(key[4] == 'S' ? &ios_config.dxt_small_trigger : &ios_config.dxt_unaligned_trigger) =
                d;
    } else if (!strcmp(key, "JOBID") || !strcmp(key, "LOGPATH") || !strcmp(key, "MMAP_LOGPATH")) {
        if (!v)
            warn(o, "no value");
        else
            set_text(key[0] == 'J'   ? &ios_config.jobid_env
                     : key[0] == 'L' ? &ios_config.log_path
                                     : &ios_config.mmap_log_path,
                     v);
    } else {
        return -1;
    }
    return 0;
}

/* Settings of a value and a module list. */
static void with_modules(const struct origin *o, const char *v, const char *mods) {
    const char *k = o->key;
    int64_t n;
    if (!mods) {
        warn(o, "needs a value and a module list");
    } else if (strcmp(k, "MAX_RECORDS") != 0) {
        add_patterns(o, k[5] == 'E' ? &name_exclude : &name_include, v, modules(o, mods));
    } else if (whole(v, &n) != 0) {
        warn(o, "\"%s\" is not a number of records", v);
    } else {
        uint64_t bits = modules(o, mods);
        for (int m = 0; m < N_MODULES; m++)
            if (bits & BIT(m))
                max_records[m] = n;
    }
}

/* Settings of a list; then those of a list and a module list, and the flags. */
static void setting(const struct origin *o, const char *v, const char *mods) {
    const char *k = o->key;
    if (single_value(o, k, v) == 0 || !strcmp(k, "LOGHINTS") || !strcmp(k, "INTERNAL_TIMING"))
        return; /* LOGHINTS (MPI-IO hints of Darshan's own log write), INTERNAL_TIMING: Darshan's
                 * only, and harmless: accepted without a word */
    if (!strcmp(k, "DUMP_CONFIG")) {
        dump_config = 1;
    } else if (!strcmp(k, "DISABLE_SHARED_REDUCTION")) {
        ios_config.disable_shared_redux = 1;
    } else if (strcmp(k, "MOD_DISABLE") && strcmp(k, "MOD_ENABLE") && strcmp(k, "APP_EXCLUDE") &&
               strcmp(k, "APP_INCLUDE") && strcmp(k, "RANK_EXCLUDE") && strcmp(k, "RANK_INCLUDE") &&
               strcmp(k, "NAME_EXCLUDE") && strcmp(k, "NAME_INCLUDE") && strcmp(k, "MAX_RECORDS")) {
        warn(o, "unknown setting");
    } else if (!v) {
        warn(o, "no value");
    } else if (!strncmp(k, "MOD_", 4)) {
        *(k[4] == 'D' ? &mod_disable : &mod_enable) |= modules(o, v);
    } else if (!strncmp(k, "APP_", 4)) {
        add_patterns(o, k[4] == 'E' ? &app_exclude : &app_include, v, ALL_MODULES);
    } else if (!strncmp(k, "RANK_", 5)) {
        add_ranks(o, k[5] == 'E' ? &rank_exclude : &rank_include, v);
    } else {
        with_modules(o, v, mods);
    }
}

static void read_file(const char *path) {
    FILE *fp = fopen(path, "re");
    if (!fp) {
        ios_warn_config("cannot open the Darshan config file %s (DARSHAN_CONFIG_PATH): %s", path,
                        strerror(errno));
        return;
    }
    char *line = NULL, *save;
    size_t cap = 0;
    for (int n = 1; getline(&line, &cap, fp) != -1; n++) {
        const char *c = line;
        while (isspace((unsigned char)*c))
            c++;
        if (*c == '\0' || *c == '#')
            continue;
        line[strcspn(line, "\n")] = '\0';
        struct origin o = {path, n, strtok_r(line, " \t", &save)};
        char *v = strtok_r(NULL, " \t", &save);
        setting(&o, v, v ? strtok_r(NULL, " \t", &save) : NULL);
    }
    free(line);
    fclose(fp);
}

/* ---- the environment --------------------------------------------------------------------- */

/* Every variable read here starts with DARSHAN_ or DXT_: one pass over the environment finds
 * those, and each setting is looked up among them (some twenty getenv calls, each a walk of the
 * whole environment, were 8,000 of a process's fixed instructions). */
#define MAX_VARIABLES 64
static const char *variables[MAX_VARIABLES];
static int n_variables; /* -1: more than MAX_VARIABLES, getenv decides */

static void gather_variables(void) {
    extern char **environ;
    n_variables = 0;
    for (char **e = environ; e && *e; e++) {
        if ((*e)[0] != 'D' || (strncmp(*e, "DARSHAN_", 8) != 0 && strncmp(*e, "DXT_", 4) != 0))
            continue;
        if (n_variables == MAX_VARIABLES) {
            n_variables = -1;
            return;
        }
        variables[n_variables++] = *e;
    }
}

/* getenv(name) of a DARSHAN_ or DXT_ variable, as it was when gather_variables ran. */
static const char *variable(const char *name) {
    if (n_variables < 0)
        return getenv(name);
    size_t n = strlen(name);
    for (int i = 0; i < n_variables; i++)
        if (strncmp(variables[i], name, n) == 0 && variables[i][n] == '=')
            return variables[i] + n + 1;
    return NULL;
}

/* A variable of one value (an empty one is not set), by its setting's name in the file. */
static void env_value(const char *var, const char *key) {
    const char *v = variable(var);
    struct origin o = {NULL, 0, var};
    if (v && *v)
        single_value(&o, key, v);
}

/* Either variable of a pair replaces what the file said of the pair. */
static void env_apps(void) {
    const char *ex = variable("DARSHAN_APP_EXCLUDE"), *in = variable("DARSHAN_APP_INCLUDE");
    if (!ex && !in)
        return;
    free_patterns(&app_exclude);
    free_patterns(&app_include);
    struct origin oe = {NULL, 0, "DARSHAN_APP_EXCLUDE"}, oi = {NULL, 0, "DARSHAN_APP_INCLUDE"};
    if (ex)
        add_patterns(&oe, &app_exclude, ex, ALL_MODULES);
    if (in)
        add_patterns(&oi, &app_include, in, ALL_MODULES);
}

static void env_ranks(void) {
    const char *ex = variable("DARSHAN_RANK_EXCLUDE"), *in = variable("DARSHAN_RANK_INCLUDE");
    if (!ex && !in)
        return;
    rank_exclude.n = rank_include.n = 0;
    struct origin oe = {NULL, 0, "DARSHAN_RANK_EXCLUDE"}, oi = {NULL, 0, "DARSHAN_RANK_INCLUDE"};
    if (ex)
        add_ranks(&oe, &rank_exclude, ex);
    if (in)
        add_ranks(&oi, &rank_include, in);
}

static void env_modules(void) {
    const char *dis = variable("DARSHAN_MOD_DISABLE"), *en = variable("DARSHAN_MOD_ENABLE");
    struct origin od = {NULL, 0, "DARSHAN_MOD_DISABLE"}, oe = {NULL, 0, "DARSHAN_MOD_ENABLE"};
    if (dis || en)
        mod_disable = mod_enable = 0;
    if (dis)
        mod_disable |= modules(&od, dis);
    if (en)
        mod_enable |= modules(&oe, en);
    if (variable("DXT_ENABLE_IO_TRACE")) /* Darshan's older way to turn both traces on */
        mod_enable |= DXT_BITS;
}

static void read_environment(void) {
    env_value("DARSHAN_MODMEM", "MODMEM");
    env_value("DARSHAN_NAMEMEM", "NAMEMEM");
    env_value("DARSHAN_MEMALIGN", "MEM_ALIGNMENT");
    env_value("DARSHAN_JOBID", "JOBID");
    env_value("DARSHAN_LOGPATH", "LOGPATH");
    env_value("DARSHAN_MMAP_LOGPATH", "MMAP_LOGPATH");
    env_value("DARSHAN_DXT_SMALL_IO_TRIGGER", "DXT_SMALL_IO_TRIGGER");
    env_value("DARSHAN_DXT_UNALIGNED_IO_TRIGGER", "DXT_UNALIGNED_IO_TRIGGER");
    env_apps();
    env_ranks();
    env_modules();
    if (variable("DARSHAN_DUMP_CONFIG"))
        dump_config = 1;
    if (variable("DARSHAN_DISABLE_SHARED_REDUCTION"))
        ios_config.disable_shared_redux = 1;
}

/* ---- start-up ---------------------------------------------------------------------------- */

static char **split_list(const char *list) {
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    char **out = calloc(n + 1, sizeof(char *));
    char *copy = strdup(list);
    if (!out || !copy) {
        free(out);
        free(copy);
        return NULL;
    }
    size_t i = 0;
    for (char *save, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        out[i++] = tok;
    return out;
}

static void read_exclude_dirs(void) {
    static char *default_excludes[] = {
#define X(prefix) prefix,
#include "default_excludes.def"
#undef X
        NULL};
    const char *ex = variable("DARSHAN_EXCLUDE_DIRS");
    ios_config.exclude_dirs_default = !ex;
    if (!ex)
        ios_set_excludes(default_excludes);
    else if (strcmp(ex, "none") == 0)
        ios_set_excludes(NULL);
    else
        ios_set_excludes(split_list(ex));
}

/* Everything back to Darshan's defaults (a process image reads its configuration once; an
 * image whose start was refused reads it again at MPI_Init). */
static void defaults(void) {
    free_patterns(&name_exclude);
    free_patterns(&name_include);
    free_patterns(&app_exclude);
    free_patterns(&app_include);
    rank_exclude.n = rank_include.n = 0;
    mod_disable = mod_enable = 0;
    memset(max_records, 0, sizeof max_records);
    dump_config = 0;
    ios_config.modmem_mib = 4.0;
    ios_config.namemem_mib = 1.0;
    ios_config.mem_alignment = 8;
    ios_config.disable_shared_redux = 0;
    ios_config.dxt_small_trigger = ios_config.dxt_unaligned_trigger = -1;
}

/* ---- DUMP_CONFIG --------------------------------------------------------------------------- */

/* The patterns of ps that apply to the modules of bit, comma-separated ("NONE": none). */
static const char *joined(const struct patterns *ps, uint64_t bit, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ps->n && n < cap; i++)
        if (ps->v[i].mods & bit)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "," : "", ps->v[i].text);
    return out[0] ? out : "NONE";
}

static const char *ranges(const struct ranks *rs, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < rs->n && n < cap; i++) {
        const struct rank_range *r = &rs->v[i];
        n += (size_t)snprintf(out + n, cap - n, "%s%d", n ? "," : "", r->lo);
        if (r->hi != r->lo && n < cap)
            n += (size_t)(r->hi == INT_MAX ? snprintf(out + n, cap - n, ":")
                                           : snprintf(out + n, cap - n, ":%d", r->hi));
    }
    return out[0] ? out : "NONE";
}

/* The configuration in force, as Darshan's DUMP_CONFIG prints it, a setting a line. */
static void dump(void) {
    char a[256], b[256];
    ios_warn_config("config: MODMEM = %g MiB, NAMEMEM = %g MiB, MEM_ALIGNMENT = %lld bytes",
                    ios_config.modmem_mib, ios_config.namemem_mib,
                    (long long)ios_config.mem_alignment);
    ios_warn_config("config: JOBID = %s, LOGPATH = %s, MMAP_LOGPATH = %s",
                    ios_config.jobid_env ? ios_config.jobid_env : "SLURM_JOB_ID",
                    ios_config.log_path ? ios_config.log_path : "NONE",
                    ios_config.mmap_log_path ? ios_config.mmap_log_path : "NONE");
    ios_warn_config("config: APP_EXCLUDE = %s, APP_INCLUDE = %s",
                    joined(&app_exclude, 1, a, sizeof a), joined(&app_include, 1, b, sizeof b));
    ios_warn_config("config: RANK_EXCLUDE = %s, RANK_INCLUDE = %s",
                    ranges(&rank_exclude, a, sizeof a), ranges(&rank_include, b, sizeof b));
    ios_warn_config("config: DXT_SMALL_IO_TRIGGER = %.2f, DXT_UNALIGNED_IO_TRIGGER = %.2f",
                    ios_config.dxt_small_trigger, ios_config.dxt_unaligned_trigger);
    for (int m = 0; m < IOS_NMODULES; m++) {
        int id = ios_modules[m].id;
        if (ios_config.mod_disabled & BIT(id)) {
            ios_warn_config("config: %s DISABLED", module_names[id]);
            continue;
        }
        ios_warn_config("config: %s ENABLED, MAX_RECORDS = %lld, NAME_EXCLUDE = %s, "
                        "NAME_INCLUDE = %s",
                        module_names[id], (long long)max_records[id],
                        joined(&name_exclude, BIT(id), a, sizeof a),
                        joined(&name_include, BIT(id), b, sizeof b));
    }
}

/* Rank rules: an excluded rank (and not included again) records nothing in any module, and
 * still takes its part in the job's log, as Darshan's does. */
static void apply_rank(int rank) {
    ios_config.mod_disabled = mod_disabled_all_ranks;
    if (in_ranks(&rank_exclude, rank) && !in_ranks(&rank_include, rank))
        ios_config.mod_disabled = ~UINT64_C(0);
    ios_dxt_flags = 0;
    if (!(ios_config.mod_disabled & BIT(IOS_MOD_DXT_POSIX)))
        ios_dxt_flags |= 1 << IOS_DXT_POSIX;
    if (!(ios_config.mod_disabled & BIT(IOS_MOD_DXT_MPIIO)))
        ios_dxt_flags |= 1 << IOS_DXT_MPIIO;
}

void ios_config_set_rank(int rank) {
    apply_rank(rank);
    if (rank == 0 && dump_config && !dumped++)
        dump();
}

void ios_config_read(void) {
    gather_variables();
    defaults();
    const char *file = variable("DARSHAN_CONFIG_PATH");
    if (file && *file)
        read_file(file);
    read_environment();
    ios_config.mem_align_mask = ios_align_mask(ios_config.mem_alignment);
    for (int api = 0; api < IOS_DXT_NAPIS; api++) {
        int64_t n = max_records[api == IOS_DXT_POSIX ? IOS_MOD_DXT_POSIX : IOS_MOD_DXT_MPIIO];
        ios_config.dxt_mem[api] = n ? (size_t)n * DXT_RECORD_UNIT : DXT_DEFAULT_MEM;
    }
    /* DXT is off unless enabled, and enabling wins over disabling, as Darshan decides. */
    mod_disabled_all_ranks = (DXT_BITS | mod_disable) & ~mod_enable;
    ios_config.name_includes = name_include.n > 0;
    read_exclude_dirs();
    apply_rank(0); /* until an MPI job gives the rank */
}

int ios_config_app_excluded(const char *app) {
    return app && matches(&app_exclude, 1, app) && !matches(&app_include, 1, app);
}

int ios_config_refuses(int mod, const char *name) {
    uint64_t bit = BIT(mod);
    if (ios_config.mod_disabled & bit)
        return IOS_REFUSED_BY_RULE;
    /* As Darshan 3.5.0 decides: a name under an excluded directory, or one a NAME_EXCLUDE rule
     * of the module matches, is recorded only if a NAME_INCLUDE rule of the module matches. */
    if (name && (ios_config.name_includes || name_exclude.n) &&
        (ios_under_excluded_dir(name) || matches(&name_exclude, bit, name)) &&
        !matches(&name_include, bit, name))
        return IOS_REFUSED_BY_RULE;
    /* DXT's MAX_RECORDS is its memory (ios_config.dxt_mem); the heatmap's records are fixed */
    if (max_records[mod] && records[mod] >= max_records[mod] &&
        !(bit & (DXT_BITS | BIT(IOS_MOD_HEATMAP))))
        return IOS_REFUSED_FULL;
    return 0;
}

void ios_config_count_record(int mod) { records[mod]++; }

void ios_config_forget_records(void) { memset(records, 0, sizeof records); }
