// SPDX-License-Identifier: GPL-2.0-only
/*
 * Eviction, the last resort, against the stub API server (kubestub.h):
 * which pods, in which order, through the Eviction API with an Event,
 * dry-run, cool-down and rate, and the faults.  The node's memory is made
 * "short" by a threshold over any real figure (100% available).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include "helpers.h"
#include "kubestub.h"
#include "moatd_harness.h"

#define WEB_UID		"0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define LOW_UID		"11111111-2222-3333-4444-555555555555"
#define ETL_UID		"bbbbbbbb-cccc-dddd-eeee-ffffffffffff"
#define ETL2_UID	"cccccccc-dddd-eeee-ffff-000000000000"
#define DS_UID		"dddddddd-eeee-ffff-0000-111111111111"
#define ANON_UID	"eeeeeeee-ffff-0000-1111-222222222222"

static struct kube_node node;
static struct kube_pod pods[] = {
	{ .uid = WEB_UID, .tier = KUBE_BURSTABLE, .shares = 512 },
	{ .uid = LOW_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = ETL_UID, .tier = KUBE_BURSTABLE, .shares = 256 },
	{ .uid = ETL2_UID, .tier = KUBE_BURSTABLE, .shares = 256 },
	{ .uid = DS_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = ANON_UID, .tier = KUBE_BESTEFFORT },
};
static const char *const names[] = { "web", "low", "etl", "etl2", "agent", "" };

/* As kubelet, once the eviction is accepted: the pod's processes and cgroups go. */
static void kill_pod(const char *ns, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(pods) / sizeof(pods[0]); i++)
		if (!strcmp(names[i], name)) {
			if (rmdir(pods[i].ctr.dir) || rmdir(pods[i].pod.dir))
				fprintf(stderr, "kill_pod %s: %s: %s\n", name, pods[i].ctr.dir,
					strerror(errno));
			stub_pod_delete(pods[i].uid);
		}
}

/*
 * The node: an LC pod, BE pods of priority -10 (low), 0 (etl, etl2), a
 * DaemonSet's BE pod and a BE pod the API server does not know; moatd in
 * a pod, enforcing; memory "short" from the start at @mem_pct 100 (the
 * threshold and the release: over any real figure), never at 1.
 */
static char conf[1024];
static const char *api_env;	/* the stub's address, in moatd's environment */

static struct MHD_Daemon *start(const char *mode, unsigned int mem_pct, const char *extra)
{
	struct MHD_Daemon *api;
	size_t i;

	stop(&daemon_pid);
	kube_node(&node, false);
	for (i = 0; i < sizeof(pods) / sizeof(pods[0]); i++)
		kube_add_pod(&node, &pods[i], (int)i + 1);
	api = stub_start();
	stub_pod_ex(WEB_UID, "shop", "web", "\"moat.io/class\":\"lc\"", "", 1000, "", "");
	stub_pod_ex(LOW_UID, "batch", "low", "", "", -10, "ReplicaSet", "");
	stub_pod_ex(ETL_UID, "batch", "etl", "\"moat.io/class\":\"be\"", "", 0, "Job", "");
	stub_pod_ex(ETL2_UID, "batch", "etl2", "\"moat.io/class\":\"be\"", "", 0, "Job", "");
	stub_pod_ex(DS_UID, "kube-system", "agent", "", "", -100, "DaemonSet", "");
	snprintf(conf, sizeof(conf),
		 "period_ms = 100\nhttp/listen = 127.0.0.1:0\nkube/publish = 0\n"
		 "mode = enforce\nevict/mode = %s\nevict/memory_available_pct = %u\n"
		 "evict/memory_release_pct = %u\nevict/memory_periods = 2\n"
		 "evict/memory_after_high = %d\nevict/cooldown_s = 1\n%s",
		 mode, mem_pct, mem_pct, tcg_hierarchy()->v2 ? 0 : 1, extra);
	start_with_config("evict.conf", conf);
	api_env = moatd_env[0];
	moatd_env[0] = NULL;
	return api;
}

/* moatd killed (SIGKILL) and started again, as start() started it. */
static void again(void)
{
	kill(daemon_pid, SIGKILL);
	waitpid(daemon_pid, NULL, 0);
	daemon_pid = 0;
	moatd_env[0] = api_env;
	start_with_config("evict.conf", conf);
	moatd_env[0] = NULL;
}

