// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpf/cgstat.bpf.c against the files it stands in for: groups that ran a
 * hog, one of them throttled, then stopped, so that their counters rest;
 * one read of the iterator must give each group's numbers as its files
 * give them: cpu.stat's nr_throttled and throttled_time (v1) or
 * throttled_usec and usage_usec (v2), and memory.current (v2).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>
#include "cgstat_bpf.h"
#include "helpers.h"
#include "log.h"

static struct moat_cgstat_prog *prog;

static void setup(void)
{
	const char *why = tcg_skip_reason(true);

	if (why)
		cr_skip_test("%s", why);
	tcg_lock_cpu();
	moat_log_init("selftest", MOAT_LOG_INFO);
	cr_assert_eq(tcg_setup(), 0);
}

static void teardown(void)
{
	moat_cgstat_unload(prog);
	prog = NULL;
	tcg_cleanup();
}

TestSuite(cgstat_bpf, .init = setup, .fini = teardown, .timeout = 60);

/* The number after "@key " in cgroup file @dir/@file; -1 when absent. */
static long long stat_key(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX + 64], name[64];
	unsigned long long v;
	long long found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %llu", name, &v) == 2)
		if (!strcmp(name, key))
			found = v;
	fclose(f);
	return found;
}

static long long file_number(const char *dir, const char *file)
{
	char path[PATH_MAX + 64];
	unsigned long long v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu", &v);
	fclose(f);
	return n == 1 ? (long long)v : -1;
}

static const struct moat_cgstat *find(struct moat_cgstat_walk *w, const char *dir)
{
	struct stat st;

	cr_assert_eq(stat(dir, &st), 0, "%s", dir);
	return moat_cgstat_walk_find(w, st.st_ino);
}

Test(cgstat_bpf, one_read_gives_what_each_groups_files_say)
{
	bool v2 = tcg_hierarchy()->v2;
	const struct moat_cgstat *r;
	struct moat_cgstat_walk *w;
	struct tcg g[3];
	char why[256];
	pid_t hog[2];
	int i, err, cpu = tcg_pick_cpu();

	err = moat_cgstat_load(v2, 0, &prog, why, sizeof(why));
	if (err == -EOPNOTSUPP) {
		moat_log_libbpf_tail();		/* the verifier's word */
		cr_skip_test("no cgroup iterator here: %s", why);
	}
	cr_assert_eq(err, 0, "load: %s", strerror(-err));

	cr_assert_eq(tcg_create("cgstat-a", &g[0]), 0);
	cr_assert_eq(tcg_create("cgstat-b", &g[1]), 0);
	cr_assert_eq(tcg_create("cgstat-idle", &g[2]), 0);
	cr_assert_eq(tcg_write(&g[1], v2 ? "cpu.max" : "cpu.cfs_quota_us",
			       v2 ? "5000 100000" : "5000"), 0);
	for (i = 0; i < 2; i++) {
		hog[i] = tcg_spawn(&g[i], cpu, work_hog, NULL);
		cr_assert_gt(hog[i], 0);
	}
	usleep(400 * 1000);
	for (i = 0; i < 2; i++)
		tcg_kill(hog[i]);

	cr_assert_eq(moat_cgstat_walk_new(prog, tcg_prefix_dir(), &w), 0);
	cr_assert_geq(moat_cgstat_walk_read(w), 4, "the prefix and its three groups");
	for (i = 0; i < 3; i++) {
		long long thr = stat_key(g[i].dir, "cpu.stat", "nr_throttled");

		r = find(w, g[i].dir);
		cr_assert_not_null(r, "%s: no record", g[i].path);
		cr_assert(r->has & MOAT_CGSTAT_THROTTLE, "%s: no throttling counters", g[i].path);
		cr_expect_eq((long long)r->nr_throttled, thr, "%s: nr_throttled %u, cpu.stat %lld",
			     g[i].path, r->nr_throttled, thr);
		if (!v2) {
			cr_expect_eq((long long)r->throttled_ns,
				     stat_key(g[i].dir, "cpu.stat", "throttled_time"), "%s", g[i].path);
			cr_expect_not(r->has & (MOAT_CGSTAT_USAGE | MOAT_CGSTAT_MEMORY),
				      "v1: usage and memory come from their files");
			continue;
		}
		cr_expect_eq((long long)(r->throttled_ns / 1000),
			     stat_key(g[i].dir, "cpu.stat", "throttled_usec"), "%s", g[i].path);
		cr_assert(r->has & MOAT_CGSTAT_USAGE, "%s: no usage", g[i].path);
		cr_expect_eq((long long)(r->usage_ns / 1000),
			     stat_key(g[i].dir, "cpu.stat", "usage_usec"),
			     "%s: usage %llu ns, cpu.stat usage_usec %lld", g[i].path,
			     (unsigned long long)r->usage_ns,
			     stat_key(g[i].dir, "cpu.stat", "usage_usec"));
		if (r->has & MOAT_CGSTAT_MEMORY) {
			long long a, b;

			/*
			 * At rest, but a memcg's per-CPU charge stock may be
			 * drained between two reads: compare where the file
			 * held still around the walk.
			 */
			do {
				a = file_number(g[i].dir, "memory.current");
				moat_cgstat_walk_read(w);
				r = find(w, g[i].dir);
				b = file_number(g[i].dir, "memory.current");
			} while (a != b);
			cr_expect_eq((long long)r->memory_bytes, a,
				     "%s: memory %llu, memory.current %lld", g[i].path,
				     (unsigned long long)r->memory_bytes, a);
		}
	}
	cr_expect_gt(find(w, g[1].dir)->nr_throttled, 0,
		     "the group with a 5%% quota was never throttled");
	if (v2)
		cr_expect_gt(find(w, g[0].dir)->usage_ns, 0, "the hog's group used no CPU");
	moat_cgstat_walk_free(w);
}

