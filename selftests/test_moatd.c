// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatd and moatctl as a sysadmin uses them: finding groups, the control
 * socket, the config file and its reloads, the state directory, the
 * service manager, privileges.
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
#include "resctrl.h"
#include "tasksched.h"

Test(moatd, discovers_new_groups_and_drops_removed_ones)
{
	struct tcg web, other;
	int periods;

	cr_assert_eq(tcg_create("web-1", &web), 0);
	cr_assert_eq(tcg_create("other", &other), 0);
	/* A generous bound: the rescan runs every 100 ms period. */
	periods = wait_get("groups/web.web-1/path", 0, 30);
	cr_log_info("web-1 found after %d x 100 ms", periods);
	cr_expect(strstr(out, "/web-1\n"), "path: %s", out);
	cr_assert_eq(ctl(out, err, "get", "groups/web.web-1/class", NULL), 0);
	cr_expect_str_eq(out, "lc\n");
	cr_assert_eq(ctl(out, err, "get", "groups/web.web-1/source", NULL), 0);
	cr_expect_str_eq(out, "rule:web\n");
	/* No rule matches "other": not a group. */
	cr_expect_eq(ctl(out, err, "ls", "groups", NULL), 0);
	cr_expect_null(strstr(out, "other"), "ls groups: %s", out);

	cr_assert_eq(rmdir(web.dir), 0);
	wait_get("groups/web.web-1/path", 1, 30);
	cr_expect(strstr(err, "no such knob"), "%s", err);
}

/*
 * A newcomer's first run on a host with no kubelet and no rule: the
 * status says where moatd looked, what it looks for and how to add a
 * rule, not just an empty table.
 */
Test(moatd, status_of_a_node_without_groups_says_how_to_add_one)
{
	const char *args[] = { "--socket", sock, "status", NULL };

	cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
	cr_expect(strstr(out, "no groups below /moat-test-") &&
		  strstr(out, "moatctl set rules/"),
		  "no word on how to get a group:\n%s", out);
}

Test(moatd, ls_get_set_tree_round_trip)
{
	char before[OUT_MAX];

	cr_assert_eq(ctl(out, err, "ls", NULL, NULL), 0, "%s", err);
	cr_expect(strstr(out, "classes/\n") && strstr(out, "period_ms\n") &&
		  strstr(out, "rules/\n") && strstr(out, "node/\n"), "%s", out);
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0);
	cr_expect_str_eq(out, "100\n");
	cr_assert_eq(ctl(out, err, "set", "period_ms", "200"), 0, "%s", err);
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0);
	cr_expect_str_eq(out, "200\n");
	cr_assert_eq(ctl(out, err, "set", "rules/cache", "cache-* lc"), 0, "%s", err);
	cr_assert_eq(ctl(out, err, "get", "rules/cache", NULL), 0);
	cr_expect_str_eq(out, "cache-* lc\n");
	cr_assert_eq(ctl(out, err, "set", "rules/cache", ""), 0, "%s", err);
	cr_expect_eq(ctl(out, err, "get", "rules/cache", NULL), 1);

	cr_assert_eq(ctl(out, err, "tree", "classes", NULL), 0);
	cr_expect_str_eq(out, "classes/besteffort = be\nclasses/burstable = lc\n"
			      "classes/guaranteed = lc\nclasses/label_namespaces = \n"
			      "classes/lc_job_pods = 0\nclasses/spared_namespaces = kube-system\n");
	cr_assert_eq(ctl(before, err, "config", NULL, NULL), 0);
	cr_expect(strstr(before, "period_ms = 200\n"), "%s", before);
	cr_expect(strstr(before, "rules/web = web-* lc\n"), "%s", before);
	cr_expect_null(strstr(before, "version"), "read-only knob in config");
}

