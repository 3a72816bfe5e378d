// SPDX-License-Identifier: GPL-2.0-only
/*
 * The real rqlat programs on the running kernel, against a contention we
 * make: a CPU hog in cgroup A and a periodic server in cgroup B (1.5 ms
 * of work, then 1 ms of sleep), both pinned to one CPU, the last one; the
 * test itself keeps off that CPU so it adds no waits of its own.  B's
 * waits must rise while A runs, be charged to A, and fall again when A
 * stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/sched.h>	/* clone3()'s struct clone_args */
#include <criterion/criterion.h>
#include "cgroup.h"
#include "helpers.h"
#include "hist.h"
#include "log.h"
#include "cgroup_events.h"	/* MOAT_CGROUP_TRACK_DEPTH */
#include "cgroup_events_bpf.h"
#include "peek.h"
#include "rqlat_bpf.h"

/*
 * The server needs ~40% of the CPU: under EEVDF, a task that needs much
 * less keeps enough lag to preempt the hog on most wake-ups, so its p99
 * would swing with placement luck instead of showing the contention.
 */
#define SLEEPS_PER_PHASE 600
#define WORK_US 1500

static struct moat_rqlat *rq;
static int test_cpu;

static void setup(void)
{
	const char *why = tcg_skip_reason(true);

	if (why)
		cr_skip_test("%s", why);
	/*
	 * Two of these tests on one CPU at once measure each other: hold a
	 * lock, so that a runner with --jobs > 1 runs them one at a time.
	 */
	tcg_lock_cpu();
	moat_log_init("selftest", MOAT_LOG_INFO);
	cr_assert_eq(tcg_setup(), 0, "create test cgroups under the cpu hierarchy");
	test_cpu = tcg_pick_cpu();
}

static void teardown(void)
{
	moat_rqlat_close(rq);
	rq = NULL;
	tcg_cleanup();
}

TestSuite(rqlat_bpf, .init = setup, .fini = teardown, .timeout = 120);

/* The waits of @victim charged so far: to @culprit, to <idle>, in all. */
struct blame_sums {
	__u64 victim, culprit;
	__u64 to_culprit_ns, idle_ns, total_ns;
	__u64 to_culprit;	/* waits */
};

static int sum_blame(const struct moat_blame_key *k,
		     const struct moat_blame_val *v, void *ctx)
{
	struct blame_sums *b = ctx;

	if (k->victim != b->victim)
		return 0;
	b->total_ns += v->wait_ns;
	if (k->culprit == b->culprit) {
		b->to_culprit_ns += v->wait_ns;
		b->to_culprit += v->count;
	}
	if (k->culprit == MOAT_CULPRIT_IDLE)
		b->idle_ns += v->wait_ns;
	return 0;
}

static void read_blame(__u64 victim, __u64 culprit, struct blame_sums *b)
{
	*b = (struct blame_sums){ .victim = victim, .culprit = culprit };
	cr_assert_eq(moat_rqlat_for_each_blame(rq, sum_blame, b), 0);
}

/* @after - @before, field by field. */
static void blame_delta(struct blame_sums *d, const struct blame_sums *after,
			const struct blame_sums *before)
{
	*d = *after;
	d->to_culprit_ns -= before->to_culprit_ns;
	d->to_culprit -= before->to_culprit;
	d->idle_ns -= before->idle_ns;
	d->total_ns -= before->total_ns;
}

static void read_hist(__u64 id, struct moat_rqlat_hist *h)
{
	int err = moat_rqlat_read_hist(rq, id, h);

	if (err == -ENOENT)
		memset(h, 0, sizeof(*h));
	else
		cr_assert_eq(err, 0, "read histogram of cgroup %llu: %s",
			     (unsigned long long)id, strerror(-err));
}

/*
 * The server: a process in cgroup B pinned to the test CPU that runs
 * work_periodic() once each time its gate opens, says so on a pipe, and
 * sleeps on the gate between, where the test reads what was counted.
 */
struct server {
	pid_t pid;
	const struct tcg *cg;
	int gate;	/* the test writes one byte to open it */
	int done;	/* the test reads one byte when a run is done */
};

struct server_ends {
	int gate, done;	/* the server's ends */
};

static void work_gated(void *arg)
{
	const struct server_ends *e = arg;
	struct work_periodic w = { SLEEPS_PER_PHASE, WORK_US };
	char c;

	while (read(e->gate, &c, 1) == 1 && c == 'r') {
		work_periodic(&w);
		if (write(e->done, "d", 1) != 1)
			_exit(1);
	}
}

