/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_IDSNAP_H
#define MOAT_IDSNAP_H

/*
 * A batch of records keyed by cgroup id, read from a BPF map in one pass,
 * then sorted once and searched per group: how every per-cgroup map is
 * read each period (histograms, PMU sums).
 */
#include <stddef.h>
#include <linux/types.h>

struct moat_idsnap {
	unsigned char *v;
	size_t n, cap;
	size_t size;		/* of a record */
};

/** moat_idsnap_init() - an empty batch of records of @size bytes. */
void moat_idsnap_init(struct moat_idsnap *s, size_t size);
/** moat_idsnap_clear() - empty it, keeping its memory for the next. */
void moat_idsnap_clear(struct moat_idsnap *s);
void moat_idsnap_free(struct moat_idsnap *s);
/** moat_idsnap_add() - a copy of @rec, for @id.  Return: 0 or -ENOMEM. */
int moat_idsnap_add(struct moat_idsnap *s, __u64 id, const void *rec);
/** moat_idsnap_sort() - by id, once all are in. */
void moat_idsnap_sort(struct moat_idsnap *s);
/** moat_idsnap_find() - @id's record, or NULL (after the sort). */
const void *moat_idsnap_find(const struct moat_idsnap *s, __u64 id);

#endif /* MOAT_IDSNAP_H */
