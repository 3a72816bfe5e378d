// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatd on resctrl: the FAKE resctrl (a FUSE file system that behaves as
 * the kernel's, selftests/fake_resctrl.c), and without one.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include "cgroup.h"
#include "helpers.h"
#include "journal.h"
#include "moatd_harness.h"
#include "tasksched.h"

/*
 * moatd on the FAKE resctrl (a FUSE file system that behaves as the
 * kernel's, selftests/fake_resctrl.c) started with @args, at *@mnt.
 * NULL, or why it cannot run here (then the test has cleaned up).
 */
/* The fake's vendor, as its layout has it: this machine's CPU may be the other. */
static const char *vendor_env(const char *args)
{
	return strstr(args, "--layout amd") ? "MOAT_RESCTRL_VENDOR=amd" :
					       "MOAT_RESCTRL_VENDOR=intel";
}

static const char *on_fake_resctrl(const char *args, char *mnt, size_t len)
{
	static char env[PATH_MAX + 32];
	const char *why = fake_resctrl_start(args, mnt, len);

	if (why) {
		teardown();	/* a skip does not run .fini */
		return why;
	}
	snprintf(env, sizeof(env), "MOAT_RESCTRL_ROOT=%s", mnt);
	moatd_env[0] = env;
	moatd_env[1] = vendor_env(args);
	unlink(sock);
	restart();
	moatd_env[0] = moatd_env[1] = NULL;
	return NULL;
}

/* Wait up to @ms for @mnt/@rel to read @want (NULL: to be gone). */
static bool wait_file(const char *mnt, const char *rel, const char *want, int ms)
{
	char path[PATH_MAX * 2], buf[8192];
	int i;

	snprintf(path, sizeof(path), "%s/%s", mnt, rel);
	for (i = 0; i < ms / 50; i++) {
		int fd = open(path, O_RDONLY);
		ssize_t n;

		if (fd < 0) {
			if (!want && errno == ENOENT)
				return true;
		} else {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			buf[n > 0 ? n : 0] = '\0';
			if (want && !strcmp(buf, want))
				return true;
		}
		sleep_ms(50);
	}
	return false;
}

/* Wait up to @ms for @tid to be listed in @mnt/@rel/tasks. */
static bool wait_tid(const char *mnt, const char *rel, pid_t tid, int ms)
{
	char path[PATH_MAX * 2];
	__u32 *v = NULL;
	int i;

	snprintf(path, sizeof(path), "%s/%s%stasks", mnt, rel, *rel ? "/" : "");
	for (i = 0; i < ms / 50; i++) {
		long n = moat_read_tids(path, &v), k;

		for (k = 0; k < n; k++)
			if (v[k] == (__u32)tid) {
				free(v);
				return true;
			}
		free(v);
		v = NULL;
		sleep_ms(50);
	}
	return false;
}

/*
 * In enforce mode moatd makes moat_lc and moat_be with the knobs' ways
 * and bandwidth, puts each LC and BE group's tasks in its class's group
 * and in a monitoring group of its own, follows a new task through the
 * BPF hooks (the reconcile is 10 minutes away), reports the fake's MBM
 * rate and occupancy, refuses bad knob values, and removes its groups on
 * a switch to observe: the tasks are back in the default group.
 */
