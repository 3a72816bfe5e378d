// SPDX-License-Identifier: GPL-2.0-only
/*
 * The PMU path (bpf/pmu.bpf.c) on real cgroups, with cpu-clock standing
 * in for the hardware counters this machine lacks: a software event that
 * goes through the same code (libpfm4 encoding, one counting perf event
 * per CPU, bpf_perf_event_read_value() at every switch, charged to the
 * cgroup that ran).  cpu-clock counts nanoseconds, so what each cgroup
 * was charged must match the CPU time its tasks used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include "helpers.h"
#include "peek.h"
#include "pmu_bpf.h"

static struct moat_pmu *pmu;

static void setup(void)
{
	const char *why = tcg_skip_reason(true);

	if (why)
		cr_skip_test("%s", why);
	tcg_lock_cpu();
	cr_assert_eq(tcg_setup(), 0);
}

static void teardown(void)
{
	moat_pmu_close(pmu);
	pmu = NULL;
	tcg_cleanup();
}

TestSuite(pmu_bpf, .init = setup, .fini = teardown, .timeout = 60);

/* ns @pid has run, from /proc/PID/schedstat. */
static long long run_ns(pid_t pid)
{
	char path[64];
	long long ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lld", &ns) != 1)
			ns = -1;
		fclose(f);
	}
	return ns;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

Test(pmu_bpf, cpu_clock_per_cgroup_matches_its_cpu_time)
{
	struct moat_pmu_opts o = { .events = { "cycles", "cpu-clock" } };
	struct moat_pmu_sum a0, b0, a1, b1;
	long long ta0, tb0, ta1, tb1;
	double ca, cb, ra, rb;
	struct tcg a, b;
	pid_t ha, hb;
	int cpu = tcg_pick_cpu();

	cr_assert_eq(moat_pmu_open(&o, &pmu), 0);
	/*
	 * No PMU here: "cycles" does not open and is left out, said once;
	 * on a machine with one it opens and takes slot 0.
	 */
	cr_assert_geq(moat_pmu_nr_events(pmu), 1);
	cr_assert_str_eq(moat_pmu_event(pmu, moat_pmu_nr_events(pmu) - 1),
			 "cpu-clock");
	if (moat_pmu_nr_events(pmu) == 1)
		cr_log_info("no hardware PMU: cycles left out, cpu-clock stands in");

	cr_assert_eq(tcg_create("pmu-a", &a), 0);
	cr_assert_eq(tcg_create("pmu-b", &b), 0);
	ha = tcg_spawn(&a, cpu, work_hog, NULL);
	hb = tcg_spawn(&b, cpu, work_hog, NULL);
	cr_assert(ha > 0 && hb > 0);
	sleep_ms(300);		/* both charged at least once */

	cr_assert_eq(moat_pmu_read(pmu, a.id, &a0), 0, "nothing charged to A");
	cr_assert_eq(moat_pmu_read(pmu, b.id, &b0), 0, "nothing charged to B");
	ta0 = run_ns(ha);
	tb0 = run_ns(hb);
	sleep_ms(1000);
	cr_assert_eq(moat_pmu_read(pmu, a.id, &a1), 0);
	cr_assert_eq(moat_pmu_read(pmu, b.id, &b1), 0);
	ta1 = run_ns(ha);
	tb1 = run_ns(hb);
	tcg_kill(ha);
	tcg_kill(hb);

	{
		size_t ev = moat_pmu_nr_events(pmu) - 1;

		ca = (double)(a1.count[ev] - a0.count[ev]);
		cb = (double)(b1.count[ev] - b0.count[ev]);
	}
	ra = ca / (ta1 - ta0);
	rb = cb / (tb1 - tb0);
	cr_log_info("charged / CPU time: A %.0f / %lld ns (%.3f), B %.0f / %lld ns (%.3f), %llu and %llu slices",
		    ca, ta1 - ta0, ra, cb, tb1 - tb0, rb,
		    (unsigned long long)(a1.charges - a0.charges),
		    (unsigned long long)(b1.charges - b0.charges));
	/*
	 * Within 5%: a slice still running when the counters are read is
	 * charged only at its switch, and the two reads are not atomic with
	 * the schedstat reads.  Each hog ran some 0.5 s.
	 */
	cr_expect(ra > 0.95 && ra < 1.05, "A: charged %.3f of its CPU time", ra);
	cr_expect(rb > 0.95 && rb < 1.05, "B: charged %.3f of its CPU time", rb);
	cr_expect_gt(ta1 - ta0, 300000000LL, "A ran only %lld ns", ta1 - ta0);
	cr_expect_eq(moat_pmu_drops(pmu), 0);
}

Test(pmu_bpf, no_event_that_opens_is_an_error_said_once)
{
	struct moat_pmu_opts o = { .events = { "no-such-event-xyz" } };

	cr_assert_eq(moat_pmu_open(&o, &pmu), -ENOENT);
	cr_assert_null(pmu);
}

/*
 * A CPU's copy taken while that CPU charged the value (seq != seq_end,
 * bpf/pmu.h) is never summed: the read tries again, and says -EAGAIN
 * when every try met one.  Consistent copies are summed over the CPUs.
 * Userspace writes the per-CPU map here, as the program would leave it.
 */
Test(pmu_bpf, a_copy_taken_during_a_charge_is_read_again_not_summed)
{
	int ncpus = libbpf_num_possible_cpus(), fd, i;
	struct moat_pmu_sum *v, *buf, out;
	__u64 key = 42;

	cr_assert_gt(ncpus, 0);
	fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_HASH, "moat_test_sums", sizeof(key),
			    sizeof(*v), 4, NULL);
	cr_assert_geq(fd, 0, "create a per-CPU hash: %s", strerror(errno));
	v = calloc(ncpus, sizeof(*v));
	buf = calloc(ncpus, sizeof(*buf));
	cr_assert(v && buf);
	for (i = 0; i < ncpus; i++) {
		v[i].seq = v[i].seq_end = 7;
		v[i].count[0] = 1000 + i;
		v[i].count[1] = 2000;
		v[i].charges = 3;
	}
	cr_assert_eq(bpf_map_update_elem(fd, &key, v, BPF_ANY), 0);
	cr_assert_eq(moat_pmu_read_map(fd, ncpus, key, buf, &out), 0);
	cr_expect_eq(out.count[0], 1000ULL * ncpus + ncpus * (ncpus - 1) / 2);
	cr_expect_eq(out.count[1], 2000ULL * ncpus);
	cr_expect_eq(out.charges, 3ULL * ncpus);

	/* the last CPU's copy mid-charge: seq_end written, seq not yet */
	v[ncpus - 1].seq_end = 8;
	v[ncpus - 1].count[0] += 500;
	cr_assert_eq(bpf_map_update_elem(fd, &key, v, BPF_ANY), 0);
	cr_expect_eq(moat_pmu_read_map(fd, ncpus, key, buf, &out), -EAGAIN,
		     "a torn copy was summed: count[0] %llu",
		     (unsigned long long)out.count[0]);
	/* the charge done */
	v[ncpus - 1].seq = 8;
	cr_assert_eq(bpf_map_update_elem(fd, &key, v, BPF_ANY), 0);
	cr_expect_eq(moat_pmu_read_map(fd, ncpus, key, buf, &out), 0);
	cr_expect_eq(out.count[0], 1000ULL * ncpus + ncpus * (ncpus - 1) / 2 + 500);

	key = 43;
	cr_expect_eq(moat_pmu_read_map(fd, ncpus, key, buf, &out), -ENOENT);
	close(fd);
	free(v);
	free(buf);
}
