// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's CPU lists (/sys/devices/system/cpu/online): each form the
 * kernel prints is counted, and anything else is refused, not guessed.
 */
#include <errno.h>
#include <criterion/criterion.h>
#include "cpulist.h"

Test(cpulist, every_form_the_kernel_prints_is_counted)
{
	static const struct {
		const char *s;
		long n;
	} ok[] = {
		{ "0\n", 1 },		/* one CPU */
		{ "0-1\n", 2 },
		{ "0-3,6\n", 5 },	/* cputopology.rst's example */
		{ "0,2,4,6\n", 4 },	/* every other one offline */
		{ "0-3,8-11\n", 8 },	/* two ranges */
		{ "1-2,5,7-9", 6 },	/* CPU 0 offline, no newline */
		{ "0-4095\n", 4096 },
		{ "3-3\n", 1 },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_expect_eq(moat_cpulist_count(ok[i].s), ok[i].n, "\"%s\": %ld",
			     ok[i].s, moat_cpulist_count(ok[i].s));
}

Test(cpulist, anything_else_is_refused)
{
	static const char *const bad[] = {
		"", "\n", "-1\n", "+1\n", " 0\n", "0 \n", "0\n\n", "1-0\n",
		"0-\n", "0,\n", "0-3,\n", ",0\n", "0--3\n", "0-3:2/4\n",
		"0x1\n", "a\n", "99999999999\n", "0-99999999999\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(moat_cpulist_count(bad[i]), -EINVAL, "\"%s\" gave %ld",
			     bad[i], moat_cpulist_count(bad[i]));
}
