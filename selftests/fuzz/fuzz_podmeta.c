// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the API server sends, or whoever answers at its address: a watch
 * event line, a pod, a pod list.  What parses has fields that fit, and a
 * class that is one.
 */
#include "fuzz.h"
#include "group.h"
#include "podmeta.h"

static void check_pod(const struct moat_pod_meta *p)
{
	size_t i;

	fuzz_check(memchr(p->uid, 0, sizeof(p->uid)) && p->uid[0]);
	fuzz_check(memchr(p->ns, 0, sizeof(p->ns)) && p->ns[0]);
	fuzz_check(memchr(p->name, 0, sizeof(p->name)) && p->name[0]);
	fuzz_check(memchr(p->priority_class, 0, sizeof(p->priority_class)));
	fuzz_check(p->label_class >= MOAT_POD_LABEL_BAD && p->label_class <= MOAT_CLASS_BE);
	fuzz_check(p->nr_containers <= MOAT_POD_CONTAINERS);
	/* no limit, or one a quota can be made of: never 0 nor negative */
	fuzz_check(p->cpu_limit_m == -1 || p->cpu_limit_m > 0);
	for (i = 0; i < p->nr_containers; i++) {
		fuzz_check(p->c[i].id[0] && p->c[i].name[0]);
		fuzz_check(p->c[i].cpu_limit_m == -1 ||
			   (p->c[i].cpu_limit_m > 0 && p->c[i].cpu_limit_m <= MOAT_POD_CPU_MAX_M));
	}
}

static int counted(const struct moat_pod_meta *p, void *ctx)
{
	check_pod(p);
	(*(size_t *)ctx)++;
	return 0;
}

/* A list whole and as it arrives, in chunks of 1 to 13 bytes: the same answer. */
static void list_in_chunks(const char *s, size_t size)
{
	char rv[MOAT_POD_RV_MAX], cont[256], why[256], rv2[MOAT_POD_RV_MAX], cont2[256];
	size_t bad, bad2, n = 0, n2 = 0, at, k;
	struct moat_pod_list_stream *ls;
	int err, err2, fed = 0;

	err = moat_pod_list_parse(s, size, counted, &n, rv, cont, sizeof(cont), &bad, why,
				  sizeof(why));
	ls = moat_pod_list_stream_new(size, counted, &n2);
	if (!ls)
		return;
	for (at = 0; at < size && !fed; at += k) {
		k = 1 + (at * 7 + size) % 13;
		if (k > size - at)
			k = size - at;
		fed = moat_pod_list_stream_feed(ls, s + at, k);
	}
	err2 = moat_pod_list_stream_end(ls, rv2, cont2, sizeof(cont2), &bad2, why,
					sizeof(why));
	moat_pod_list_stream_free(ls);
	fuzz_check(!err == !err2);
	if (!err)
		fuzz_check(n == n2 && bad == bad2 && !strcmp(rv, rv2) && !strcmp(cont, cont2));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_watch_event ev;
	struct moat_pod_meta p;
	char rv[MOAT_POD_RV_MAX], why[256];
	const char *s = (const char *)data;

	if (!moat_watch_event_parse(s, size, &ev, why, sizeof(why))) {
		fuzz_check(ev.type <= MOAT_WATCH_ERROR);
		if (ev.type <= MOAT_WATCH_DELETED)
			check_pod(&ev.pod);
	}
	if (!moat_pod_meta_parse(s, size, &p, rv, why, sizeof(why)))
		check_pod(&p);
	list_in_chunks(s, size);
	/* the input as a quantity: what parses is in millicores, in range */
	if (size < 64 && !memchr(data, 0, size)) {
		char q[64];
		long long m = -1;

		memcpy(q, data, size);
		q[size] = '\0';
		if (!moat_cpu_quantity_m(q, &m))
			fuzz_check(m >= 0 && m <= MOAT_POD_CPU_MAX_M);
	}
	return 0;
}