Test(moatd, resctrl_allocates_follows_tasks_monitors_and_puts_back, .init = own_moatd)
{
	char mnt[PATH_MAX], rel[256];
	const char *why = on_fake_resctrl("--layout intel --mbm-rate 104857600",
					  mnt, sizeof(mnt));
	struct tcg web, batch;
	pid_t lc, be, be2;
	double bps;
	int i;

	if (why)
		skip("%s", why);
	cr_assert_eq(tcg_create("web-1", &web), 0);
	cr_assert_eq(tcg_create("batch-1", &batch), 0);
	lc = tcg_spawn(&web, 0, work_pause, NULL);
	be = tcg_spawn(&batch, 0, work_pause, NULL);
	cr_assert(lc > 0 && be > 0);
	wait_get("groups/batch.batch-1/path", 0, 30);
	cr_assert_eq(ctl(out, err, "get", "resctrl/state", NULL), 0);
	cr_expect(strstr(out, "observe"), "%s", out);
	/* ten periods in observe mode: resctrl's groups are never made */
	for (i = 0; i < 20; i++) {
		char path[PATH_MAX + 16];

		snprintf(path, sizeof(path), "%s/moat_be", mnt);
		if (!access(path, F_OK))
			break;
		sleep_ms(50);
	}
	cr_expect_eq(i, 20, "moat_be made in observe mode, %d ms after the start", i * 50);
	set_runtime("resctrl/reconcile_ms", "600000");
	set_runtime("resctrl/monitor_ms", "1000");
	set_runtime("resctrl/lc/l3_ways", "7");
	set_runtime("resctrl/be/l3_ways", "4");
	set_runtime("resctrl/be/mb_percent", "50");
	set_runtime("mode", "enforce");

	cr_expect(wait_file(mnt, "moat_be/schemata", "L3:0=f;1=f\nMB:0=50;1=50\n", 5000),
		  "BE: the 4 lowest ways, half the bandwidth");
	cr_expect(wait_file(mnt, "moat_lc/schemata",
			    "L3:0=7f0;1=7f0\nMB:0=100;1=100\n", 5000),
		  "LC: the 7 highest ways, all the bandwidth");
	cr_expect(wait_tid(mnt, "moat_be", be, 5000), "BE task not in moat_be");
	cr_expect(wait_tid(mnt, "moat_be/mon_groups/batch.batch-1", be, 5000),
		  "nor in its monitoring group");
	cr_expect(wait_tid(mnt, "moat_lc", lc, 5000), "LC task not in moat_lc");
	cr_assert_eq(ctl(out, err, "get", "resctrl/state", NULL), 0);
	cr_expect_str_eq(out, "allocating\n");
	cr_assert_eq(ctl(out, err, "get", "resctrl/be/schemata", NULL), 0);
	cr_expect_str_eq(out, "L3:0=f;1=f MB:0=50;1=50\n");
	cr_expect_eq(get_number("resctrl/lc/tasks"), 1, "web-1's one task");

	/* a task that comes later: the BPF hook, not the reconcile */
	be2 = tcg_spawn(&batch, 0, work_pause, NULL);
	cr_assert_gt(be2, 0);
	cr_expect(wait_tid(mnt, "moat_be/mon_groups/batch.batch-1", be2, 3000),
		  "a new task of batch-1 was not followed");
	cr_expect_gt(get_number("resctrl/task_events"), 0);

	/*
	 * The fake counts 100 MiB/s a group: moat_be's own and batch-1's,
	 * over windows of 1 s, so a read's few ms of delay weigh little.
	 */
	for (i = 0; i < 60 && isnan(get_number("groups/batch.batch-1/mbm_total_bytes_per_s")); i++)
		sleep_ms(100);
	bps = get_number("resctrl/be/mbm_total_bytes_per_s");
	cr_expect(bps > 0.75 * 209715200 && bps < 1.25 * 209715200, "%.0f B/s", bps);
	bps = get_number("groups/batch.batch-1/mbm_total_bytes_per_s");
	cr_expect(bps > 0.75 * 104857600 && bps < 1.25 * 104857600, "%.0f B/s", bps);
	bps = get_number("groups/batch.batch-1/mbm_local_bytes_per_s");
	cr_expect(bps > 0.75 * 52428800 && bps < 1.25 * 52428800, "%.0f B/s", bps);
	cr_expect_eq(get_number("resctrl/be/llc_occupancy_bytes"), 2 << 20);
	{
		static char buf[1 << 22];
		char *body = NULL;

		cr_assert_eq(http_get(http_port(), "/metrics", buf, sizeof(buf), &body),
			     200);
		cr_expect(strstr(body, "\nmoat_resctrl_llc_occupancy_bytes{class=\"be\"} 2097152\n"),
			  "class occupancy not in /metrics");
		cr_expect(strstr(body, "\nmoat_group_mbm_total_bytes_per_second{group=\"batch.batch-1\""),
			  "group bandwidth not in /metrics");
	}

	/* bad values name what is wrong, and change nothing */
	cr_expect_eq(ctl(out, err, "set", "resctrl/be/l3_ways", "12"), 1);
	cr_expect(strstr(err, "resctrl/be/l3_ways") &&
		  strstr(err, "12 ways, and it has 11"), "%s", err);
	cr_expect_eq(ctl(out, err, "set", "resctrl/be/l3_ways", "4;x=1"), 1);
	cr_expect_eq(ctl(out, err, "set", "resctrl/be/mb_percent", "0"), 1);
	cr_assert_eq(ctl(out, err, "get", "resctrl/be/l3_ways", NULL), 0);
	cr_expect_str_eq(out, "4\n");

	set_runtime("mode", "observe");
	cr_expect(wait_file(mnt, "moat_be", NULL, 5000), "moat_be left behind");
	cr_expect(wait_file(mnt, "moat_lc", NULL, 5000), "moat_lc left behind");
	cr_expect(wait_tid(mnt, "", be2, 1000), "not back in the default group");
	snprintf(rel, sizeof(rel), "%s/resctrl.journal", dir);
	cr_expect(access(rel, F_OK), "the journal stays after everything is back");
}