/* What `moatctl config` prints starts a moatd with the same values. */
Test(moatd, config_output_restarts_moatd_the_same)
{
	char conf[PATH_MAX], log[PATH_MAX], sock2[PATH_MAX], first[OUT_MAX];
	char state[PATH_MAX];
	const char *args[] = { "--socket", sock2, "config", NULL };
	pid_t second;

	cr_assert_eq(ctl(out, err, "set", "classes/burstable", "be"), 0, "%s", err);
	cr_assert_eq(ctl(out, err, "set", "mode", "enforce"), 0, "%s", err);
	cr_assert_eq(ctl(first, err, "config", NULL, NULL), 0, "%s", err);
	snprintf(conf, sizeof(conf), "%s/round.conf", dir);
	snprintf(log, sizeof(log), "%s/second.log", dir);
	snprintf(sock2, sizeof(sock2), "%s/second.sock", dir);
	write_file(conf, first);

	/* a state directory of its own: the first moatd holds dir's */
	snprintf(state, sizeof(state), "%s/second-state", dir);
	moatd_args[0] = "--state-dir";
	moatd_args[1] = state;
	second = start_moatd(sock2, conf, log);
	moatd_args[0] = NULL;
	cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
	stop(&second);
	cr_expect_str_eq(out, first);
}

Test(moatd, bad_input_is_rejected_and_changes_nothing)
{
	static const char *const bad[][3] = {
		{ "set", "nosuch", "1" },		/* unknown path */
		{ "set", "period_ms", "fast" },		/* bad value */
		{ "set", "period_ms", "10" },		/* out of range */
		{ "set", "version", "9" },		/* read-only */
		{ "set", "../period_ms", "100" },	/* traversal */
		{ "set", "rules/../../x", "a lc" },
		{ "set", "rules/bad", "/etc/* lc" },	/* absolute glob */
		{ "set", "rules/bad", "a/../../b lc" },
		{ "set", "classes/besteffort", "gold" },
		{ "get", "groups/..", NULL },
	};
	char before[OUT_MAX], after[OUT_MAX];
	unsigned int i;

	cr_assert_eq(ctl(before, err, "config", NULL, NULL), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(ctl(out, err, bad[i][0], bad[i][1], bad[i][2]), 1,
			     "%s %s accepted", bad[i][0], bad[i][1]);
		cr_expect(strstr(err, bad[i][1]) &&
			  strchr(err, '\n') == err + strlen(err) - 1,
			  "one line that names the path: %s", err);
	}
	cr_expect(strstr(err, "invalid path"), "%s", err);
	cr_assert_eq(ctl(out, err, "set", "period_ms", "fast"), 1);
	cr_expect(strstr(err, "expected an integer in [50, 60000]"), "%s", err);
	cr_assert_eq(ctl(after, err, "config", NULL, NULL), 0);
	cr_expect_str_eq(after, before);
}

/* Raw requests moatctl would never send. */
static void raw_request(const char *req, size_t len, char *reply, size_t rlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	size_t got = 0;
	ssize_t n;

	strcpy(sa.sun_path, sock);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	while (got < rlen - 1 && (n = recv(fd, reply + got, rlen - 1 - got, 0)) > 0)
		got += n;
	reply[got] = '\0';
	close(fd);
}

Test(moatd, socket_survives_garbage_and_oversized_requests)
{
	static char big[3 * 4096];
	char reply[256];

	memset(big, 'a', sizeof(big));
	raw_request(big, sizeof(big), reply, sizeof(reply));
	cr_expect_str_eq(reply, "error E2BIG request too long\n");
	raw_request("get mode\0junk\n", 14, reply, sizeof(reply));
	cr_expect_str_eq(reply, "error EINVAL NUL byte in request\n");
	raw_request("\x01\x02\xff\n", 4, reply, sizeof(reply));
	cr_expect(!strncmp(reply, "error EINVAL", 12), "%s", reply);
	raw_request("get a\x1b[2Jb\n", 11, reply, sizeof(reply));
	cr_expect_str_eq(reply, "error EINVAL a?[2Jb: invalid path\n");
	raw_request("frobnicate everything\n", 22, reply, sizeof(reply));
	cr_expect_str_eq(reply, "error EINVAL unknown request\n");
	/* and it still answers */
	cr_assert_eq(ctl(out, err, "get", "mode", NULL), 0, "%s", err);
}

Test(moatd, socket_is_private)
{
	struct stat st;

	cr_assert_eq(stat(sock, &st), 0);
	cr_expect(S_ISSOCK(st.st_mode));
	cr_expect_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
	cr_expect_eq(st.st_uid, 0);
}