static void server_start(struct server *s, const struct tcg *cg)
{
	struct server_ends e;
	int gate[2], done[2];

	cr_assert_eq(pipe2(gate, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(done, O_CLOEXEC), 0);
	e = (struct server_ends){ gate[0], done[1] };
	s->cg = cg;
	s->pid = tcg_spawn(cg, test_cpu, work_gated, &e);
	cr_assert_gt(s->pid, 0, "spawn server");
	/* the server holds the only write end: a server that dies reads EOF */
	close(gate[0]);
	close(done[1]);
	s->gate = gate[1];
	s->done = done[0];
}

/*
 * The waits the kernel's sched_info counted for the server (arrivals on
 * a CPU after being queued: /proc/PID/schedstat) and rqlat's histogram
 * and blame of its cgroup, read while it sleeps on its gate: nothing it
 * does can end a wait between the reads, which the same count before and
 * after them confirms.
 */
static void read_asleep(const struct server *s, const struct tcg *a,
			struct task_schedstat *ss, struct moat_rqlat_hist *h,
			struct blame_sums *blame)
{
	struct task_schedstat again;

	do {
		cr_assert(task_wait_asleep(s->pid, 60000),
			  "the server never slept on its gate");
		cr_assert_eq(task_schedstat(s->pid, ss), 0, "read the server's schedstat");
		read_hist(s->cg->id, h);
		read_blame(s->cg->id, a->id, blame);
		cr_assert_eq(task_schedstat(s->pid, &again), 0);
	} while (again.waits != ss->waits);
}

/*
 * Run the server once; return the waits rqlat saw of its cgroup in that
 * run and how they were blamed (on @a, on <idle>), and the number of
 * waits the kernel counted for the server.  That count, not the number
 * of sleeps, is what the load did: a timer that fires before the task
 * has switched out (an emulated guest is slow enough) wakes it where it
 * runs, and no wait starts.
 */
static __u64 server_run(const struct server *s, const struct tcg *a,
			struct moat_rqlat_hist *win, struct blame_sums *blame,
			__u64 *delay_ns)
{
	struct task_schedstat s0, s1;
	struct moat_rqlat_hist before, after;
	struct blame_sums b0, b1;
	__u64 waits;
	char c;

	read_asleep(s, a, &s0, &before, &b0);
	cr_assert_eq(write(s->gate, "r", 1), 1);
	/*
	 * Its 600 cycles each wait behind a hog's slice where there is one:
	 * seconds here, tens of them in an emulated guest, so the test waits
	 * for the server to say it is done, not for a time.
	 */
	cr_assert_eq(read(s->done, &c, 1), 1, "the server died in its work");
	read_asleep(s, a, &s1, &after, &b1);
	moat_hist_delta(win, &after, &before);
	blame_delta(blame, &b1, &b0);
	waits = s1.waits - s0.waits;
	*delay_ns = s1.delay_ns - s0.delay_ns;
	cr_log_info("%s: %llu waits, %.1f ms in all; the kernel's "
		    "sched_info: %llu waits, %.1f ms", s->cg->path,
		    (unsigned long long)win->count, win->sum_ns / 1e6,
		    (unsigned long long)waits, (s1.delay_ns - s0.delay_ns) / 1e6);
	/* it did wait: at least for the wake-up at its gate */
	cr_assert_gt(waits, 0, "the kernel counted no wait of the server");
	return waits;
}

static void server_stop(struct server *s)
{
	cr_assert_eq(write(s->gate, "q", 1), 1);
	cr_assert_eq(tcg_wait(s->pid), 0, "server in %s failed", s->cg->path);
	close(s->gate);
	close(s->done);
}

/*
 * Run the server in @b once; return the waits it saw in that phase, and
 * how they were blamed (on @a, on <idle>).  rqlat counts the waits the
 * kernel counted for it, within 1%: on this host's 6.18, with the test
 * CPU idle between the server's runs, rqlat has counted up to 4 in 600
 * fewer (in about half of such phases; behind a hog once, 1 in 686 in a
 * sanitized run; never in the 6.1 and 6.12 guests): Documentation/rqlat.rst.
 */
static __u64 server_phase(const struct tcg *b, const struct tcg *a,
			  struct moat_rqlat_hist *win, struct blame_sums *blame)
{
	struct server srv;
	__u64 waits, slack, delay_ns;

	server_start(&srv, b);
	waits = server_run(&srv, a, win, blame, &delay_ns);
	server_stop(&srv);
	slack = waits / 100 + 1;
	cr_expect(win->count + slack >= waits && win->count <= waits + slack,
		  "rqlat counted %llu waits of %s, the kernel %llu",
		  (unsigned long long)win->count, b->path, (unsigned long long)waits);
	return delay_ns;
}

/*
 * Behind a hog the waits are its slices, and rqlat's sum is the kernel's
 * (sched_info's run_delay), no less than 1% under it and no more than
 * 10% over: the wake-up's start is read from the runqueue's clock as
 * the kernel stamps it (bpf/rqlat.bpf.c), the switch's end from
 * bpf_ktime_get_ns().  Over, because the kernel's clock is not updated
 * at a switch that follows a wake-up preemption or an idle CPU's wake-up
 * (Documentation/rqlat.rst), so it misses each such wait's wake-up
 * latency, which rqlat sees: quiet, 600 waits are 7-9 ms by rqlat and
 * 0.1-1.8 ms by the kernel on the host, 14-19 ms and 0.2-2.7 ms in the
 * emulated guests, where behind the hog that is 3-5% of the sum (0.5%
 * on the host).  A wrong offset between the two clocks is the whole
 * offset on every wait (milliseconds here).
 */
static void expect_kernels_sum(const struct moat_rqlat_hist *win, __u64 delay_ns)
{
	cr_expect(win->sum_ns >= 0.99 * delay_ns && win->sum_ns <= 1.10 * delay_ns,
		  "behind the hog rqlat summed %.1f ms of waits, the kernel %.1f ms",
		  win->sum_ns / 1e6, delay_ns / 1e6);
}

/* Mean wait per wake-up that some cgroup's task caused (not <idle>), us. */
static double contended_mean_us(const struct moat_rqlat_hist *h,
				const struct blame_sums *b)
{
	return (b->total_ns - b->idle_ns) / 1e3 / h->count;
}

/* B's wait behind the tasks of cgroups other than A (and B), ms. */
static double others_ms(const struct blame_sums *b)
{
	return (b->total_ns - b->idle_ns - b->to_culprit_ns) / 1e6;
}

static double p99_us(const struct moat_rqlat_hist *h)
{
	double ns;

	cr_assert_eq(moat_hist_percentile(h, 0.99, &ns), 0);
	return ns / 1000;
}

static void contention(bool raw_tp)
{
	struct moat_rqlat_opts opts = { .force_raw_tp = raw_tp };
	struct moat_rqlat_hist quiet, busy, after;
	struct blame_sums bq, bb, ba;
	struct tcg a, b;
	__u64 drops[MOAT_DROP_NR];
	double p_quiet, p_busy, p_after, p_uncontended, mean_busy, mean_after;
	double mean_quiet, mean_uncontended, share;
	__u64 busy_delay_ns;
	pid_t hog;
	int err, i;

	cr_assert_eq(tcg_create("a", &a), 0);
	cr_assert_eq(tcg_create("b", &b), 0);
	err = moat_rqlat_open(&opts, &rq);
	if (err)
		moat_log_libbpf_tail();
	cr_assert_eq(err, 0, "load and attach rqlat: %s", strerror(-err));
	cr_assert_str_eq(moat_rqlat_attach_kind(rq), raw_tp ? "raw_tp" : "tp_btf");
	cr_assert_eq(moat_rqlat_watch(rq, b.id, true), 0);

	server_phase(&b, &a, &quiet, &bq);
	hog = tcg_spawn(&a, test_cpu, work_hog, NULL);
	cr_assert_gt(hog, 0, "spawn hog");
	busy_delay_ns = server_phase(&b, &a, &busy, &bb);
	tcg_kill(hog);
	server_phase(&b, &a, &after, &ba);

	p_quiet = p99_us(&quiet);
	p_busy = p99_us(&busy);
	p_after = p99_us(&after);
	share = (double)bb.to_culprit_ns / (bb.total_ns - bb.idle_ns);
	mean_quiet = contended_mean_us(&quiet, &bq);
	mean_busy = contended_mean_us(&busy, &bb);
	mean_after = contended_mean_us(&after, &ba);
	cr_log_info("%s: B's waits quiet / with hog / after: p99 %.1f / %.1f / %.1f us, "
		    "mean %.1f / %.1f / %.1f us, of which behind a cgroup's task "
		    "%.1f / %.1f / %.1f us; with the hog, %.1f%% of its wait behind "
		    "tasks was charged to A",
		    moat_rqlat_attach_kind(rq), p_quiet, p_busy, p_after,
		    quiet.sum_ns / 1e3 / quiet.count, busy.sum_ns / 1e3 / busy.count,
		    after.sum_ns / 1e3 / after.count,
		    mean_quiet, mean_busy, mean_after, 100 * share);
	cr_log_info("%s: B's wait quiet / with hog / after behind tasks of neither A nor B "
		    "(kernel threads, the machine's own): %.1f / %.1f / %.1f ms",
		    moat_rqlat_attach_kind(rq), others_ms(&bq), others_ms(&bb),
		    others_ms(&ba));

	/*
	 * Now and then a kernel thread of this machine (kdamond, seen) runs
	 * for 1-2 ms on the test CPU, and this PREEMPT_NONE kernel does not
	 * preempt it, so an uncontended p99 swings between 30 us and 2 ms
	 * from run to run while the hog's waits (4-7 ms) dominate from p90
	 * up.  Such noise only ever inflates a quiet phase: the uncontended
	 * p99 is the smaller of the two quiet phases'.  Wake-ups of an idle
	 * CPU are charged to <idle>: wake-up latency, which a VM stretches,
	 * not contention; so blame and the fall are judged on the waits
	 * behind some cgroup's task, the fall too on the less disturbed
	 * quiet phase (in one sanitized CI run the phase after the hog had a
	 * mean of 110 us, 8 times less than with it, not 10).  That nothing
	 * is charged to A once it has no task is exact, and noise cannot
	 * touch it; who else B waited behind is logged.
	 */
	p_uncontended = fmin(p_quiet, p_after);
	mean_uncontended = fmin(mean_quiet, mean_after);
	cr_expect_gt(p_busy, 2 * p_uncontended,
		     "contended p99 %.1f us not clearly above uncontended %.1f us",
		     p_busy, p_uncontended);
	cr_expect_geq(share, 0.8, "only %.1f%% of B's blamed wait charged to A",
		      100 * share);
	cr_expect_geq(mean_busy, 10 * mean_uncontended,
		      "mean wait behind tasks fell only from %.1f to %.1f us",
		      mean_busy, mean_uncontended);
	expect_kernels_sum(&busy, busy_delay_ns);
	cr_expect_eq(ba.to_culprit_ns, 0,
		     "%llu ns of B's waits charged to A after A's hog was gone",
		     (unsigned long long)ba.to_culprit_ns);

	moat_rqlat_drops(rq, drops);
	for (i = 0; i < MOAT_DROP_NR; i++)
		cr_expect_eq(drops[i], 0, "%s: %llu", moat_rqlat_drop_name(i),
			     (unsigned long long)drops[i]);
}

Test(rqlat_bpf, contention_is_measured_and_blamed_tp_btf)
{
	contention(false);
}

Test(rqlat_bpf, contention_is_measured_and_blamed_raw_tp)
{
	contention(true);
}

/*
 * A task that was there before the load, and one forked after it, keep
 * their starts in their own local storage (the seed_starts iterator, the
 * fork hook), not in the pid hash, and every wait of theirs is measured.
 */
static void storage(bool before)
{
	struct moat_rqlat_opts opts = {};
	struct moat_rqlat_hist win;
	struct blame_sums blame;
	struct server srv;
	struct tcg a, b;
	__u64 waits, delay_ns;
	pid_t hog;

	cr_assert_eq(tcg_create("a", &a), 0);
	cr_assert_eq(tcg_create("b", &b), 0);
	if (before)
		server_start(&srv, &b);
	cr_assert_eq(moat_rqlat_open(&opts, &rq), 0);
	if (strcmp(moat_rqlat_attach_kind(rq), "tp_btf"))
		tcg_skip(teardown, "raw_tp programs here: no task local storage");
	if (!before)
		server_start(&srv, &b);
	hog = tcg_spawn(&a, test_cpu, work_hog, NULL);
	cr_assert_gt(hog, 0, "spawn hog");
	waits = server_run(&srv, &a, &win, &blame, &delay_ns);
	expect_kernels_sum(&win, delay_ns);
	cr_expect_eq(moat_rqlat_hash_has(rq, srv.pid), 0,
		     "the server's start is in the pid hash");
	server_stop(&srv);
	tcg_kill(hog);
	cr_log_info("a server %s the load: %llu starts in the pid hash since "
		    "the load (any task's)", before ? "from before" : "forked after",
		    (unsigned long long)moat_rqlat_hash_marks(rq));
	/*
	 * Its starts were all in its storage (the hash has none of its):
	 * the point here.  The count is the kernel's, within the 1% that
	 * server_phase() allows: on this host's 6.18 a wait now and then is
	 * missing from rqlat's count, mostly on an idle CPU, once in a
	 * sanitized run behind the hog (685 of 686): Documentation/rqlat.rst.
	 */
	cr_expect(win.count + waits / 100 + 1 >= waits && win.count <= waits + waits / 100 + 1,
		  "rqlat counted %llu of the server's waits, the kernel %llu",
		  (unsigned long long)win.count, (unsigned long long)waits);
	/* the hog holds the CPU: ms, not the us of an idle CPU's wake-up */
	cr_expect_gt(p99_us(&win), 1000);
}

Test(rqlat_bpf, a_task_from_before_the_load_keeps_its_start_in_its_storage)
{
	storage(true);
}

Test(rqlat_bpf, a_task_forked_after_the_load_keeps_its_start_in_its_storage)
{
	storage(false);
}

/*
 * A cgroup at its own CPU limit: a hog held to a tenth of a CPU (10 ms a
 * 100 ms CFS period) beside another cgroup's hog on the same CPU.  Each
 * throttle leaves it waiting for the next period, a wait that began with
 * its cgroup throttled: its own limit's (MOAT_CULPRIT_LIMIT), one a
 * throttled period, not the other hog's, which ran meanwhile; its waits
 * behind that hog while it had quota are that hog's.
 */
static void at_its_limit(bool raw_tp)
{
	struct moat_rqlat_opts opts = { .force_raw_tp = raw_tp };
	struct blame_sums l0, l1, o0, o1;
	long long thr0, thr1, ns0, ns1;
	const char *ns_key;
	struct tcg lim, other;
	pid_t hog, lhog;
	bool v2 = tcg_hierarchy()->v2;

	cr_assert_eq(tcg_create("lim", &lim), 0);
	cr_assert_eq(tcg_create("other", &other), 0);
	cr_assert_eq(tcg_write(&lim, v2 ? "cpu.max" : "cpu.cfs_quota_us",
			       v2 ? "10000 100000" : "10000"), 0);
	ns_key = v2 ? "throttled_usec" : "throttled_time";
	cr_assert_eq(moat_rqlat_open(&opts, &rq), 0);
	cr_assert_str_eq(moat_rqlat_attach_kind(rq), raw_tp ? "raw_tp" : "tp_btf");
	cr_assert_eq(moat_rqlat_watch(rq, lim.id, true), 0);
	hog = tcg_spawn(&other, test_cpu, work_hog, NULL);
	cr_assert_gt(hog, 0);
	lhog = tcg_spawn(&lim, test_cpu, work_hog, NULL);
	cr_assert_gt(lhog, 0);
	usleep(300000);
	read_blame(lim.id, MOAT_CULPRIT_LIMIT, &l0);
	read_blame(lim.id, other.id, &o0);
	thr0 = tcg_number(&lim, "cpu.stat", "nr_throttled");
	ns0 = tcg_number(&lim, "cpu.stat", ns_key);
	usleep(1000000);
	read_blame(lim.id, MOAT_CULPRIT_LIMIT, &l1);
	read_blame(lim.id, other.id, &o1);
	thr1 = tcg_number(&lim, "cpu.stat", "nr_throttled");
	ns1 = tcg_number(&lim, "cpu.stat", ns_key);
	tcg_kill(lhog);
	tcg_kill(hog);
	blame_delta(&l1, &l1, &l0);
	blame_delta(&o1, &o1, &o0);
	cr_assert(thr0 >= 0 && ns0 >= 0, "no cpu.stat of %s", lim.path);
	/* v2's throttled_usec in us, v1's throttled_time in ns */
	if (v2) {
		ns0 *= 1000;
		ns1 *= 1000;
	}
	cr_log_info("%s: in 1 s, %lld periods throttled, %.1f ms throttled (cpu.stat); "
		    "waits at its own limit %llu, %.1f ms; behind the other hog %llu, %.1f ms",
		    moat_rqlat_attach_kind(rq), thr1 - thr0, (ns1 - ns0) / 1e6,
		    (unsigned long long)l1.to_culprit, l1.to_culprit_ns / 1e6,
		    (unsigned long long)o1.to_culprit, o1.to_culprit_ns / 1e6);
	cr_expect_geq(thr1 - thr0, 5, "the hog at 0.1 CPU throttled in %lld periods of 10",
		      thr1 - thr0);
	/*
	 * One a throttled period, give or take the window's two ends; two
	 * on 6.18, whose task-based throttling lets the throttled task run
	 * again to throttle itself on its way back to user space: the
	 * preemption at the throttle starts one, its own dequeue the other.
	 */
	cr_expect(l1.to_culprit + 2 >= (unsigned long long)(thr1 - thr0) &&
		  l1.to_culprit <= 2 * (unsigned long long)(thr1 - thr0) + 2,
		  "%llu waits at its own limit in %lld throttled periods",
		  (unsigned long long)l1.to_culprit, thr1 - thr0);
	/* they hold the time it was throttled (and a queue after it) */
	cr_expect_geq(l1.to_culprit_ns, (unsigned long long)(ns1 - ns0) / 2,
		      "%.1f ms of waits at its limit, throttled %.1f ms",
		      l1.to_culprit_ns / 1e6, (ns1 - ns0) / 1e6);
	/*
	 * Not the other hog's, which ran through them: charged to whoever
	 * ran last, they were (the throttled time, ~800 ms).  What the other
	 * hog gets is its waits behind it while it had quota: 24-66 ms in
	 * the runs so far, and none at all in one 6.1 run, where it ran its
	 * 10 ms unpreempted each period.
	 */
	cr_expect_lt(o1.to_culprit_ns, (unsigned long long)(ns1 - ns0) / 4,
		     "%.1f ms of its waits charged to the other hog, throttled %.1f ms",
		     o1.to_culprit_ns / 1e6, (ns1 - ns0) / 1e6);
}

Test(rqlat_bpf, a_wait_at_its_own_cpu_limit_is_charged_to_the_limit_tp_btf)
{
	at_its_limit(false);
}

Test(rqlat_bpf, a_wait_at_its_own_cpu_limit_is_charged_to_the_limit_raw_tp)
{
	at_its_limit(true);
}

/* Waits of an unwatched cgroup are measured but charged to nobody. */
Test(rqlat_bpf, unwatched_cgroup_is_not_blamed)
{
	struct moat_rqlat_opts opts = {};
	struct moat_rqlat_hist win;
	struct blame_sums blame;
	struct tcg c;

	cr_assert_eq(tcg_create("c", &c), 0);
	cr_assert_eq(moat_rqlat_open(&opts, &rq), 0);
	server_phase(&c, &c, &win, &blame);
	read_blame(c.id, 0, &blame);
	cr_expect_eq(blame.total_ns, 0);
}

static void setup_cgroups(void)
{
	const char *why = tcg_skip_reason(false);

	if (why)
		cr_skip_test("%s", why);
	cr_assert_eq(tcg_setup(), 0, "create test cgroups under the cpu hierarchy");
}

TestSuite(cgroup_real, .init = setup_cgroups, .fini = tcg_cleanup);

/* Ids map to paths by walking the real hierarchy, and back. */
Test(cgroup_real, names_resolve_ids)
{
	struct moat_cgroup_names *names;
	struct tcg d;
	const char *p;

	cr_assert_eq(tcg_create("d", &d), 0);
	names = moat_cgroup_names_new(tcg_hierarchy());
	cr_assert_not_null(names);
	cr_assert_eq(moat_cgroup_names_refresh(names), 0);
	p = moat_cgroup_names_lookup(names, d.id);
	cr_expect(p && !strcmp(p, d.path), "id %llu -> %s, want %s",
		  (unsigned long long)d.id, p ? p : "(none)", d.path);
	cr_expect_null(moat_cgroup_names_lookup(names, ~0ULL));
	moat_cgroup_names_free(names);
}

/* cgroup_mkdir and cgroup_rmdir in the cpu hierarchy reach userspace. */
Test(cgroup_real, mkdir_and_rmdir_are_reported)
{
	struct moat_cgroup_events *ev;
	struct tcg e;
	int i;

	if (tcg_skip_reason(true))
		tcg_skip(tcg_cleanup, "%s", tcg_skip_reason(true));
	cr_assert_eq(moat_cgroup_events_open(0, &ev), 0);
	moat_cgroup_events_consume(ev, NULL, NULL, NULL);		/* whatever came before */
	cr_expect_not(moat_cgroup_events_consume(ev, NULL, NULL, NULL), "an event from nowhere");
	cr_assert_eq(tcg_create("e", &e), 0);
	cr_expect(moat_cgroup_events_consume(ev, NULL, NULL, NULL), "mkdir not reported");
	cr_expect_not(moat_cgroup_events_consume(ev, NULL, NULL, NULL), "mkdir reported twice");
	/* rmdir: the cgroup may linger a moment while its css goes away */
	cr_assert_eq(rmdir(e.dir), 0);
	for (i = 0; i < 100 && !moat_cgroup_events_consume(ev, NULL, NULL, NULL); i++)
		usleep(10000);
	cr_expect_lt(i, 100, "rmdir not reported");
	moat_cgroup_events_close(ev);
}

struct removed_seen {
	__u64 id;
	int n;
};

static void note_removed(__u64 id, void *ctx)
{
	struct removed_seen *r = ctx;

	if (id == r->id)
		r->n++;
}

/*
 * Consume until @r's cgroup was said removed (or 1 s: a cgroup may linger
 * while its css goes away); whether any consume said a change.
 */
static bool consume_until_removed(struct moat_cgroup_events *ev,
				  struct removed_seen *r)
{
	bool changed = false;
	int i;

	for (i = 0; i < 100 && !r->n; i++) {
		changed |= moat_cgroup_events_consume(ev, note_removed, NULL, r);
		if (!r->n)
			usleep(10000);
	}
	return changed;
}

/*
 * A cgroup made further below @root than the program looks up
 * (MOAT_CGROUP_TRACK_DEPTH levels) is a change all the same: a kubelet
 * in a pod, or systemd in a container, nests that deep.
 */
static void expect_deep_mkdir_reported(struct moat_cgroup_events *ev,
				       const struct tcg *root)
{
	char deep[MOAT_CGROUP_TRACK_DEPTH + 3][PATH_MAX];
	int n = MOAT_CGROUP_TRACK_DEPTH + 3, i;

	for (i = 0; i < n; i++) {
		cr_assert_lt((size_t)snprintf(deep[i], sizeof(deep[i]), "%s/d",
					      i ? deep[i - 1] : root->dir), sizeof(deep[i]));
		cr_assert_eq(mkdir(deep[i], 0755), 0, "%s: %s", deep[i], strerror(errno));
		if (i == n - 2)	/* the levels the program still sees */
			moat_cgroup_events_consume(ev, NULL, NULL, NULL);
	}
	cr_expect(moat_cgroup_events_consume(ev, NULL, NULL, NULL),
		  "mkdir %d levels below the root not reported", n);
	while (i--)
		cr_expect_eq(rmdir(deep[i]), 0, "%s: %s", deep[i], strerror(errno));
	moat_cgroup_events_consume(ev, NULL, NULL, NULL);
}

/*
 * With a scan root, what changes below it is a change; a cgroup made
 * beside it is not, and one removed beside it is only said to @removed
 * (its run-queue histograms leave their map).  A rename (cgroup v1: v2
 * has none) is a change too.
 */
Test(cgroup_real, events_of_the_scan_roots_subtree_and_every_removal)
{
	struct moat_cgroup_events *ev;
	struct removed_seen gone = { 0 };
	struct tcg root, below, beside;
	char to[PATH_MAX];

	if (tcg_skip_reason(true))
		tcg_skip(tcg_cleanup, "%s", tcg_skip_reason(true));
	cr_assert_eq(tcg_create("root", &root), 0);
	cr_assert_eq(moat_cgroup_events_open(root.id, &ev), 0);
	moat_cgroup_events_consume(ev, NULL, NULL, NULL);		/* whatever came before */

	cr_assert_eq(tcg_create("root/below", &below), 0);
	cr_expect(moat_cgroup_events_consume(ev, NULL, NULL, NULL), "mkdir below the root not reported");
	expect_deep_mkdir_reported(ev, &root);
	cr_assert_eq(tcg_create("beside", &beside), 0);
	cr_expect_not(moat_cgroup_events_consume(ev, NULL, NULL, NULL), "mkdir beside the root reported");

	gone.id = beside.id;
	cr_assert_eq(rmdir(beside.dir), 0);
	cr_expect_not(consume_until_removed(ev, &gone), "rmdir beside the root: a change");
	cr_expect_eq(gone.n, 1, "rmdir beside the root: said removed %d times", gone.n);
	if (!tcg_hierarchy()->v2) {
		snprintf(to, sizeof(to), "%s/root/renamed", tcg_prefix_dir());
		cr_assert_eq(rename(below.dir, to), 0, "rename: %s", strerror(errno));
		cr_expect(moat_cgroup_events_consume(ev, NULL, NULL, NULL), "rename not reported");
	} else {
		cr_log_info("cgroup v2 has no rename: not tested");
	}
	moat_cgroup_events_close(ev);
}

struct task_seen {
	__u64 unit;
	__u32 tid;
	int n, other;
};

static void note_task(__u64 unit, __u32 tid, void *ctx)
{
	struct task_seen *t = ctx;

	if (unit == t->unit && tid == t->tid)
		t->n++;
	else
		t->other++;
}

static void work_sleep(void *unused)
{
	pause();
}

/* clone3() with CLONE_INTO_CGROUP: a child born in @dir's cgroup. */
static pid_t spawn_into(const char *dir)
{
	struct clone_args args = { .flags = CLONE_INTO_CGROUP,
				   .exit_signal = SIGCHLD };
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	pid_t pid;

	if (fd < 0)
		return -errno;
	args.cgroup = fd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		pause();
		_exit(0);
	}
	close(fd);
	return pid < 0 ? -errno : pid;
}