Test(moatd, be_pods_are_evicted_in_order_through_the_api_with_an_event, .init = own_moatd, .timeout = 90)
{
	struct MHD_Daemon *api;
	struct stub_req r;
	char *body;

	stub_on_evict(NULL);
	api = start("on", 100, "evict/max_per_10min = 2\n");
	stub_on_evict(kill_pod);

	/* the lowest priority first, with its Event */
	cr_assert(wait_stub("POST", "/api/v1/namespaces/batch/pods/low/eviction", NULL,
			    NULL, &r, 15000), "no eviction of batch/low");
	cr_expect(strstr(r.body, "\"apiVersion\":\"policy/v1\"") &&
		  strstr(r.body, "\"kind\":\"Eviction\""), "%s", r.body);
	cr_expect(strstr(r.body, "\"deleteOptions\":{\"preconditions\":{\"uid\":\"" LOW_UID
			 "\"}}"), "no UID precondition: %s", r.body);
	cr_expect_str_eq(r.auth, "Bearer t0ken-123");
	cr_expect(wait_stub("POST", "/api/v1/namespaces/batch/events", "\"reason\":\"MoatEviction\"",
			    NULL, &r, 5000), "no Event");
	cr_expect(strstr(r.body, "\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
			 "\"namespace\":\"batch\",\"name\":\"low\",\"uid\":\"" LOW_UID "\"}"),
		  "%s", r.body);
	cr_expect(strstr(r.body, "node memory available"), "the figure: %s", r.body);

	/* then one of priority 0, after the cooldown; then the rate stops it */
	cr_expect(wait_log("evict: pod batch/etl", 1, 15000), "no second eviction");
	cr_expect(wait_log("evict/max_per_10min", 1, 5000), "the rate limit was not said");
	sleep_ms(1500);
	cr_expect_eq(stub_posts("eviction", ""), 2, "%d evictions with a rate of 2",
		     stub_posts("eviction", ""));
	cr_expect_eq(stub_posts("eviction", "web"), 0, "an LC pod was evicted");
	cr_expect_eq(stub_posts("eviction", "agent"), 0, "a DaemonSet's pod was evicted");
	/* by name, as the Eviction API has it: never a path made of the pod's UID */
	cr_expect_eq(stub_count("POST", "/api/v1/namespaces/batch/pods/" LOW_UID "/eviction",
				NULL), 0, "an eviction by UID");
	cr_expect_eq(stub_posts("eviction", ANON_UID), 0, "a pod the API server does not know went");
	cr_expect(wait_knob("evict/last", "batch/low memory evicted", 5), "%s", out);
	cr_assert_eq(http_get(http_port(), "/metrics", page, sizeof(page), &body), 200);
	cr_expect(strstr(body, "\nmoat_evictions_total{reason=\"memory\",mode=\"on\"} 2\n"),
		  "the metric");
	cr_assert_eq(ctl(out, err, "status", NULL, NULL), 0, "%s", err);
	cr_expect(strstr(out, "evict: on; candidates, first first: batch/etl"), "%s", out);

	/*
	 * Killed and started again, the node still short: the rate holds
	 * across the restart (<state-dir>/evictions), where a moatd that
	 * knew only its own evictions took the next pod at once.
	 */
	again();
	cr_expect(wait_log("2 evictions in the ten minutes before this start", 1, 10000),
		  "the evictions before the restart were not read");
	cr_expect(wait_log("evict/max_per_10min", 1, 10000), "the rate limit was not said");
	sleep_ms(1000);
	cr_expect_eq(stub_posts("eviction", ""), 2, "%d evictions with a rate of 2, a restart between",
		     stub_posts("eviction", ""));
	stop(&daemon_pid);
	stub_stop(api);
}