Test(moatd, config_error_stops_startup_with_file_and_line)
{
	char conf[PATH_MAX], sock2[PATH_MAX], state[PATH_MAX];
	const char *args[] = { "--foreground", "--socket", sock2, "--config",
			       conf, "--state-dir", state, NULL };

	/* a state directory of its own: the test's moatd holds dir's */
	snprintf(state, sizeof(state), "%s/bad-state", dir);
	snprintf(conf, sizeof(conf), "%s/bad.conf", dir);
	snprintf(sock2, sizeof(sock2), "%s/bad.sock", dir);
	write_file(conf, "period_ms = 100\n\nmode = fast\n");
	cr_assert_eq(run("moatd", args, out, err), 1);
	cr_expect(strstr(err, "bad.conf:3: mode: invalid value 'fast'"), "%s", err);

	write_file(conf, "rules/x = /abs lc\n");
	cr_assert_eq(run("moatd", args, out, err), 1);
	cr_expect(strstr(err, "bad.conf:1: rules/x: invalid value"), "%s", err);
}

Test(moatd, unreachable_daemon_is_named)
{
	const char *args[] = { "--socket", "/nonexistent/moatd.sock", "status", NULL };

	cr_assert_eq(run("moatctl", args, out, err), 1);
	cr_expect(strstr(err, "cannot reach moatd") &&
		  strstr(err, "/nonexistent/moatd.sock"), "%s", err);
}

Test(moatd, set_survives_a_restart_and_runtime_set_does_not)
{
	cr_assert_eq(ctl(out, err, "set", "period_ms", "300"), 0, "%s", err);
	cr_assert_eq(ctl(out, err, "set", "rules/web", ""), 0, "%s", err);
	cr_assert_eq(ctl(out, err, "set", "rules/cache", "cache-* lc"), 0, "%s", err);
	restart();
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0);
	cr_expect_str_eq(out, "300\n");
	/* the config's rule stays removed, the new one stays */
	cr_expect_eq(ctl(out, err, "get", "rules/web", NULL), 1);
	cr_assert_eq(ctl(out, err, "get", "rules/cache", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "cache-* lc\n");

	{
		const char *args[] = { "--socket", sock, "set", "--runtime",
				       "period_ms", "400", NULL };

		cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
	}
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0);
	cr_expect_str_eq(out, "400\n");
	restart();
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0);
	cr_expect_str_eq(out, "300\n");
}

Test(moatd, sighup_reloads_all_or_nothing)
{
	char conf[PATH_MAX], before[OUT_MAX];

	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	write_file(conf, "period_ms = 150\nrules/api = api-* lc\nsettings/watch_config = 0\n");
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_assert(wait_log("reload: ", 1, 5000), "no word of the reload");
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0);
	cr_expect_str_eq(out, "150\n");
	cr_expect_eq(ctl(out, err, "get", "rules/api", NULL), 0);
	/* the rules the old config had are gone with it */
	cr_expect_eq(ctl(out, err, "get", "rules/web", NULL), 1);

	cr_assert_eq(ctl(before, err, "config", NULL, NULL), 0);
	write_file(conf, "period_ms = 250\nrules/db = db-* lc\nmode = fast\n"
			 "settings/watch_config = 0\n");
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_assert(wait_log("reload: ", 2, 5000), "no word of the second reload");
	cr_expect(wait_log("not applied; the settings are as they were", 1, 0),
		  "the broken config was not refused as a whole");
	cr_assert_eq(ctl(out, err, "config", NULL, NULL), 0, "moatd died: %s", err);
	cr_expect_str_eq(out, before);
}

Test(moatd, a_config_that_is_a_directory_stops_the_start_and_a_reload_keeps_the_settings)
{
	char conf[PATH_MAX], dconf[PATH_MAX], sock2[PATH_MAX], state[PATH_MAX];
	const char *args[] = { "--foreground", "--socket", sock2, "--config",
			       dconf, "--state-dir", state, NULL };

	snprintf(dconf, sizeof(dconf), "%s/d.conf", dir);
	snprintf(sock2, sizeof(sock2), "%s/d.sock", dir);
	snprintf(state, sizeof(state), "%s/d-state", dir);
	cr_assert_eq(mkdir(dconf, 0700), 0);
	cr_assert_eq(run("moatd", args, out, err), 1, "started: %s", err);
	cr_expect(strstr(err, "d.conf: not a regular file (a directory)"), "%s", err);

	/* the running moatd's config becomes a directory: reload changes nothing */
	set_runtime("period_ms", "150");
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	cr_assert_eq(unlink(conf), 0);
	cr_assert_eq(mkdir(conf, 0700), 0);
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_assert(wait_log("reload: ", 1, 5000), "no reload said");
	cr_expect(wait_log("moat.conf: not a regular file (a directory)", 1, 0));
	cr_expect(wait_log("not applied; the settings are as they were", 1, 0));
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "150\n", "the settings changed");
	cr_assert_eq(ctl(out, err, "get", "rules/web", NULL), 0, "the rules went");
}

