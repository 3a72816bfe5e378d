// SPDX-License-Identifier: GPL-2.0-only
/*
 * CFS burst for LC pods throttled by their own CPU limit (burst.c), on a
 * kubelet-shaped tree: the LC pod and its container get burst, a BE pod
 * throttled the same and an LC pod not throttled get none; every way out
 * puts the files back exactly; an admin's change to one is theirs.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include "helpers.h"
#include "journal.h"
#include "kubestub.h"
#include "moatd_harness.h"

#define LC_UID		"0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define IDLE_UID	"11111111-2222-3333-4444-555555555555"
#define BATCH_UID	"bbbbbbbb-cccc-dddd-eeee-ffffffffffff"
#define QUOTA_US	20000
/* the LC pod's container, as kube_add_pod() names it (its 1st pod) */
#define LC_CTR		"0000000000000000000000000000000000000000000000000000000000000001"

/* The config of these tests: the controller never steps (a huge target). */
#define BURST_CONF "period_ms = 100\nhttp/listen = 127.0.0.1:0\n" \
	"lc/rqlat_p99_target_us = 10000000\n"

struct burst_node {
	struct kube_node n;
	struct kube_pod lc, idle, be;
	pid_t hog[2], pause;
	int cpu;
};

static const char *burst_file(void)
{
	return tcg_hierarchy()->v2 ? "cpu.max.burst" : "cpu.cfs_burst_us";
}

