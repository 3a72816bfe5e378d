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
		tcg_skip(teardown, "no cgroup iterator here: %s", why);
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
		tcg_skip(teardown, "no cgroup iterator here: %s", why);
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
		tcg_skip(teardown, "no cgroup iterator here: %s", why);
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

/* The "some ... total=" of pressure file @dir/@file, in us; -1 if none. */
static long long psi_total(const char *dir, const char *file)
{
	char path[PATH_MAX + 64], line[256];
	unsigned long long v;
	const char *t;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	t = fgets(line, sizeof(line), f) && !strncmp(line, "some ", 5) ?
	    strstr(line, " total=") : NULL;
	fclose(f);
	return t && sscanf(t, " total=%llu", &v) == 1 ? (long long)v : -1;
}

/* Whether this kernel's kallsyms lists data: the per-CPU runqueues. */
static bool kallsyms_lists_data(void)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/kallsyms", "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strlen(line) > 11 && !strcmp(line + strlen(line) - 11, " runqueues\n");
	if (f)
		fclose(f);
	return found;
}

enum { PSI_CPU_G, PSI_MEM_G, PSI_IDLE_G, PSI_NR_G };

/* The walk's records of the groups @g, copied: the next read overwrites. */
static void take(struct moat_cgstat_walk *w, const struct tcg *g,
		 struct moat_cgstat *out)
{
	const struct moat_cgstat *r;
	int i;

	cr_assert_gt(moat_cgstat_walk_read(w), 0);
	for (i = 0; i < PSI_NR_G; i++) {
		r = find(w, g[i].dir);
		cr_assert_not_null(r, "%s: no record", g[i].path);
		cr_assert(r->has & MOAT_CGSTAT_PSI, "%s: no pressure sums", g[i].path);
		out[i] = *r;
	}
}

/*
 * Pressure's sums (cgstat.bpf.c: "Pressure") say where cpu.pressure's and
 * memory.pressure's totals may have moved since a walk.  A group whose
 * two hogs share a CPU and one whose working set is three times its
 * memory.high stall while they run: the walk sees the stall in force, and
 * after they stop their sums differ from those of the walk before, as do
 * their files' totals.  Then, at rest, two walks 300 ms apart give the
 * same sums, no stall in force, and the files the same totals to the us;
 * an idle group's sums never move.
 */