/*
 * While throttling, a config with one bad line is not applied at all;
 * one that names the address moatd listens on applies; one without
 * http/listen leaves HTTP on --listen's address: the command line wins.
 */
Test(moatd, sighup_with_a_broken_config_changes_nothing_and_the_command_line_wins, .init = own_moatd)
{
	char conf[PATH_MAX], listen[64], text[512], after[OUT_MAX];
	int port = free_port();

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	snprintf(text, sizeof(text),
		 "period_ms = 100\nrules/web = web-* lc\nrules/batch = batch-* be\n"
		 "settings/watch_config = 0\nlc/memory_pressure_target_pct = 33\n");
	write_file(conf, text);
	moatd_args[0] = "--mode";
	moatd_args[1] = "observe";
	moatd_args[2] = "--listen";
	moatd_args[3] = listen;
	unlink(sock);
	restart();
	moatd_args[0] = NULL;
	contend("enforce");	/* the command line said observe: the socket wins */
	cr_assert_geq(wait_throttled(50), 0, "the hog's group was never throttled");
	cr_assert_eq(http_port(), port);

	/* a bad line: nothing changes, not the mode, not the throttles */
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "bogus line\n");
	write_file(conf, text);
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_assert(wait_log("reload: ", 1, 5000), "no reload said");
	cr_expect(wait_log("moat.conf:6: expected 'path = value'", 1, 0));
	cr_expect(wait_log("not applied; the settings are as they were", 1, 0));
	cr_assert_eq(ctl(after, err, "get", "mode", NULL), 0);
	cr_expect_str_eq(after, "enforce\n");
	cr_assert_eq(ctl(after, err, "get", "lc/rqlat_p99_target_us", NULL), 0);
	cr_expect_str_eq(after, "1000\n", "the runtime set was undone");
	cr_assert_eq(ctl(after, err, "get", "lc/memory_pressure_target_pct", NULL), 0);
	cr_expect_str_eq(after, "33\n");
	cr_assert_eq(ctl(after, err, "get", "groups/batch.batch-hog/throttles", NULL), 0);
	cr_expect_neq(strtoul(after, NULL, 10), 0);
	expect_throttled();
	cr_expect_eq(http_port(), port);
	cr_expect(!wait_log("Address already in use", 1, 0));

	/* naming the address moatd holds is no change: it applies */
	snprintf(text, sizeof(text),
		 "period_ms = 100\nrules/web = web-* lc\nrules/batch = batch-* be\n"
		 "settings/watch_config = 0\nlc/memory_pressure_target_pct = 44\n"
		 "http/listen = %s\n", listen);
	write_file(conf, text);
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_assert(wait_log("reload: ", 2, 5000), "no second reload said");
	cr_expect(wait_log("moat.conf applied", 1, 0));
	cr_assert_eq(ctl(after, err, "get", "lc/memory_pressure_target_pct", NULL), 0);
	cr_expect_str_eq(after, "44\n");
	cr_expect_eq(http_port(), port);
	/* the command line's mode again: observe, and the throttles undone */
	cr_assert_eq(ctl(after, err, "get", "mode", NULL), 0);
	cr_expect_str_eq(after, "observe\n");

	/* no http/listen in the file: --listen's address, not the default */
	write_file(conf, "period_ms = 100\nrules/web = web-* lc\nsettings/watch_config = 0\n");
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_assert(wait_log("reload: ", 3, 5000), "no third reload said");
	cr_expect(wait_log("moat.conf applied", 2, 0));
	cr_expect_eq(http_port(), port);
	cr_expect_eq(ctl(after, err, "get", "rules/batch", NULL), 1, "rule kept");
}

/* The ConfigMap's next version, as kubelet's atomic writer makes it. */
static void configmap_version(const char *cm, int v, const char *text)
{
	char path[PATH_MAX + 64], target[32];

	snprintf(target, sizeof(target), "..v%d", v);
	snprintf(path, sizeof(path), "%s/%s", cm, target);
	cr_assert_eq(mkdir(path, 0755), 0, "%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s/moat.conf", cm, target);
	write_file(path, text);
	snprintf(path, sizeof(path), "%s/..data_tmp", cm);
	cr_assert_eq(symlink(target, path), 0);
	{
		char data[PATH_MAX + 16];

		snprintf(data, sizeof(data), "%s/..data", cm);
		cr_assert_eq(rename(path, data), 0, "%s", strerror(errno));
	}
}