Test(moatd, dry_run_evicts_nothing_and_says_what_it_would, .init = own_moatd, .timeout = 60)
{
	struct MHD_Daemon *api;
	char *body;

	stub_on_evict(NULL);
	api = start("dry-run", 100, "");
	cr_expect(wait_log("evict: would evict pod batch/low", 1, 15000), "not said");
	cr_expect(wait_log("evict: would evict pod batch/low", 2, 5000),
		  "not said again after the cooldown");
	cr_expect_eq(stub_posts("eviction", ""), 0, "dry-run POSTed");
	cr_expect_eq(stub_posts("events", ""), 0, "dry-run recorded an Event");
	cr_assert_eq(http_get(http_port(), "/metrics", page, sizeof(page), &body), 200);
	{
		const char *m = strstr(body, "\nmoat_evictions_total{reason=\"memory\",mode=\"dry-run\"} ");

		cr_expect(m && strtod(strchr(m, '}') + 2, NULL) >= 2,
			  "dry-run not counted: %s", m ? m + 1 : "no such series");
	}
	stop(&daemon_pid);
	stub_stop(api);
}

Test(moatd, eviction_faults_429_404_500_401_a_timeout_and_a_pod_that_stays, .init = own_moatd, .timeout = 180)
{
	struct MHD_Daemon *api;
	char token[PATH_MAX];
	struct stub_req r;

	host_only("the eviction API's answers");

	stub_on_evict(NULL);
	api = start("on", 100, "evict/max_per_10min = 20\nevict/stuck_s = 3\n"
		    "kube/request_timeout_s = 2\n");
	/* a disruption budget says no: that pod is left alone, the next goes */
	stub_evict_answer(429, 1);
	cr_expect(wait_log("a disruption budget refuses it now (429)", 1, 15000), "429");
	cr_expect(wait_knob("evict/refused", "1\n", 20), "%s", out);
	cr_expect(wait_log("evict: pod batch/etl evicted", 1, 15000),
		  "the next candidate did not go after a 429");
	cr_expect_eq(stub_count("POST", "/api/v1/namespaces/batch/pods/low/eviction", NULL), 1,
		     "the pod a budget keeps was asked for again at once");
	/*
	 * Accepted, but the pod stays (no kubelet here): none other goes
	 * while it leaves, and after evict/stuck_s it is counted and another
	 * may go; it is never asked for again.
	 */
	sleep_ms(1500);		/* past the cooldown, short of evict/stuck_s */
	cr_expect_eq(stub_posts("eviction", ""), 2, "another went while batch/etl leaves");
	cr_expect(wait_log("is still here", 1, 10000), "a pod that stayed was not said");
	cr_expect(wait_knob("evict/stuck", "1\n", 20), "%s", out);
	/*
	 * 500: a failure, asked again 5 s later (the backoff doubles with
	 * each failure in a row); then a 404: the pod was gone already, as
	 * good as evicted, the backoff back to none.
	 */
	snprintf(token, sizeof(token), "%s/sa/token", dir);
	write_file(token, "t0ken-456\n");
	stub_evict_answer(500, 1);
	cr_expect(wait_log("not evicted (HTTP 500)", 1, 15000), "500");
	stub_evict_answer(404, 1);
	cr_expect(wait_log("was gone already", 1, 15000), "404");
	/* a 401 after the token rotated: a failure, asked again */
	stub_evict_answer(401, 1);
	cr_expect(wait_log("not evicted (HTTP 401)", 1, 15000), "401");
	/* the 500, the 404 and the 401 went to batch/low or batch/etl2, whichever was free */
	cr_expect((stub_seen("POST", "/api/v1/namespaces/batch/pods/low/eviction", NULL, NULL,
			     &r) && !strcmp(r.auth, "Bearer t0ken-456")) ||
		  (stub_seen("POST", "/api/v1/namespaces/batch/pods/etl2/eviction", NULL, NULL,
			     &r) && !strcmp(r.auth, "Bearer t0ken-456")),
		  "the rotated token was not read");
	/* no answer within kube/request_timeout_s (2 s here): a failure */
	stub_evict_delay(3000);
	cr_expect(wait_log("not evicted (no answer", 1, 20000), "the timeout was not said");
	/* (its answer, 1 s later, must not come to the next) */
	for (int i = 0; i < 100 && stub_evicts_in_progress(); i++)
		sleep_ms(100);
	/* the API server away: nothing evicted, moatd goes on */
	stub_stop(api);
	cr_expect(wait_log("not evicted (no answer", 2, 30000), "the API away was not said");
	cr_expect_eq(stub_count("POST", "/api/v1/namespaces/batch/pods/etl/eviction", NULL), 1,
		     "a pod whose eviction was accepted was asked for again");
	cr_assert_eq(ctl(out, err, "get", "cycle_us", NULL), 0, "moatd went away: %s", err);
	stop(&daemon_pid);
}