/*
 * A task that enters a tracked cgroup's subtree reaches userspace with
 * the tracked cgroup's id: written to a child cgroup's cgroup.procs, and,
 * on cgroup v2, forked straight into it; one that enters an untracked
 * cgroup does not.
 */
Test(cgroup_real, tasks_entering_tracked_cgroups_are_reported)
{
	struct moat_cgroup_events *ev;
	struct task_seen seen = { 0 };
	struct tcg unit, inner, other;
	pid_t pid;
	int i;

	if (tcg_skip_reason(true))
		tcg_skip(tcg_cleanup, "%s", tcg_skip_reason(true));
	cr_assert_eq(tcg_create("unit", &unit), 0);
	cr_assert_eq(tcg_create("unit/inner", &inner), 0);
	cr_assert_eq(tcg_create("other", &other), 0);
	cr_assert_eq(moat_cgroup_events_open(0, &ev), 0);
	cr_assert_eq(moat_cgroup_events_track(ev, &unit.id, 1), 0);
	moat_cgroup_events_consume(ev, NULL, NULL, NULL);

	seen.unit = unit.id;
	pid = tcg_spawn(&other, 0, work_sleep, NULL);
	cr_assert_gt(pid, 0);
	usleep(100000);
	moat_cgroup_events_consume(ev, NULL, note_task, &seen);
	cr_expect_eq(seen.n + seen.other, 0, "a task in an untracked cgroup was reported");
	tcg_kill(pid);

	pid = tcg_spawn(&inner, 0, work_sleep, NULL);
	cr_assert_gt(pid, 0);
	seen.tid = pid;
	for (i = 0; i < 100 && !seen.n; i++) {
		usleep(10000);
		moat_cgroup_events_consume(ev, NULL, note_task, &seen);
	}
	cr_expect_eq(seen.n, 1, "tid %d into %s: reported %d times", (int)pid,
		     inner.path, seen.n);
	tcg_kill(pid);

	if (!tcg_hierarchy()->v2) {
		cr_log_info("cgroup v1: no CLONE_INTO_CGROUP here (make vmtest runs it)");
	} else {
		pid = spawn_into(inner.dir);
		cr_assert_gt(pid, 0, "clone3: %s", strerror(-pid));
		seen.tid = pid;
		seen.n = 0;
		for (i = 0; i < 100 && !seen.n; i++) {
			usleep(10000);
			moat_cgroup_events_consume(ev, NULL, note_task, &seen);
		}
		cr_expect_eq(seen.n, 1, "tid %d born in %s: reported %d times",
			     (int)pid, inner.path, seen.n);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}

	cr_assert_eq(moat_cgroup_events_track(ev, NULL, 0), 0);
	seen.n = seen.other = 0;
	pid = tcg_spawn(&inner, 0, work_sleep, NULL);
	usleep(100000);
	moat_cgroup_events_consume(ev, NULL, note_task, &seen);
	cr_expect_eq(seen.n + seen.other, 0, "reported after tracking stopped");
	tcg_kill(pid);
	moat_cgroup_events_close(ev);
}