/*
 * AMD (L3 ids 0-7, 16-23), ways per cache id; after SIGKILL the groups
 * stay, and the next start removes them from the journal, in observe
 * mode too.
 */
Test(moatd, resctrl_after_sigkill_the_next_start_removes_what_moatd_made, .init = own_moatd)
{
	char mnt[PATH_MAX], log[PATH_MAX], *text;
	const char *why = on_fake_resctrl("--layout amd", mnt, sizeof(mnt));
	struct tcg batch;
	pid_t be;

	if (why)
		skip("%s", why);
	cr_assert_eq(tcg_create("batch-1", &batch), 0);
	be = tcg_spawn(&batch, 0, work_pause, NULL);
	cr_assert_gt(be, 0);
	wait_get("groups/batch.batch-1/path", 0, 30);
	cr_expect_eq(ctl(out, err, "set", "resctrl/be/l3_ways", "4;8=2"), 1,
		     "AMD's caches here are 0-7 and 16-23: no 8");
	cr_expect(strstr(err, "no L3 cache 8 here"), "%s", err);
	set_runtime("resctrl/be/l3_ways", "4;16=2");
	set_runtime("mode", "enforce");
	cr_expect(wait_file(mnt, "moat_be/schemata",
			    "L3:0=f;1=f;2=f;3=f;4=f;5=f;6=f;7=f;16=3;17=f;18=f;19=f;20=f;21=f;22=f;23=f\n"
			    "MB:0=2048;1=2048;2=2048;3=2048;4=2048;5=2048;6=2048;7=2048;16=2048;17=2048;18=2048;19=2048;20=2048;21=2048;22=2048;23=2048\n",
			    5000), "cache 16 gets 2 ways, the others 4");
	cr_expect(wait_tid(mnt, "moat_be", be, 5000));

	kill(daemon_pid, SIGKILL);
	waitpid(daemon_pid, NULL, 0);
	daemon_pid = 0;
	cr_expect(wait_tid(mnt, "moat_be", be, 100), "the kill took the group");
	unlink(sock);
	{
		static char env[PATH_MAX + 32];

		snprintf(env, sizeof(env), "MOAT_RESCTRL_ROOT=%s", mnt);
		moatd_env[0] = env;
		moatd_env[1] = vendor_env("--layout amd");
		restart();
		moatd_env[0] = moatd_env[1] = NULL;
	}
	cr_expect(wait_file(mnt, "moat_be", NULL, 100),
		  "not removed before the first period");
	cr_expect(wait_tid(mnt, "", be, 100), "its task not back in the default group");
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	text = slurp(log);
	cr_expect(strstr(text, "groups from a moatd that did not stop cleanly"), "%s", text);
	free(text);
}

/* Under CDP code and data get the same ways (Intel, L3CODE and L3DATA). */
Test(moatd, resctrl_under_cdp_code_and_data_get_the_same_ways, .init = own_moatd)
{
	char mnt[PATH_MAX];
	const char *why = on_fake_resctrl("--layout intel-cdp", mnt, sizeof(mnt));

	if (why)
		skip("%s", why);
	set_runtime("resctrl/be/l3_ways", "2");
	set_runtime("mode", "enforce");
	cr_expect(wait_file(mnt, "moat_be/schemata",
			    "L3CODE:0=3;1=3\nL3DATA:0=3;1=3\n    MB:0=100;1=100\n", 5000),
		  "BE: the 2 lowest ways for code and data");
	cr_assert_eq(ctl(out, err, "get", "resctrl/schemata", NULL), 0);
	cr_expect_str_eq(out, "L3CODE L3DATA MB\n");
}

/*
 * RMIDs for one monitoring group only (the default group, moat_lc and
 * moat_be hold three): one group gets it, the other is monitored with its
 * class only, and moatd says so once.
 */