/*
 * CPU starvation (evict/cpu): a BE pod held at its quota's floor while
 * it uses all of it, for evict/cpu_starved_s, goes.  An LC probe and a
 * BE hog on one CPU; the config steps the quota to its floor at once.
 */
Test(moatd, a_be_pod_starved_at_its_cpu_floor_is_evicted, .init = own_moatd, .timeout = 120)
{
	static struct work_periodic probe = { 1000000, 1500 };
	struct MHD_Daemon *api;
	struct stub_req r;
	pid_t hog, lcp;
	int cpu;

	if (!tcg_hierarchy()->v2)
		skip("cgroup v1: the pod's CPU usage is cpuacct's, a hierarchy in which the test makes no group (make vmtest runs it)");
	stub_on_evict(NULL);
	api = start("on", 1, "evict/cpu = 1\nevict/cpu_starved_s = 10\nlc/rqlat_p99_target_us = 50\n"
		    "enforce/min_waits = 5\nenforce/cpu_prio_backoff_periods = 0\n"
		    "enforce/cpu_backoff_periods = 0\nenforce/release_periods = 1000\n"
		    "be/cpu_min_pct = 50\nenforce/cpu_decrease_pct = 90\n");
	tcg_lock_cpu();
	cpu = tcg_pick_cpu();
	hog = tcg_spawn(&pods[2].ctr, cpu, work_hog, NULL);	/* batch/etl */
	lcp = tcg_spawn(&pods[0].ctr, cpu, work_periodic, &probe);
	cr_assert(hog > 0 && lcp > 0);
	cr_expect(wait_stub("POST", "/api/v1/namespaces/batch/pods/etl/eviction", NULL, NULL,
			    &r, 60000), "the starved pod was not evicted");
	cr_expect(wait_stub("POST", "/api/v1/namespaces/batch/events", "held at its CPU floor",
			    NULL, &r, 5000), "no Event with the figure");
	cr_expect_eq(stub_posts("eviction", "low"), 0, "a pod not starved went");
	tcg_kill(hog);
	tcg_kill(lcp);
	stop(&daemon_pid);
	stub_stop(api);
}

/* The swap devices, a line each ("" none), from /proc/swaps. */
static void swap_devices(char *buf, size_t len)
{
	char line[512], dev[256];
	size_t n = 0;
	FILE *f = fopen("/proc/swaps", "r");

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s", dev) == 1 && dev[0] == '/' && n < len)
			n += snprintf(buf + n, len - n, "%s\n", dev);
	if (f)
		fclose(f);
}

static char swapped_off[1024];

/* `@how <device>` for each of @devs' lines; false if one failed. */
static bool swap_turn(const char *devs, const char *how)
{
	char copy[1024], *dev, *save = NULL, cmd[300];
	bool ok = true;

	snprintf(copy, sizeof(copy), "%s", devs);
	for (dev = strtok_r(copy, "\n", &save); dev; dev = strtok_r(NULL, "\n", &save)) {
		snprintf(cmd, sizeof(cmd), "%s %s", how, dev);
		if (system(cmd)) {
			fprintf(stderr, "%s failed\n", cmd);
			ok = false;
		}
	}
	return ok;
}

/* Swap back on, after a test turned it off (and failed, maybe): the suite's teardown follows. */
static void swap_back_on(void)
{
	if (swapped_off[0] && !swap_turn(swapped_off, "swapon"))
		fprintf(stderr, "the tests after this one lack swap\n");
	swapped_off[0] = '\0';
}

/*
 * The pods' memory, under kubepods' limit (node allocatable), when the
 * node has plenty: a BE pod's 40 MiB under a 48 MiB kubepods leaves 17%,
 * under the threshold of 30%, while the node's MemAvailable is far over
 * it.  Nothing goes before the pod holds its memory, nor, with swap, while
 * memory.high could still reclaim it (evict/memory_after_high 1, the
 * default, and no step yet); without swap memory.high frees no anonymous
 * memory, and the lowest priority goes, the figure saying why.
 */
