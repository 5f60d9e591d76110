/* The table of modules (modules.def) that the log writer, the merge tool and the memory-mapped
 * log go through: one place says which modules there are, in which order, and what a log says
 * of each; and the size of a record, fixed or its own. */
#include "logwrite.h"

const struct ios_module ios_modules[IOS_NMODULES] = {
#define X(NAME, id_, version_, rec_size_, collect_, reset_, reducer_, in_mmap_)                    \
    [IOS_M_##NAME] = {.name = #NAME,                                                               \
                      .id = id_,                                                                   \
                      .version = version_,                                                         \
                      .rec_size = rec_size_,                                                       \
                      .reducer = reducer_,                                                         \
                      .in_mmap = in_mmap_},
#include "modules.def"
#undef X
};

size_t ios_lustre_size(int64_t comps, int64_t stripes) {
    return sizeof(struct ios_lustre_record_head) +
           (size_t)comps * sizeof(struct ios_lustre_component) + (size_t)stripes * sizeof(int64_t);
}

size_t ios_lustre_record_size(const void *rec) {
    const struct ios_lustre_record_head *head = rec;
    return ios_lustre_size(head->num_comps, head->num_stripes);
}

size_t ios_heatmap_record_size(int64_t nbins) {
    return sizeof(struct ios_heatmap_record_head) + 2 * (size_t)nbins * sizeof(int64_t);
}

size_t ios_dxt_record_size(const void *rec) {
    const struct ios_dxt_record_head *head = rec;
    return sizeof *head +
           (size_t)(head->write_count + head->read_count) * sizeof(struct ios_dxt_segment);
}

size_t ios_record_size(const struct ios_record_set *set, const void *rec) {
    if (set->rec_size)
        return set->rec_size;
    if (set->mod == IOS_MOD_LUSTRE)
        return ios_lustre_record_size(rec);
    if (set->mod == IOS_MOD_DXT_POSIX || set->mod == IOS_MOD_DXT_MPIIO)
        return ios_dxt_record_size(rec);
    return ios_heatmap_record_size(((const struct ios_heatmap_record_head *)rec)->nbins);
}