Test(moatd, resctrl_monitoring_groups_while_rmids_last, .init = own_moatd)
{
	char mnt[PATH_MAX], log[PATH_MAX], *text;
	const char *why = on_fake_resctrl("--layout intel --rmids 4", mnt,
					  sizeof(mnt));
	struct tcg web, batch;
	int i, n = 0;

	if (why)
		skip("%s", why);
	cr_assert_eq(tcg_create("web-1", &web), 0);
	cr_assert_eq(tcg_create("batch-1", &batch), 0);
	wait_get("groups/batch.batch-1/path", 0, 30);
	wait_get("groups/web.web-1/path", 0, 30);
	set_runtime("mode", "enforce");
	for (i = 0; i < 50 && n < 1; i++) {
		sleep_ms(100);
		n = !wait_file(mnt, "moat_lc/mon_groups/web.web-1", NULL, 50) +
		    !wait_file(mnt, "moat_be/mon_groups/batch.batch-1", NULL, 50);
	}
	sleep_ms(300);
	n = !wait_file(mnt, "moat_lc/mon_groups/web.web-1", NULL, 50) +
	    !wait_file(mnt, "moat_be/mon_groups/batch.batch-1", NULL, 50);
	cr_expect_eq(n, 1, "%d monitoring groups with one RMID left", n);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	text = slurp(log);
	cr_expect_eq(count_of(text, "Out of RMIDs"), 1, "said once: %s", text);
	free(text);
}

/* Too few CLOSIDs for both groups: neither is made, and moatd says why. */
Test(moatd, resctrl_with_too_few_closids_makes_nothing, .init = own_moatd)
{
	char mnt[PATH_MAX], log[PATH_MAX], *text;
	const char *why = on_fake_resctrl("--layout intel --closids 2", mnt,
					  sizeof(mnt));
	int i;

	if (why)
		skip("%s", why);
	set_runtime("mode", "enforce");
	for (i = 0; i < 50; i++) {	/* a period, or a few on a busy machine */
		cr_assert_eq(ctl(out, err, "get", "resctrl/state", NULL), 0);
		if (!strstr(out, "observe"))
			break;
		sleep_ms(100);
	}
	cr_expect(strstr(out, "refused: 1 CLOSIDs left (num_closids 2, 0 groups besides the default), moat needs 2"),
		  "%s", out);
	cr_expect(wait_file(mnt, "moat_lc", NULL, 50));
	cr_expect(wait_file(mnt, "moat_be", NULL, 50));
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	text = slurp(log);
	cr_expect_eq(count_of(text, "CLOSIDs left"), 1, "said once: %s", text);
	free(text);
}

/*
 * A refusal that passes: the CLOSID another tool held is freed, and
 * moatd makes its groups then, not only after a knob changes (a start
 * refused once, for any reason, was never tried again).
 */
Test(moatd, resctrl_a_refusal_that_passes_is_tried_again, .init = own_moatd)
{
	char mnt[PATH_MAX], other[PATH_MAX + 8];
	const char *why = on_fake_resctrl("--layout intel --closids 3", mnt,
					  sizeof(mnt));

	if (why)
		skip("%s", why);
	snprintf(other, sizeof(other), "%s/other", mnt);
	cr_assert_eq(mkdir(other, 0755), 0, "%s", strerror(errno));
	set_runtime("mode", "enforce");
	cr_expect(wait_knob("resctrl/state", "refused: 1 CLOSIDs left", 50),
		  "%s", out);
	cr_assert_eq(rmdir(other), 0, "%s", strerror(errno));
	cr_expect(wait_knob("resctrl/state", "allocating", 100), "%s", out);
	cr_expect(!wait_file(mnt, "moat_be", NULL, 50), "moat_be not made");
}

/*
 * A schemata write the kernel refuses (BE's lowest ways overlap an
 * exclusive group moat did not make): last_cmd_status, verbatim, in the
 * log and the state; LC, which does not overlap, gets its ways.
 */
Test(moatd, resctrl_a_refused_schemata_write_reports_last_cmd_status, .init = own_moatd)
{
	char mnt[PATH_MAX], log[PATH_MAX], *text;
	const char *why = on_fake_resctrl("--layout intel --exclusive 3", mnt,
					  sizeof(mnt));

	if (why)
		skip("%s", why);
	set_runtime("resctrl/lc/l3_ways", "6");
	set_runtime("mode", "enforce");
	cr_expect(wait_file(mnt, "moat_lc/schemata",
			    "L3:0=7e0;1=7e0\nMB:0=100;1=100\n", 5000));
	cr_assert_eq(ctl(out, err, "get", "resctrl/state", NULL), 0);
	cr_expect(strstr(out, "moat_be/schemata refused") &&
		  strstr(out, "Overlaps with exclusive group"), "%s", out);
	cr_expect_gt(get_number("resctrl/write_errors"), 0);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	text = slurp(log);
	cr_expect(strstr(text, "Invalid argument: Overlaps with exclusive group"),
		  "%s", text);
	free(text);
}