/*
 * The config file is watched: a ConfigMap's update (kubelet's atomic
 * writer swaps the ..data symlink the file's path goes through) is
 * loaded within periods, no SIGHUP; one with a bad line is refused
 * whole.  A value `moatctl set` keeps outranks the file, and says so
 * (settings/local, moat_local_overrides, status), until `moatctl reset`
 * drops it and the file's value applies.  With the watch off, a change
 * waits for SIGHUP.
 */
Test(moatd, a_changed_config_is_loaded_and_moatctl_reset_drops_local_values, .init = own_moatd)
{
	static const char base[] = "period_ms = 100\nhttp/listen = 127.0.0.1:0\n";
	char cm[PATH_MAX], conf[PATH_MAX + 16], link[PATH_MAX + 16], log[PATH_MAX];
	char text[256], state[PATH_MAX], *body, *kept;
	const char *reset[] = { "--socket", sock, "reset", NULL };
	const char *status[] = { "--socket", sock, "status", NULL };

	snprintf(cm, sizeof(cm), "%s/cm", dir);
	snprintf(conf, sizeof(conf), "%s/moat.conf", cm);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	snprintf(state, sizeof(state), "%s/moat.state", dir);
	cr_assert_eq(mkdir(cm, 0755), 0);
	snprintf(text, sizeof(text), "%slc/rqlat_p99_target_us = 5000\n", base);
	configmap_version(cm, 1, text);
	snprintf(link, sizeof(link), "%s/moat.conf", cm);
	cr_assert_eq(symlink("..data/moat.conf", link), 0);
	stop(&daemon_pid);
	unlink(sock);
	daemon_pid = start_moatd(sock, conf, log);
	cr_assert_eq(ctl(out, err, "get", "lc/rqlat_p99_target_us", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "5000\n");

	snprintf(text, sizeof(text), "%slc/rqlat_p99_target_us = 7000\n", base);
	configmap_version(cm, 2, text);
	cr_expect(wait_knob("lc/rqlat_p99_target_us", "7000\n", 50), "the update not loaded");
	cr_expect(wait_log("moat.conf changed: reloading", 1, 0));
	cr_assert_eq(http_get(http_port(), "/metrics", page, sizeof(page), &body), 200);
	cr_expect_eq(series_value(body, "moat_config_reloads_total{result=\"applied\"}"), 1);

	snprintf(text, sizeof(text), "%slc/rqlat_p99_target_us = fast\n", base);
	configmap_version(cm, 3, text);
	cr_expect(wait_log("not applied; the settings are as they were", 1, 5000));
	cr_assert_eq(ctl(out, err, "get", "lc/rqlat_p99_target_us", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "7000\n", "a bad file changed a setting");

	/* moatctl set's value outranks the file's, and is shown */
	cr_assert_eq(ctl(out, err, "set", "lc/rqlat_p99_target_us", "9000"), 0, "%s", err);
	cr_assert_eq(ctl(out, err, "get", "settings/local", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "lc/rqlat_p99_target_us = 9000\n");
	cr_assert_eq(run("moatctl", status, out, err), 0, "%s", err);
	cr_expect(strstr(out, "local overrides, over the config file until 'moatctl reset': "
			      "lc/rqlat_p99_target_us = 9000"), "%s", out);
	cr_assert_eq(http_get(http_port(), "/metrics", page, sizeof(page), &body), 200);
	cr_expect_eq(series_value(body, "moat_local_overrides"), 1);
	snprintf(text, sizeof(text), "%slc/rqlat_p99_target_us = 8000\n", base);
	configmap_version(cm, 4, text);
	cr_expect(wait_log("moat.conf applied", 2, 5000));
	cr_assert_eq(ctl(out, err, "get", "lc/rqlat_p99_target_us", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "9000\n", "the file outranked moatctl set");

	/* reset: the file's value, nothing local, twice */
	cr_assert_eq(run("moatctl", reset, out, err), 0, "%s", err);
	cr_expect_str_eq(out, "dropped = 1\n");
	cr_assert_eq(ctl(out, err, "get", "lc/rqlat_p99_target_us", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "8000\n");
	cr_assert_eq(ctl(out, err, "get", "settings/local", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "\n");
	kept = slurp(state);
	cr_expect(!kept || !strstr(kept, "rqlat"), "the state file kept it: %s", kept);
	free(kept);
	cr_assert_eq(run("moatctl", reset, out, err), 0, "%s", err);
	cr_expect_str_eq(out, "dropped = 0\n");
	cr_assert_eq(http_get(http_port(), "/metrics", page, sizeof(page), &body), 200);
	cr_expect_eq(series_value(body, "moat_local_overrides"), 0);

	/* the watch off: a change waits for SIGHUP */
	snprintf(text, sizeof(text), "%ssettings/watch_config = 0\n"
		 "lc/rqlat_p99_target_us = 6000\n", base);
	configmap_version(cm, 5, text);
	cr_expect(wait_knob("lc/rqlat_p99_target_us", "6000\n", 50));
	snprintf(text, sizeof(text), "%ssettings/watch_config = 0\n"
		 "lc/rqlat_p99_target_us = 4000\n", base);
	configmap_version(cm, 6, text);
	cr_expect_geq(wait_cycles(5, 5000), 5);
	cr_assert_eq(ctl(out, err, "get", "lc/rqlat_p99_target_us", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "6000\n", "loaded with the watch off");
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_expect(wait_knob("lc/rqlat_p99_target_us", "4000\n", 50));
}

Test(moatd, a_second_moatd_on_the_same_state_dir_is_refused_and_changes_nothing)
{
	char sock2[PATH_MAX], conf[PATH_MAX], pid[32];
	const char *args[] = { "--foreground", "--socket", sock2, "--config",
			       conf, "--state-dir", dir, "--listen", "", NULL };
	unsigned long entries;

	snprintf(sock2, sizeof(sock2), "%s/second.sock", dir);
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	contend("enforce");
	cr_assert_geq(wait_throttled(50), 0, "the hog's group was never throttled");
	cr_assert_eq(ctl(out, err, "get", "enforce/journal_entries", NULL), 0);
	entries = strtoul(out, NULL, 10);

	cr_assert_eq(run("moatd", args, out, err), 1, "started: %s", err);
	snprintf(pid, sizeof(pid), "in use by moatd pid %d", (int)daemon_pid);
	cr_expect(strstr(err, pid), "%s", err);
	cr_expect(!strstr(err, "restoring"), "%s", err);
	expect_throttled();
	/* the first one may step on: its journal can only have grown */
	cr_assert_eq(ctl(out, err, "get", "enforce/journal_entries", NULL), 0);
	cr_expect_geq(strtoul(out, NULL, 10), entries, "the journal lost entries");
	stop(&daemon_pid);
	expect_restored("after SIGTERM");
}

/* A request is answered when it arrives, whatever the period. */
Test(moatd, control_requests_are_answered_at_once_at_any_period, .init = own_moatd)
{
	char conf[PATH_MAX];
	struct timespec t0, t1;
	double worst = 0;
	int i;

	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	write_file(conf, "period_ms = 20000\nrules/web = web-* lc\n");
	unlink(sock);
	restart();
	for (i = 0; i < 5; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		cr_assert_eq(ctl(out, err, "get", "version", NULL), 0, "%s", err);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		worst = fmax(worst, (t1.tv_sec - t0.tv_sec) +
				    (t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	cr_log_info("5 requests at a 20 s period: the slowest took %.3f s", worst);
	/* a quarter of the period: waiting for the timer takes up to all */
	cr_expect_lt(worst, 5.0, "answered at the period, not at once");
}

Test(moatd, requests_take_exactly_their_words_and_empty_directories_list)
{
	cr_expect_eq(ctl(out, err, "get", "period_ms mode", NULL), 1);
	cr_expect(strstr(err, "get takes one PATH a request"), "%s", err);
	cr_expect_eq(ctl(out, err, "set", "rules/web", "web-\xff lc"), 1,
		     "a 0xff byte accepted");
	set_runtime("rules/web", "");
	set_runtime("rules/batch", "");
	cr_assert_eq(ctl(out, err, "ls", "rules", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "");
}

/* A rule classifies at once, and the log says so in one line. */
Test(moatd, a_new_rule_takes_effect_at_once)
{
	struct tcg db;
	int i;

	cr_assert_eq(tcg_create("db-1", &db), 0);
	sleep_ms(300);
	cr_assert_eq(ctl(out, err, "get", "groups/db.db-1/path", NULL), 1);
	set_runtime("rules/db", "db-* lc");
	/* rescan_ms is 10 s: within a second is the rule's doing */
	for (i = 0; i < 10; i++) {
		if (!ctl(out, err, "get", "groups/db.db-1/path", NULL))
			break;
		sleep_ms(100);
	}
	cr_expect_lt(i, 10, "db-1 not a group a second after the rule");
	cr_expect(wait_log("groups: 1 found (db.db-1)", 1, 2000));
}

Test(moatd, moat_rqlat_refuses_a_tiny_interval_and_an_empty_cgroup)
{
	const char *tiny[] = { "-i", "0.0001", NULL }, *empty[] = { "--cgroup", "", NULL };

	cr_expect_eq(run("moat-rqlat", tiny, out, err), 2);
	cr_expect(strstr(err, "-i: 0.0001 s is too short: at least 0.01 s"), "%s", err);
	cr_expect_eq(run("moat-rqlat", empty, out, err), 2);
	cr_expect(strstr(err, "--cgroup: '' is not a cgroup"), "%s", err);
}

/*
 * One datagram the service manager's socket got, within 10 s, and the
 * pid that sent it (SO_PASSCRED); the text in @buf.
 */
static pid_t notify_recv(int fd, char *buf, size_t len)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred))];
	} ctrl;
	struct iovec iov = { buf, len - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = &ctrl, .msg_controllen = sizeof(ctrl) };
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct cmsghdr *c;
	ssize_t n;

	cr_assert_eq(poll(&pfd, 1, 10000), 1, "no notification in 10 s");
	n = recvmsg(fd, &mh, 0);
	cr_assert_geq(n, 0, "recvmsg: %s", strerror(errno));
	buf[n] = '\0';
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
			return ((struct ucred *)CMSG_DATA(c))->pid;
	return -1;
}

/* The next notification that is not a watchdog ping. */
static pid_t notify_next(int fd, char *buf, size_t len, int *pings)
{
	pid_t pid;

	while ((pid = notify_recv(fd, buf, len)) && !strcmp(buf, "WATCHDOG=1"))
		++*pings;
	return pid;
}

/*
 * A Type=notify unit (dist/systemd/moatd.service): moatd says READY=1
 * only once its first cycle has found the groups, RELOADING=1 and READY=1
 * around a SIGHUP, STOPPING=1 at SIGTERM, and pings the watchdog every
 * cycle; each from moatd's own pid (the unit's NotifyAccess=main).
 */
Test(moatd, service_manager_hears_ready_reloading_stopping_and_the_watchdog, .init = own_moatd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char env[PATH_MAX + 16];
	char msg[512];
	struct tcg web;
	int fd, on = 1, pings = 0, status;
	pid_t from;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", dir);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)), 0);
	snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", sa.sun_path);
	moatd_env[0] = env;
	moatd_env[1] = "WATCHDOG_USEC=30000000";
	cr_assert_eq(tcg_create("web-ready", &web), 0);
	unlink(sock);
	restart();
	moatd_env[0] = NULL;

	from = notify_next(fd, msg, sizeof(msg), &pings);
	cr_expect_eq(from, daemon_pid, "READY from pid %d, moatd is %d", from, daemon_pid);
	cr_assert(!strncmp(msg, "READY=1\n", 8), "first notification: %s", msg);
	cr_expect(strstr(msg, "STATUS=observe mode, period 100 ms"), "%s", msg);
	/* ready means the first cycle is done: the group is there already */
	cr_assert_eq(ctl(out, err, "get", "groups/web.web-ready/path", NULL), 0,
		     "ready, but the first cycle's group is not: %s", err);

	kill(daemon_pid, SIGHUP);
	from = notify_next(fd, msg, sizeof(msg), &pings);
	cr_assert(!strncmp(msg, "RELOADING=1\nMONOTONIC_USEC=", 27), "%s", msg);
	cr_expect_eq(from, daemon_pid);
	notify_next(fd, msg, sizeof(msg), &pings);
	cr_assert(!strncmp(msg, "READY=1\n", 8), "after the reload: %s", msg);

	while (!pings) {	/* a period is 100 ms */
		notify_recv(fd, msg, sizeof(msg));
		pings += !strcmp(msg, "WATCHDOG=1");
	}
	kill(daemon_pid, SIGTERM);
	notify_next(fd, msg, sizeof(msg), &pings);
	cr_assert(!strncmp(msg, "STOPPING=1\n", 11), "at SIGTERM: %s", msg);
	cr_assert_eq(waitpid(daemon_pid, &status, 0), daemon_pid);
	daemon_pid = 0;
	cr_expect(WIFEXITED(status) && !WEXITSTATUS(status), "exit status %d", status);
	close(fd);
}

/*
 * Root is not needed: as nobody (uid 65534) with exactly CAP_BPF,
 * CAP_PERFMON and CAP_DAC_OVERRIDE (setpriv's ambient set, as a container
 * runtime gives them), moatd attaches its BPF programs, throttles the
 * culprit and puts every value back at SIGTERM.  Without
 * CAP_DAC_OVERRIDE, enforce mode stops the start with one line naming it.
 */
Test(moatd, runs_as_nobody_with_its_capabilities_and_enforces_and_restores, .init = own_moatd)
{
	static const char *const with[] = {
		"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=-all,+bpf,+perfmon,+dac_override",
		"--ambient-caps=-all,+bpf,+perfmon,+dac_override",
		"--bounding-set=-all,+bpf,+perfmon,+dac_override", "--", NULL };
	char conf[PATH_MAX], log[PATH_MAX], cmd[6 * PATH_MAX];
	int i, status;
	pid_t pid;

	if (access(with[0], X_OK))
		skip("no %s (util-linux) to start moatd with a set of capabilities", with[0]);
	stop(&daemon_pid);
	cr_assert_eq(chown(dir, 65534, 65534), 0, "%s", strerror(errno));
	for (i = 0; with[i]; i++)
		moatd_wrap[i] = with[i];
	unlink(sock);
	restart();
	cr_assert_eq(ctl(out, err, "get", "rqlat/active_source", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "bpf\n", "as nobody with CAP_BPF and CAP_PERFMON");
	cr_expect(wait_log("privileges: euid 65534 without CAP_SYS_NICE", 1, 0));
	contend("enforce");
	cr_assert_geq(wait_throttled(50), 0, "as nobody, the hog's group was never throttled");
	expect_throttled();
	stop(&daemon_pid);
	expect_restored("after SIGTERM to moatd running as nobody");

	/* enforce without CAP_DAC_OVERRIDE: refused at start, said why */
	snprintf(conf, sizeof(conf), "%s/enforce.conf", dir);
	snprintf(log, sizeof(log), "%s/nodac.log", dir);
	write_file(conf, "mode = enforce\n");
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups "
		 "--inh-caps=-all,+bpf,+perfmon --ambient-caps=-all,+bpf,+perfmon "
		 "--bounding-set=-all,+bpf,+perfmon -- %s/moatd --foreground "
		 "--socket %s/nodac.sock --state-dir %s/nodac --listen '' --config %s 2>%s",
		 build_dir(), dir, dir, conf, log);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		execl("/bin/sh", "sh", "-c", cmd, NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
	snprintf(cmd, sizeof(cmd), "grep -q 'mode enforce: euid 65534 without CAP_DAC_OVERRIDE' %s", log);
	cr_expect_eq(system(cmd), 0, "the refusal does not name CAP_DAC_OVERRIDE");
}

/*
 * A period the kernel's timer refuses (timerfd_settime failing, here by
 * the fault library: a valid period cannot make it fail on cue): moatd
 * says so, and period_ms keeps telling the period that is in force.  It
 * once went on at the old period while period_ms showed the new one.
 */
Test(moatd, a_period_the_timer_refuses_is_said_and_not_shown, .init = own_moatd)
{
	stop(&daemon_pid);
	/* call 1 arms the start's period; call 2 is the change */
	preload_fault("timerfd_settime", 2, NULL);
	start_with_config("fault.conf", "period_ms = 100\nhttp/listen = \n");
	moatd_env[0] = NULL;
	set_runtime("period_ms", "300");
	cr_expect(wait_log("timerfd_settime call 2 fails", 1, 3000), "the fault did not come");
	cr_expect(wait_log("period_ms 300: the timer refused it", 1, 3000),
		  "moatd did not say the period was refused");
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "100\n", "period_ms shows a period not in force");
	/* and a period the timer takes is taken */
	set_runtime("period_ms", "200");
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "200\n");
}