Test(moatd, the_pods_memory_under_kubepods_limit_decides_eviction, .init = own_moatd, .timeout = 90,
     .fini = swap_back_on)
{
	static struct work_memory hold = { 40, 50 };
	struct MHD_Daemon *api;
	struct stub_req r;
	char *body;
	pid_t hog;

	if (!tcg_hierarchy()->v2)
		skip("cgroup v1: kubepods' memory limit is in the memory hierarchy, where the tests make no group (make vmtest runs it)");
	stub_on_evict(NULL);
	api = start("on", 30, "");
	set_runtime("evict/memory_after_high", "1");
	cr_assert_eq(tcg_write(&node.kp, "memory.max", "48M"), 0);
	cr_expect(wait_knob("node/pods_memory_limit", "50331648\n", 50), "%s", out);
	cr_expect(wait_knob("evict/candidates", "batch/low", 50), "%s", out);
	sleep_ms(1500);
	cr_expect_eq(stub_posts("eviction", ""), 0, "evicted with the pods' memory free");
	hog = tcg_spawn(&pods[2].ctr, 0, work_memory, &hold);	/* batch/etl */
	cr_assert(hog > 0);
	swap_devices(swapped_off, sizeof(swapped_off));
	if (swapped_off[0]) {
		cr_expect(wait_knob("node/pods_memory_available", "", 50), "%s", out);
		sleep_ms(3000);
		cr_expect_eq(stub_posts("eviction", ""), 0,
			     "evicted with swap, before memory.high was stepped");
		cr_assert(swap_turn(swapped_off, "swapoff"), "swapoff failed");
	}
	cr_expect(wait_stub("POST", "/api/v1/namespaces/batch/pods/low/eviction", NULL, NULL,
			    &r, 30000), "no eviction with the pods' memory short and no swap");
	cr_expect(wait_stub("POST", "/api/v1/namespaces/batch/events", "pods' memory available",
			    NULL, &r, 5000), "the Event's figure is not the pods' memory");
	cr_expect(strstr(r.body, "no swap: memory.high frees no anonymous memory"), "%s", r.body);
	cr_assert_eq(http_get(http_port(), "/metrics", page, sizeof(page), &body), 200);
	cr_expect(strstr(body, "\nmoat_pods_memory_limit_bytes 50331648\n"), "the metric");
	tcg_kill(hog);
	stop(&daemon_pid);
	stub_stop(api);
}

/*
 * The pods eviction must never take, each of a lower priority than the
 * one it may take, so that any rule missing would make its pod the
 * first to go: an LC pod, a bare pod (no controller: evicted is gone for
 * good), one in kube-system, a static pod's mirror, a DaemonSet's, one
 * already leaving (deletionTimestamp), moat's own ($POD_UID); then one
 * of system-cluster-critical's priority, which sorts last, alone with
 * what it may not take once the first has gone.  With evict/bare_pods 1
 * the bare pod goes too.
 */
#define SOLO_UID	"a0000000-0000-0000-0000-000000000001"
#define DNS_UID		"a0000000-0000-0000-0000-000000000002"
#define CRIT_UID	"a0000000-0000-0000-0000-000000000003"
#define STATIC_UID	"a0000000-0000-0000-0000-000000000004"
#define AGENT_UID	"a0000000-0000-0000-0000-000000000005"
#define LEAVING_UID	"a0000000-0000-0000-0000-000000000006"
#define SELF_UID	"a0000000-0000-0000-0000-000000000007"
#define JOB_UID		"a0000000-0000-0000-0000-000000000008"
#define LC_UID		"a0000000-0000-0000-0000-000000000009"

static struct kube_pod never[] = {
	{ .uid = LC_UID, .tier = KUBE_BURSTABLE, .shares = 512 },
	{ .uid = SOLO_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = DNS_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = STATIC_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = AGENT_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = LEAVING_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = SELF_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = CRIT_UID, .tier = KUBE_BESTEFFORT },
	{ .uid = JOB_UID, .tier = KUBE_BESTEFFORT },
};

/* As kubelet: the evicted pod's cgroups go. */
static void kill_never(const char *ns, const char *name)
{
	static const char *const names_never[] = {
		"web", "solo", "dns", "static", "agent", "leaving", "moat-self", "crit", "job",
	};
	size_t i;

	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (!strcmp(names_never[i], name)) {
			if (rmdir(never[i].ctr.dir) || rmdir(never[i].pod.dir))
				fprintf(stderr, "kill_never %s: %s\n", name, strerror(errno));
			stub_pod_delete(never[i].uid);
		}
}