/* resctrl/mount = 1 where the kernel has no resctrl: said, and moatd runs. */
Test(moatd, resctrl_mount_where_there_is_none_is_said_and_moatd_runs, .init = own_moatd)
{
	char conf[PATH_MAX], log[PATH_MAX], *text;
	FILE *f;

	if (!access("/sys/fs/resctrl/info", F_OK))
		skip("resctrl is mounted here: not the case this test is for");
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	f = fopen(conf, "a");
	cr_assert_not_null(f);
	fputs("resctrl/mount = 1\n", f);
	fclose(f);
	unlink(sock);
	restart();
	cr_assert_eq(ctl(out, err, "get", "resctrl/root", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "\n");
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	text = slurp(log);
	cr_expect(strstr(text, "resctrl: mount -t resctrl resctrl /sys/fs/resctrl: "),
		  "%s", text);
	free(text);
}

/* Without resctrl (this machine, the guest) moatd says so once, goes on. */
Test(moatd, without_resctrl_moatd_says_so_once_and_goes_on)
{
	char log[PATH_MAX], *text;
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[1024];
	bool mounted = false;

	while (f && fgets(line, sizeof(line), f))
		mounted |= strstr(line, " - resctrl ") != NULL;
	if (f)
		fclose(f);
	if (mounted)
		skip("resctrl is mounted here: not the case this test is for");
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0, "%s", err);
	cr_assert_eq(ctl(out, err, "get", "resctrl/root", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "\n");
	cr_assert_eq(ctl(out, err, "get", "resctrl/num_closids", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "0\n");
	sleep_ms(300);	/* some periods: still said once */
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	text = slurp(log);
	cr_expect_eq(count_of(text, "resctrl: not mounted"), 1, "%s", text);
	free(text);
}

/* A FAKE resctrl tree, in the kernel's formats, through $MOAT_RESCTRL_ROOT. */
Test(moatd, a_resctrl_tree_is_read_at_start_and_shown, .init = own_moatd)
{
	char conf[PATH_MAX], log[PATH_MAX], fake[PATH_MAX], env[PATH_MAX + 32];
	char path[PATH_MAX + 128], *text;
	static const char *const files[][2] = {
		{ "info/L3/cbm_mask", "7ff\n" }, { "info/L3/min_cbm_bits", "1\n" },
		{ "info/L3/num_closids", "16\n" }, { "info/L3/shareable_bits", "0\n" },
		{ "info/MB/bandwidth_gran", "10\n" }, { "info/MB/min_bandwidth", "10\n" },
		{ "info/MB/delay_linear", "1\n" }, { "info/MB/num_closids", "8\n" },
		{ "info/L3_MON/num_rmids", "224\n" },
		{ "info/L3_MON/mon_features", "llc_occupancy\nmbm_total_bytes\n" },
		{ "info/last_cmd_status", "ok\n" },
		{ "schemata", "L3:0=7ff;1=7ff\nMB:0=100;1=100\n" },
	};
	size_t i;

	snprintf(fake, sizeof(fake), "%s/fake-resctrl", dir);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *slash;

		snprintf(path, sizeof(path), "%s/%s", fake, files[i][0]);
		for (slash = strchr(path + strlen(dir) + 1, '/'); slash;
		     slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			mkdir(path, 0755);
			*slash = '/';
		}
		write_file(path, files[i][1]);
	}
	stop(&daemon_pid);
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	snprintf(env, sizeof(env), "MOAT_RESCTRL_ROOT=%s", fake);
	moatd_env[0] = env;
	moatd_env[1] = vendor_env("--layout intel");
	unlink(sock);
	daemon_pid = start_moatd(sock, conf, log);
	moatd_env[0] = moatd_env[1] = NULL;
	cr_assert_eq(ctl(out, err, "get", "resctrl/root", NULL), 0, "%s", err);
	snprintf(path, sizeof(path), "%s\n", fake);
	cr_expect_str_eq(out, path);
	cr_assert_eq(ctl(out, err, "get", "resctrl/schemata", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "L3 MB\n");
	cr_assert_eq(ctl(out, err, "get", "resctrl/num_closids", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "8\n", "the least of L3's 16 and MB's 8");
	cr_assert_eq(ctl(out, err, "get", "resctrl/num_rmids", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "224\n");
	/*
	 * bandwidth's unit is the vendor's: the fake's, Intel's
	 * ($MOAT_RESCTRL_VENDOR), whatever CPU runs the test (a guest
	 * under TCG's -cpu max says AMD)
	 */
	snprintf(path, sizeof(path),
		 "L3 11 ways (cbm_mask 7ff), MB percent in steps of 10; 8 CLOSIDs, 224 RMIDs");
	text = slurp(log);
	cr_expect(strstr(text, path), "no '%s' in:\n%s", path, text);
	free(text);
}