/* @cg's burst in us; -1: no file (the kernel has none: the test skips). */
static long burst_of(const struct tcg *cg)
{
	char path[PATH_MAX + 32], buf[32];

	snprintf(path, sizeof(path), "%s/%s", cg->dir, burst_file());
	if (moat_kfile_read(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

static void set_burst(const struct tcg *cg, long us)
{
	char v[32];

	snprintf(v, sizeof(v), "%ld", us);
	cr_assert_eq(tcg_write(cg, burst_file(), v), 0, "writing %s/%s", cg->dir,
		     burst_file());
}

static void set_quota(const struct tcg *cg)
{
	char v[64];

	if (tcg_hierarchy()->v2) {
		snprintf(v, sizeof(v), "%d 100000", QUOTA_US);
		cr_assert_eq(tcg_write(cg, "cpu.max", v), 0);
	} else {
		snprintf(v, sizeof(v), "%d", QUOTA_US);
		cr_assert_eq(tcg_write(cg, "cpu.cfs_quota_us", v), 0);
	}
}

/* @cg's CFS quota in us; -1: none, -2: not read. */
static long quota_of(const struct tcg *cg)
{
	char path[PATH_MAX + 32], buf[64];

	snprintf(path, sizeof(path), "%s/%s", cg->dir,
		 tcg_hierarchy()->v2 ? "cpu.max" : "cpu.cfs_quota_us");
	if (moat_kfile_read(path, buf, sizeof(buf)))
		return -2;
	return strncmp(buf, "max", 3) ? strtol(buf, NULL, 10) : -1;
}

/* Wait up to @ms for @cg's burst to be @want; what it is then. */
static long wait_burst(const struct tcg *cg, long want, int ms)
{
	long v = burst_of(cg);
	int i;

	for (i = 0; i < ms / 50 && v != want; i++) {
		sleep_ms(50);
		v = burst_of(cg);
	}
	return v;
}

/*
 * Three pods with a limit of 0.2 CPU at pod and container level, as
 * kubelet and the runtime write it: an LC pod and a batch pod each with a
 * hog, throttled every period, and an LC pod whose process sleeps.
 */
static void enforce_with(const char *conf);

static void burst_node(struct burst_node *b, bool systemd, const char *conf)
{
	struct kube_pod *pods[3] = { &b->lc, &b->idle, &b->be };
	int i;

	stop(&daemon_pid);
	memset(b, 0, sizeof(*b));
	kube_node(&b->n, systemd);
	b->lc = (struct kube_pod){ .uid = LC_UID, .tier = KUBE_BURSTABLE, .shares = 204 };
	b->idle = (struct kube_pod){ .uid = IDLE_UID, .tier = KUBE_BURSTABLE, .shares = 204 };
	b->be = (struct kube_pod){ .uid = BATCH_UID, .tier = KUBE_BURSTABLE, .shares = 204 };
	for (i = 0; i < 3; i++) {
		kube_add_pod(&b->n, pods[i], i + 1);
		if (burst_of(&pods[i]->pod) < 0)
			skip("this kernel has no %s (Linux 5.14+)", burst_file());
		set_quota(&pods[i]->pod);
		set_quota(&pods[i]->ctr);
	}
	b->cpu = tcg_pick_cpu();
	b->hog[0] = tcg_spawn(&b->lc.ctr, b->cpu, work_hog, NULL);
	b->hog[1] = tcg_spawn(&b->be.ctr, b->cpu, work_hog, NULL);
	b->pause = tcg_spawn(&b->idle.ctr, b->cpu, work_pause, NULL);
	cr_assert(b->hog[0] > 0 && b->hog[1] > 0 && b->pause > 0);
	enforce_with(conf);
}

/*
 * moatd with @conf, observing until the batch pod is classed be (a
 * burstable pod is lc by default: enforcing from the start, it could
 * get burst while it is), then enforcing.
 */
static void enforce_with(const char *conf)
{
	start_with_config("burst.conf", conf);
	wait_get("groups/" BATCH_UID "/class", 0, 50);
	set_runtime("groups/" BATCH_UID "/class", "be");
	set_runtime("mode", "enforce");
}

static void burst_node_stop(struct burst_node *b)
{
	tcg_kill(b->hog[0]);	/* 0 where a test killed it already */
	tcg_kill(b->hog[1]);
	tcg_kill(b->pause);
	stop(&daemon_pid);
}

/* Only the throttled LC pod and its container have burst, one quota's. */
static void expect_only_lc(const struct burst_node *b, const char *when)
{
	cr_expect_eq(wait_burst(&b->lc.pod, QUOTA_US, 3000), QUOTA_US,
		     "%s: the throttled LC pod's burst is not its quota", when);
	cr_expect_eq(wait_burst(&b->lc.ctr, QUOTA_US, 1000), QUOTA_US,
		     "%s: the throttled LC container's burst is not its quota", when);
	cr_expect_eq(burst_of(&b->be.pod), 0, "%s: a BE pod got burst", when);
	cr_expect_eq(burst_of(&b->be.ctr), 0, "%s: a BE container got burst", when);
	cr_expect_eq(burst_of(&b->idle.pod), 0, "%s: an LC pod never throttled got burst", when);
	cr_expect_eq(burst_of(&b->idle.ctr), 0, "%s: its container got burst", when);
	/* burst/lift is off: an LC pod's limit is never written */
	cr_expect_eq(quota_of(&b->lc.pod), QUOTA_US, "%s: the LC pod's quota was written", when);
	cr_expect_eq(quota_of(&b->lc.ctr), QUOTA_US, "%s: the container's quota was written", when);
}

static void expect_none(const struct burst_node *b, const char *when)
{
	cr_expect_eq(wait_burst(&b->lc.pod, 0, 3000), 0,
		     "after %s the LC pod's burst is not put back", when);
	cr_expect_eq(wait_burst(&b->lc.ctr, 0, 1000), 0,
		     "after %s the LC container's burst is not put back", when);
}

/* The value of @name's sample whose labels have @label in them; -1: none. */
static double sample_with(const char *body, const char *name, const char *label)
{
	char labels[1024];
	const char *p, *end;
	size_t n = strlen(name);

	for (p = body; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, n) || p[n] != '{' || !(end = strchr(p, '}')) ||
		    (size_t)(end - p) >= sizeof(labels))
			continue;
		snprintf(labels, sizeof(labels), "%.*s", (int)(end - p), p);
		if (strstr(labels, label))
			return strtod(end + 2, NULL);
	}
	return -1;
}

/*
 * The LC pod throttled by its own limit gets burst at pod and container
 * level within a period or so, the BE pod and the idle LC pod none; the
 * metrics and moatctl status say so; then each way out puts it back
 * exactly: a switch to observe, a kill -9 and the next start, SIGTERM,
 * and `moatctl restore` once the pod is no longer throttled.
 */
static void burst_rounds(bool systemd)
{
	const char *restore[] = { "--socket", sock, "restore", NULL };
	const char *status[] = { "--socket", sock, "status", NULL };
	char conf[PATH_MAX], log[PATH_MAX], *body;
	struct burst_node b;

	burst_node(&b, systemd, BURST_CONF);
	snprintf(conf, sizeof(conf), "%s/burst.conf", dir);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	expect_only_lc(&b, "enforcing");
	cr_expect(wait_log("throttled by its own CPU limit", 1, 0), "moatd did not say so");
	cr_assert_eq(ctl(out, err, "get", "groups/" LC_UID "/burst", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "20000 us\n");
	cr_assert_eq(http_get(http_port(), "/metrics", page, sizeof(page), &body), 200);
	/*
	 * The pod and its container have the same quota and one hog: which
	 * of the two the kernel throttles first, and so whose cpu.stat
	 * counts it, varies (the pod's stayed at 0 in one run).
	 */
	cr_expect(sample_with(body, "moat_lc_throttled_seconds_total", LC_UID "\"") > 0 ||
		  sample_with(body, "moat_lc_throttled_seconds_total", LC_CTR "\"") > 0,
		  "the LC pod's throttling is not in /metrics");
	cr_expect_eq(sample_with(body, "moat_lc_throttled_seconds_total", BATCH_UID "\""), -1,
		     "a BE pod's throttling counted as an LC one's");
	cr_expect_eq(sample_with(body, "moat_group_cpu_burst_seconds", LC_UID "\""), 0.02,
		     "the burst in force is not in /metrics");
	cr_assert_eq(run("moatctl", status, out, err), 0, "%s", err);
	cr_expect(strstr(out, "burst: on, 100% of the quota"), "moatctl status: %s", out);

	/* observe mode changes nothing, and takes back what moat changed */
	set_runtime("mode", "observe");
	expect_none(&b, "a switch to observe");
	set_runtime("mode", "enforce");
	expect_only_lc(&b, "enforcing again");

	/* a crash leaves it; the next start, observing, puts it back */
	kill(daemon_pid, SIGKILL);
	waitpid(daemon_pid, NULL, 0);
	daemon_pid = 0;
	cr_expect_eq(burst_of(&b.lc.pod), QUOTA_US, "a kill -9 put it back");
	unlink(sock);
	write_file(conf, BURST_CONF);
	daemon_pid = start_moatd(sock, conf, log);
	expect_none(&b, "a kill -9 and the next start");

	/* SIGTERM */
	stop(&daemon_pid);
	enforce_with(BURST_CONF);
	expect_only_lc(&b, "started again");
	stop(&daemon_pid);
	expect_none(&b, "SIGTERM");

	/* moatctl restore, the pod no longer throttled: it stays put back */
	enforce_with(BURST_CONF);
	expect_only_lc(&b, "started once more");
	tcg_kill(b.hog[0]);
	b.hog[0] = 0;
	sleep_ms(500);
	cr_assert_eq(run("moatctl", restore, out, err), 0, "%s", err);
	expect_none(&b, "moatctl restore");
	sleep_ms(500);
	cr_expect_eq(burst_of(&b.lc.pod), 0, "burst again with no throttling");
	burst_node_stop(&b);
}

Test(moatd, a_throttled_lc_pod_gets_burst_and_gets_back_exactly_cgroupfs, .init = own_moatd, .timeout = 120)
{
	burst_rounds(false);
}

Test(moatd, a_throttled_lc_pod_gets_burst_and_gets_back_exactly_systemd, .init = own_moatd, .timeout = 120)
{
	burst_rounds(true);
}

/*
 * An admin sets the container's burst while moat holds it: theirs from
 * then on.  moat says so once, never writes it again while the pod is
 * throttled, and leaves it at the admin's value when it stops; the pod's
 * own burst, still moat's, is put back.
 */
Test(moatd, an_admins_burst_is_left_alone, .init = own_moatd, .timeout = 90)
{
	struct burst_node b;
	int i;

	burst_node(&b, false, BURST_CONF);
	expect_only_lc(&b, "enforcing");
	set_burst(&b.lc.ctr, 7000);
	cr_expect(wait_log("changed by someone else", 1, 3000), "moatd did not say so");
	for (i = 0; i < 10; i++) {
		cr_assert_eq(burst_of(&b.lc.ctr), 7000, "moat wrote the admin's burst back");
		sleep_ms(100);
	}
	cr_assert_eq(ctl(out, err, "get", "burst/outside_writes", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "1\n");
	stop(&daemon_pid);
	cr_expect_eq(burst_of(&b.lc.ctr), 7000, "stopping, moat undid the admin's burst");
	cr_expect_eq(burst_of(&b.lc.pod), 0, "the pod's burst, moat's, not put back");
	cr_expect_eq(log_count("changed by someone else"), 1, "said more than once");
	burst_node_stop(&b);
}

/*
 * burst/hold_s without throttling gives the original back; burst/enabled
 * 0 never writes a burst file.
 */
Test(moatd, burst_goes_after_hold_s_and_never_when_off, .init = own_moatd, .timeout = 90)
{
	struct burst_node b;
	int i;

	burst_node(&b, false, BURST_CONF "burst/hold_s = 1\n");
	expect_only_lc(&b, "enforcing");
	tcg_kill(b.hog[0]);
	b.hog[0] = 0;
	cr_expect_eq(wait_burst(&b.lc.pod, 0, 4000), 0,
		     "the burst stayed a hold_s after the throttling stopped");
	cr_expect(wait_log("not throttled lately", 1, 1000), "moatd did not say why");
	stop(&daemon_pid);
	b.hog[0] = tcg_spawn(&b.lc.ctr, b.cpu, work_hog, NULL);
	cr_assert_gt(b.hog[0], 0);
	enforce_with(BURST_CONF "burst/enabled = 0\n");
	for (i = 0; i < 15; i++) {
		cr_assert_eq(burst_of(&b.lc.pod), 0, "burst/enabled 0 and a burst written");
		cr_assert_eq(burst_of(&b.lc.ctr), 0, "burst/enabled 0 and a burst written");
		sleep_ms(100);
	}
	cr_assert_eq(ctl(out, err, "get", "burst/throttled", NULL), 0, "%s", err);
	cr_expect_neq(strtol(out, NULL, 10), 0, "the LC pod was not seen throttled");
	burst_node_stop(&b);
}

/*
 * burst/lift on, a pod with a limit of its own (its container none, as
 * with pod-level resources): throttled with its burst spent and the node
 * idle, its quota goes up, never over lift_max_pct of its limit; two BE
 * hogs make the node busy and it comes back down to its limit exactly;
 * lifted again, a resize is its new limit, which SIGTERM leaves.
 */
Test(moatd, a_quota_lift_past_the_burst_goes_up_idle_and_down_busy, .init = own_moatd, .timeout = 90)
{
	struct burst_node b;
	pid_t be[2];
	long q = 0;
	int i;

	burst_node(&b, false, BURST_CONF "burst/lift = 1\nburst/lift_max_pct = 200\n"
		   "burst/lift_node_busy_pct = 80\n");
	stop(&daemon_pid);
	/* the container without a limit: the pod's alone throttles */
	cr_assert_eq(tcg_write(&b.lc.ctr, tcg_hierarchy()->v2 ? "cpu.max" : "cpu.cfs_quota_us",
			       tcg_hierarchy()->v2 ? "max" : "-1"), 0);
	tcg_kill(b.hog[1]);	/* the node idle but for the LC hog */
	b.hog[1] = 0;
	enforce_with(BURST_CONF "burst/lift = 1\nburst/lift_max_pct = 200\n"
		     "burst/lift_node_busy_pct = 80\n");
	for (i = 0; i < 100 && (q = quota_of(&b.lc.pod)) < 2 * QUOTA_US; i++)
		sleep_ms(100);
	cr_assert_eq(q, 2 * QUOTA_US, "the quota went to %ld, not lift_max_pct of %d", q,
		     QUOTA_US);
	cr_expect(wait_log("quota lifted", 1, 0), "moatd did not say so");
	cr_expect_eq(burst_of(&b.lc.pod), QUOTA_US, "the burst is not of the original quota");
	/*
	 * The knob says the lift and the original.  Not read once: the
	 * period after the lift reached its top may step it down by a
	 * fifth (moat_lift_step()), where a window read the node busy or
	 * the hog's usage under its own limit (0.320 seen in the 6.12
	 * guest under TCG), and throttled again it goes back up.
	 */
	cr_expect(wait_knob("groups/" LC_UID "/burst", "quota 0.400 (0.200 its own)", 50),
		  "the knob: %s", out);
	/* the node busy (the batch pod without its limit): down by steps,
	   to its limit exactly */
	cr_assert_eq(tcg_write(&b.be.ctr, tcg_hierarchy()->v2 ? "cpu.max" : "cpu.cfs_quota_us",
			       tcg_hierarchy()->v2 ? "max" : "-1"), 0);
	cr_assert_eq(tcg_write(&b.be.pod, tcg_hierarchy()->v2 ? "cpu.max" : "cpu.cfs_quota_us",
			       tcg_hierarchy()->v2 ? "max" : "-1"), 0);
	be[0] = tcg_spawn(&b.be.ctr, 0, work_hog, NULL);
	be[1] = tcg_spawn(&b.be.ctr, 1, work_hog, NULL);
	cr_assert(be[0] > 0 && be[1] > 0);
	for (i = 0; i < 100 && (q = quota_of(&b.lc.pod)) != QUOTA_US; i++)
		sleep_ms(100);
	cr_expect_eq(q, QUOTA_US, "a busy node and the quota stays %ld", q);
	cr_expect(wait_log("its quota back to", 1, 2000), "moatd did not say so");
	tcg_kill(be[0]);
	tcg_kill(be[1]);
	/* up again, and SIGTERM puts it back */
	for (i = 0; i < 100 && (q = quota_of(&b.lc.pod)) <= QUOTA_US; i++)
		sleep_ms(100);
	cr_assert_gt(q, QUOTA_US, "not lifted again");
	/* "kubelet" resizes the pod: its new limit is the original now */
	cr_assert_eq(tcg_write(&b.lc.pod, tcg_hierarchy()->v2 ? "cpu.max" : "cpu.cfs_quota_us",
			       tcg_hierarchy()->v2 ? "30000 100000" : "30000"), 0);
	cr_expect(wait_log("quota changed by someone else", 1, 3000),
		  "the resize was not taken as the new original");
	stop(&daemon_pid);
	cr_expect_eq(quota_of(&b.lc.pod), 30000, "SIGTERM put back the old limit, not the resize");
	cr_expect_eq(burst_of(&b.lc.pod), 0, "SIGTERM left the burst");
	burst_node_stop(&b);
}

/* Write @cg's quota as kubelet or runc would; the kernel's answer. */
static int try_quota(const struct tcg *cg, long us)
{
	char v[64];

	if (tcg_hierarchy()->v2)
		snprintf(v, sizeof(v), "%ld 100000", us);
	else
		snprintf(v, sizeof(v), "%ld", us);
	return tcg_write(cg, tcg_hierarchy()->v2 ? "cpu.max" : "cpu.cfs_quota_us", v);
}

/*
 * An in-place resize down of a throttled LC pod, whose burst moat holds
 * at its whole quota: the kernel refuses a quota under the burst in
 * force (tg_set_cfs_bandwidth()), so kubelet's write failed until the
 * burst went, burst/hold_s after the throttling stopped: never, for a
 * pod that stays throttled.  With its spec from the API server (the
 * stub), moat lowers the burst to what the new limit allows, and
 * kubelet's next try goes through.
 */
Test(moatd, a_resize_down_goes_through_under_moats_burst, .init = own_moatd, .timeout = 60)
{
	struct MHD_Daemon *api;
	struct burst_node b;
	struct timespec t0;
	int i, rc = -1;

	burst_node(&b, false, BURST_CONF);
	stop(&daemon_pid);
	api = stub_start();
	stub_pod_cpu(LC_UID, "shop", "web", "web=" LC_CTR, "web=200m");
	enforce_with(BURST_CONF "kube/publish = 0\n");
	cr_assert(wait_knob("kube/pods_state", "synced", 50), "%s", out);
	cr_assert_eq(wait_burst(&b.lc.ctr, QUOTA_US, 3000), QUOTA_US,
		     "the throttled LC container's burst is not its quota");
	cr_assert_eq(wait_burst(&b.lc.pod, QUOTA_US, 1000), QUOTA_US);
	/* the premise: the kernel refuses the resize under that burst */
	cr_assert_eq(try_quota(&b.lc.ctr, QUOTA_US / 2), -EINVAL,
		     "a quota under the burst in force was taken");
	/* the spec changes (the API server has it first), then kubelet tries */
	stub_pod_cpu(LC_UID, "shop", "web", "web=" LC_CTR, "web=100m");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 60 && rc; i++) {
		/* the way down: the container's first, then the pod's */
		rc = try_quota(&b.lc.ctr, QUOTA_US / 2);
		if (!rc)
			rc = try_quota(&b.lc.pod, QUOTA_US / 2);
		if (rc)
			sleep_ms(100);
	}
	cr_assert_eq(rc, 0, "kubelet's resize still refused after 6 s: %s", strerror(-rc));
	cr_log_info("the resize down went through %ld ms after the spec changed",
		    elapsed_ms(&t0));
	cr_expect(wait_log("(a resize down)", 1, 1000), "moatd did not say why");
	cr_expect_leq(burst_of(&b.lc.ctr), QUOTA_US / 2);
	cr_expect_leq(burst_of(&b.lc.pod), QUOTA_US / 2);
	/* still throttled, it keeps a burst of its new quota at most */
	for (i = 0; i < 10; i++) {
		cr_assert_leq(burst_of(&b.lc.ctr), QUOTA_US / 2, "burst past the new quota");
		sleep_ms(100);
	}
	stop(&daemon_pid);
	cr_expect_eq(quota_of(&b.lc.ctr), QUOTA_US / 2, "SIGTERM undid the resize");
	cr_expect_eq(burst_of(&b.lc.ctr), 0, "SIGTERM left the burst");
	cr_expect_eq(burst_of(&b.lc.pod), 0, "SIGTERM left the burst");
	moatd_env[0] = NULL;
	stub_stop(api);
	burst_node_stop(&b);
}