Test(moatd, eviction_never_takes_the_pods_it_must_not, .init = own_moatd, .timeout = 90)
{
	static const char *pod_uid = "POD_UID=" SELF_UID;
	struct MHD_Daemon *api;
	struct stub_req r;
	size_t i;
	int n;

	stop(&daemon_pid);
	stub_on_evict(NULL);
	kube_node(&node, false);
	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		kube_add_pod(&node, &never[i], (int)i + 1);
	api = stub_start();
	for (n = 0; moatd_env[n]; n++)
		;
	moatd_env[n] = pod_uid;
	moatd_env[n + 1] = NULL;
	stub_pod_ex(LC_UID, "shop", "web", "\"moat.io/class\":\"lc\"", "", -1000, "ReplicaSet", "");
	stub_pod_ex(SOLO_UID, "batch", "solo", "", "", -100, "", "");
	stub_pod_ex(DNS_UID, "kube-system", "dns", "", "", -100, "ReplicaSet", "");
	stub_pod_meta(STATIC_UID, "batch", "static", "", "", -100, "Node",
		      "\"annotations\":{\"kubernetes.io/config.mirror\":\"0f1e\"}", "");
	stub_pod_ex(AGENT_UID, "batch", "agent", "", "", -100, "DaemonSet", "");
	stub_pod_meta(LEAVING_UID, "batch", "leaving", "", "", -100, "ReplicaSet",
		      "\"deletionTimestamp\":\"2026-12-05T00:00:00Z\"", "");
	stub_pod_ex(SELF_UID, "batch", "moat-self", "", "", -100, "ReplicaSet", "");
	stub_pod_ex(CRIT_UID, "batch", "crit", "", "system-cluster-critical", 2000000000,
		    "ReplicaSet", "");
	stub_pod_ex(JOB_UID, "batch", "job", "", "", 0, "Job", "");
	/*
	 * kube-system's pods are BE here (classes/spared_namespaces empty),
	 * so that eviction's own rule for them is what keeps the DNS pod.
	 */
	start_with_config("evict.conf", "period_ms = 100\nhttp/listen = \nkube/publish = 0\n"
			  "classes/spared_namespaces = \n"
			  "mode = enforce\nevict/mode = on\nevict/memory_available_pct = 100\n"
			  "evict/memory_release_pct = 100\nevict/memory_periods = 2\n"
			  "evict/memory_after_high = 0\nevict/cooldown_s = 1\n"
			  "evict/stuck_s = 1\n");
	moatd_env[0] = NULL;
	stub_on_evict(kill_never);

	cr_expect(wait_stub("POST", "/api/v1/namespaces/batch/pods/job/eviction", NULL, NULL,
			    &r, 20000), "the one pod that may go did not");
	/* the critical pod is now the first; it must stay, as all the others */
	cr_expect(wait_knob("groups/" CRIT_UID "/class", "be", 20), "%s", out);
	sleep_ms(3000);		/* three cooldowns, and stuck_s, past */
	cr_expect_eq(stub_posts("eviction", ""), 1, "%d evictions: one that must not go went",
		     stub_posts("eviction", ""));
	for (i = 0; i < sizeof(never) / sizeof(never[0]) - 1; i++) {
		char path[128];

		snprintf(path, sizeof(path), "groups/%s/name", never[i].uid);
		if (!ctl(out, err, "get", path, NULL)) {
			out[strcspn(out, "\n")] = '\0';
			cr_expect_eq(stub_posts("eviction", strchr(out, '/') + 1), 0,
				     "%s was evicted", out);
		}
	}
	cr_assert_eq(ctl(out, err, "get", "evict/candidates", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "\n", "candidates: %s", out);

	/* bare pods where the admin allows them */
	set_runtime("evict/bare_pods", "1");
	cr_expect(wait_stub("POST", "/api/v1/namespaces/batch/pods/solo/eviction", NULL, NULL,
			    &r, 20000), "a bare pod did not go with evict/bare_pods 1");
	cr_expect_eq(stub_posts("eviction", ""), 2, "%d evictions", stub_posts("eviction", ""));
	stop(&daemon_pid);
	stub_stop(api);
}