Test(cgstat_bpf, pressure_sums_move_where_and_only_where_the_totals_can)
{
	static struct work_memory mem = { 48, 10 };
	static const char *const name[PSI_NR_G] = { "psi-cpu", "psi-mem", "psi-idle" };
	struct moat_cgstat before[PSI_NR_G], during[PSI_NR_G], rest[PSI_NR_G], later[PSI_NR_G];
	long long t0[PSI_NR_G][2], t1[PSI_NR_G][2], t2[PSI_NR_G][2];
	static const char *const file[2] = { "cpu.pressure", "memory.pressure" };
	struct moat_cgstat_walk *w;
	struct tcg g[PSI_NR_G];
	pid_t pid[3];
	char why[256];
	int i, k, err, cpu = tcg_pick_cpu();

	if (!tcg_hierarchy()->v2)
		tcg_skip(teardown, "cgroup v1: no pressure files per cgroup (make vmtest runs this)");
	err = moat_cgstat_load(true, 0, &prog, why, sizeof(why));
	if (err == -EOPNOTSUPP)
		tcg_skip(teardown, "no cgroup iterator here: %s", why);
	cr_assert_eq(err, 0, "load: %s", strerror(-err));
	if (!moat_cgstat_has_psi(prog)) {
		cr_assert_not(kallsyms_lists_data(),
			      "kallsyms lists the runqueues, but the program with pressure's sums did not load");
		tcg_skip(teardown, "kallsyms lists no data (CONFIG_KALLSYMS_ALL off): no pressure sums");
	}
	for (i = 0; i < PSI_NR_G; i++)
		cr_assert_eq(tcg_create(name[i], &g[i]), 0);
	cr_assert_eq(tcg_write(&g[PSI_MEM_G], "memory.high", "16M"), 0);
	cr_assert_eq(moat_cgstat_walk_new(prog, tcg_prefix_dir(), &w), 0);

	take(w, g, before);
	for (i = 0; i < PSI_NR_G; i++)
		for (k = 0; k < 2; k++)
			t0[i][k] = psi_total(g[i].dir, file[k]);
	pid[0] = tcg_spawn(&g[PSI_CPU_G], cpu, work_hog, NULL);
	pid[1] = tcg_spawn(&g[PSI_CPU_G], cpu, work_hog, NULL);
	pid[2] = tcg_spawn(&g[PSI_MEM_G], cpu, work_memory, &mem);
	cr_assert(pid[0] > 0 && pid[1] > 0 && pid[2] > 0);
	usleep(800 * 1000);
	take(w, g, during);
	for (i = 0; i < 3; i++)
		tcg_kill(pid[i]);
	cr_log_info("while they ran: %s 0x%x, %s 0x%x, %s 0x%x", name[0], during[0].has,
		    name[1], during[1].has, name[2], during[2].has);
	cr_expect(during[PSI_CPU_G].has & MOAT_CGSTAT_CPU_STALLING,
		  "two hogs on one CPU, and no CPU stall in force");
	cr_expect_not(during[PSI_IDLE_G].has &
		      (MOAT_CGSTAT_CPU_STALLING | MOAT_CGSTAT_MEMORY_STALLING),
		      "a stall in force in a group with no task");

	usleep(100 * 1000);
	take(w, g, rest);
	for (i = 0; i < PSI_NR_G; i++)
		for (k = 0; k < 2; k++)
			t1[i][k] = psi_total(g[i].dir, file[k]);
	usleep(300 * 1000);
	take(w, g, later);
	for (i = 0; i < PSI_NR_G; i++)
		for (k = 0; k < 2; k++)
			t2[i][k] = psi_total(g[i].dir, file[k]);

	for (i = 0; i < PSI_NR_G; i++) {
		cr_log_info("%s: cpu some total %lld -> %lld -> %lld us, memory %lld -> %lld -> %lld us",
			    name[i], t0[i][0], t1[i][0], t2[i][0], t0[i][1], t1[i][1], t2[i][1]);
		cr_expect_not(rest[i].has & (MOAT_CGSTAT_CPU_STALLING | MOAT_CGSTAT_MEMORY_STALLING),
			      "%s: a stall in force with no task", name[i]);
		cr_expect_eq(later[i].cpu_psi_sig, rest[i].cpu_psi_sig, "%s: cpu sums moved at rest",
			     name[i]);
		cr_expect_eq(later[i].memory_psi_sig, rest[i].memory_psi_sig,
			     "%s: memory sums moved at rest", name[i]);
		for (k = 0; k < 2; k++) {
			cr_assert_geq(t1[i][k], 0, "%s/%s: no total", g[i].path, file[k]);
			cr_expect_eq(t2[i][k], t1[i][k], "%s/%s moved at rest: %lld -> %lld us",
				     g[i].path, file[k], t1[i][k], t2[i][k]);
		}
	}
	/* what stalled moved its sum and its file; what did not, neither */
	cr_expect_gt(t1[PSI_CPU_G][0], t0[PSI_CPU_G][0], "the hogs' CPU stall is not in the file");
	cr_expect_neq(rest[PSI_CPU_G].cpu_psi_sig, before[PSI_CPU_G].cpu_psi_sig,
		      "the hogs' CPU stall did not move the sum");
	cr_expect_gt(t1[PSI_MEM_G][1], t0[PSI_MEM_G][1], "the working set's memory stall is not in the file");
	cr_expect_neq(rest[PSI_MEM_G].memory_psi_sig, before[PSI_MEM_G].memory_psi_sig,
		      "the memory stall did not move the sum");
	cr_expect_eq(rest[PSI_IDLE_G].cpu_psi_sig, before[PSI_IDLE_G].cpu_psi_sig);
	cr_expect_eq(rest[PSI_IDLE_G].memory_psi_sig, before[PSI_IDLE_G].memory_psi_sig);
	cr_expect_eq(t1[PSI_IDLE_G][0], t0[PSI_IDLE_G][0]);
	cr_expect_eq(t1[PSI_IDLE_G][1], t0[PSI_IDLE_G][1]);
	moat_cgstat_walk_free(w);
}
