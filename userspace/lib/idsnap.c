// SPDX-License-Identifier: GPL-2.0-only
/* Records keyed by cgroup id, batched, sorted, searched (idsnap.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "idsnap.h"

/* Each element: the id, then the record. */
#define ELEM(s)		(sizeof(__u64) + (s)->size)

void moat_idsnap_init(struct moat_idsnap *s, size_t size)
{
	memset(s, 0, sizeof(*s));
	s->size = size;
}

void moat_idsnap_clear(struct moat_idsnap *s)
{
	s->n = 0;
}

void moat_idsnap_free(struct moat_idsnap *s)
{
	free(s->v);
	moat_idsnap_init(s, s->size);
}

int moat_idsnap_add(struct moat_idsnap *s, __u64 id, const void *rec)
{
	unsigned char *e;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		void *v = realloc(s->v, cap * ELEM(s));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	e = s->v + s->n++ * ELEM(s);
	memcpy(e, &id, sizeof(id));
	memcpy(e + sizeof(id), rec, s->size);
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	__u64 x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return x < y ? -1 : x > y;
}

void moat_idsnap_sort(struct moat_idsnap *s)
{
	if (s->n)	/* (qsort() of NULL is undefined, even of nothing) */
		qsort(s->v, s->n, ELEM(s), cmp_id);
}

const void *moat_idsnap_find(const struct moat_idsnap *s, __u64 id)
{
	const unsigned char *e;

	if (!s->n)
		return NULL;
	e = bsearch(&id, s->v, s->n, ELEM(s), cmp_id);
	return e ? e + sizeof(__u64) : NULL;
}