/*
 * bpf_seq_read() fills at most 8 pages a read(), and the cgroup iterator
 * cannot resume a walk in a second read(): written to the seq_file, a walk
 * ended at 682 records with -EOPNOTSUPP.  A thousand cgroups must all come
 * back from one walk, each with its record.
 */
Test(cgstat_bpf, a_walk_reads_more_cgroups_than_a_read_of_the_seq_file_holds)
{
	bool v2 = tcg_hierarchy()->v2;
	struct moat_cgstat_walk *w;
	char why[256], dir[PATH_MAX];
	int i, n, err, many = 1000;

	err = moat_cgstat_load(v2, 0, &prog, why, sizeof(why));
	if (err == -EOPNOTSUPP)
		cr_skip_test("no cgroup iterator here: %s", why);
	cr_assert_eq(err, 0, "load: %s", strerror(-err));
	cr_assert_eq(tcg_create_many("many", many), 0);

	cr_assert_eq(moat_cgstat_walk_new(prog, tcg_prefix_dir(), &w), 0);
	n = moat_cgstat_walk_read(w);
	cr_assert_eq(n, many + 1, "the prefix and its %d groups: read %d (%s)", many, n,
		     n < 0 ? strerror(-n) : "records");
	cr_expect_eq(moat_cgstat_walk_found(w), (size_t)many + 1);
	for (i = 0; i < many; i++) {
		snprintf(dir, sizeof(dir), "%s/many-%d", tcg_prefix_dir(), i);
		cr_assert_not_null(find(w, dir), "%s: no record", dir);
	}
	cr_expect_not_null(find(w, tcg_prefix_dir()), "the walk's root: no record");
	moat_cgstat_walk_free(w);
}

/* More cgroups than room: an error that says how many, not a part. */
Test(cgstat_bpf, a_walk_with_more_cgroups_than_room_fails_whole)
{
	bool v2 = tcg_hierarchy()->v2;
	struct moat_cgstat_walk *w;
	char why[256];
	int n, err;

	err = moat_cgstat_load(v2, 2, &prog, why, sizeof(why));
	if (err == -EOPNOTSUPP)
		cr_skip_test("no cgroup iterator here: %s", why);
	cr_assert_eq(err, 0, "load: %s", strerror(-err));
	cr_assert_eq(moat_cgstat_room(prog), 2);
	cr_assert_eq(tcg_create_many("few", 3), 0);

	cr_assert_eq(moat_cgstat_walk_new(prog, tcg_prefix_dir(), &w), 0);
	n = moat_cgstat_walk_read(w);
	cr_expect_eq(n, -E2BIG, "read: %d", n);
	cr_expect_eq(moat_cgstat_walk_found(w), 4, "the prefix and its three groups");
	cr_expect_null(moat_cgstat_walk_find(w, 1), "records of a failed read");
	moat_cgstat_walk_free(w);
}
