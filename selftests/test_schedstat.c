// SPDX-License-Identifier: GPL-2.0-only
/*
 * The run-queue fallback's reads (lib/schedstat.c): /proc/<tid>/schedstat
 * and the start time in /proc/<tid>/stat, as proc(5) documents them, and
 * this kernel's own files for this process.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <criterion/criterion.h>
#include "schedstat.h"

/* proc(5): starttime is field 22; a comm of spaces and parentheses */
static const char stat_tail[] =
	" S 1 2 3 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 424242 1000 200 "
	"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

Test(schedstat, the_fields_proc5_documents_are_read)
{
	static const char *const comms[] = {
		"(moatd)", "(a b)", "(x) S 9 9 (y))", "()", "((sd-pam))",
	};
	struct moat_ts_task t;
	char stat[512];

	for (size_t i = 0; i < sizeof(comms) / sizeof(comms[0]); i++) {
		snprintf(stat, sizeof(stat), "1234 %s%s", comms[i], stat_tail);
		memset(&t, 0, sizeof(t));
		cr_assert_eq(moat_schedstat_parse("5000 123456789 42\n", stat, &t), 0,
			     "%s", stat);
		cr_expect_eq(t.delay_ns, 123456789ULL, "%s", comms[i]);
		cr_expect_eq(t.count, 42ULL, "%s", comms[i]);
		cr_expect_eq(t.start, 424242ULL, "%s", comms[i]);
	}
}

Test(schedstat, anything_else_is_refused_and_leaves_the_task_as_it_was)
{
	static const char *const scheds[] = { "", "5000 1\n", "a b c\n", "0 0\n" };
	static const char *const stats[] = {
		"", "1234 (x)\n", "1234 x S 1 2 3\n",
		"1234 (x) S 1 2 3 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0\n",
		"1234 (x) S 1 2 3 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 -5 1\n",
		"1234 (x) S 1 2 3 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 12x 1\n",
	};
	struct moat_ts_task t = { .tid = 7, .start = 1, .count = 2, .delay_ns = 3 };
	char ok[512];

	snprintf(ok, sizeof(ok), "1234 (x)%s", stat_tail);
	for (size_t i = 0; i < sizeof(scheds) / sizeof(scheds[0]); i++)
		cr_expect_eq(moat_schedstat_parse(scheds[i], ok, &t), -EINVAL,
			     "schedstat \"%s\"", scheds[i]);
	for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++)
		cr_expect_eq(moat_schedstat_parse("1 2 3\n", stats[i], &t), -EINVAL,
			     "stat \"%s\"", stats[i]);
	cr_expect(t.tid == 7 && t.start == 1 && t.count == 2 && t.delay_ns == 3);
}

static void *spin_a_little(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	while (n < 10000000)
		n++;
	return NULL;
}

/*
 * This kernel's own files: a thread that ran has run at least once, and
 * its counters only grow; a tid that is gone is said to be.
 */
Test(schedstat, this_kernels_files_for_this_process)
{
	struct moat_schedstat *ss;
	struct moat_ts_task a, b;
	pid_t tid = syscall(SYS_gettid);
	pthread_t th;

	cr_assert_eq(moat_schedstat_open(&ss), 0);
	cr_assert_eq(moat_schedstat_task(ss, tid, &a), 0);
	cr_expect_eq(a.tid, (__u32)tid);
	cr_expect_gt(a.count, 0);
	cr_assert_eq(pthread_create(&th, NULL, spin_a_little, NULL), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);	/* this thread slept */
	cr_assert_eq(moat_schedstat_task(ss, tid, &b), 0);
	cr_expect_eq(b.start, a.start, "the same thread, another start");
	cr_expect_gt(b.count, a.count, "joined a thread, and never ran again");
	cr_expect_geq(b.delay_ns, a.delay_ns);
	cr_expect_eq(moat_schedstat_task(ss, 0x3ffffff0, &b), -ESRCH);
	moat_schedstat_close(ss);
}
