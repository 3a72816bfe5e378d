// SPDX-License-Identifier: GPL-2.0-only
/* A batch of records by cgroup id: what comes back is what went in. */
#include <criterion/criterion.h>
#include "idsnap.h"

struct rec {
	double a;
	char tag[3];
};

Test(idsnap, records_are_found_by_id_after_the_sort)
{
	static const __u64 ids[] = { 900, 7, 4096, 12, 1ull << 40 };
	struct moat_idsnap s;
	const struct rec *r;
	unsigned int i;

	moat_idsnap_init(&s, sizeof(struct rec));
	cr_expect_null(moat_idsnap_find(&s, 7), "found in an empty batch");
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct rec in = { .a = ids[i] / 2.0, .tag = { (char)('a' + i), 0 } };

		cr_assert_eq(moat_idsnap_add(&s, ids[i], &in), 0);
	}
	moat_idsnap_sort(&s);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		r = moat_idsnap_find(&s, ids[i]);
		cr_assert_not_null(r, "id %llu", (unsigned long long)ids[i]);
		cr_expect_eq(r->a, ids[i] / 2.0);
		cr_expect_eq(r->tag[0], (char)('a' + i));
	}
	cr_expect_null(moat_idsnap_find(&s, 8));
	moat_idsnap_clear(&s);
	cr_expect_null(moat_idsnap_find(&s, 7), "found after a clear");
	/* past the first allocation: 256 records */
	for (i = 0; i < 1000; i++) {
		struct rec in = { .a = i };

		cr_assert_eq(moat_idsnap_add(&s, 5000 - i, &in), 0);
	}
	moat_idsnap_sort(&s);
	r = moat_idsnap_find(&s, 4500);
	cr_assert_not_null(r);
	cr_expect_eq(r->a, 500);
	moat_idsnap_free(&s);
}