static void count_removed(__u64 id, void *ctx)
{
	__u64 *want = ctx;

	if (id == want[0])
		want[1]++;
}

/* A removed cgroup's id comes with its event, and rqlat then forgets it. */
Test(rqlat_bpf, removed_cgroups_leave_the_maps)
{
	struct moat_rqlat_opts opts = {};
	struct moat_cgroup_events *ev;
	struct moat_rqlat_hist win, h;
	struct blame_sums blame;
	struct tcg f;
	__u64 seen[2];
	int i;

	cr_assert_eq(tcg_create("f", &f), 0);
	cr_assert_eq(moat_rqlat_open(&opts, &rq), 0);
	cr_assert_eq(moat_cgroup_events_open(0, &ev), 0);
	cr_assert_eq(moat_rqlat_watch(rq, f.id, true), 0);
	server_phase(&f, &f, &win, &blame);
	cr_assert_gt(win.count, 0);
	read_blame(f.id, 0, &blame);
	cr_assert_gt(blame.total_ns, 0, "no blame entry to forget");

	moat_cgroup_events_consume(ev, NULL, NULL, NULL);
	cr_assert_eq(rmdir(f.dir), 0);
	seen[0] = f.id;
	seen[1] = 0;
	for (i = 0; i < 100 && !seen[1]; i++) {
		moat_cgroup_events_consume(ev, count_removed, NULL, seen);
		usleep(10000);
	}
	cr_assert_eq(seen[1], 1, "rmdir of %llu reported %llu times",
		     (unsigned long long)f.id, (unsigned long long)seen[1]);
	cr_assert_eq(moat_rqlat_forget(rq, &f.id, 1), 0);
	cr_expect_eq(moat_rqlat_read_hist(rq, f.id, &h), -ENOENT);
	read_blame(f.id, 0, &blame);
	cr_expect_eq(blame.total_ns, 0, "blame entries of a removed cgroup left");
	moat_cgroup_events_close(ev);
}
