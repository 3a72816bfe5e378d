// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatd and its tools against bad input and faults (the second outside
 * battery, 2026-12-05): configs that are not files or never end, clients
 * that never speak or never answer, requests of two lines, rules that
 * cannot be, a command line that would hide a bad file, a file given as
 * a cgroup.  Each refused whole, with words that name what was wrong,
 * and nothing that ran stops running.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include "helpers.h"
#include "moatd_harness.h"

/* A moatd of its own started on @conf (its own socket and state): rc. */
static int start_on(const char *conf, const char *listen, char *so, char *se)
{
	char sock2[PATH_MAX], state[PATH_MAX];
	const char *args[] = { "--foreground", "--socket", sock2, "--config", conf,
			       "--state-dir", state, "--cgroup-root", tcg_prefix_dir(),
			       listen ? "--listen" : NULL, listen, NULL };

	snprintf(state, sizeof(state), "%s/other-state", dir);
	snprintf(sock2, sizeof(sock2), "%s/other.sock", dir);
	return run("moatd", args, so, se);
}

static long ms_since(const struct timespec *t0)
{
	return elapsed_ms(t0);
}

/*
 * A config that never ends (a link to /dev/zero) or is one huge line:
 * refused at once with the file named, at the start and at a reload.
 * moatd read the first until the OOM killer came (24 GB of RSS).
 */
Test(moatd, a_config_without_end_is_refused_at_start_and_at_reload)
{
	char link[PATH_MAX], huge[PATH_MAX], conf[PATH_MAX], *text;
	struct timespec t0;
	FILE *f;
	int i;

	snprintf(link, sizeof(link), "%s/zero.conf", dir);
	cr_assert_eq(symlink("/dev/zero", link), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(start_on(link, NULL, out, err), 1);
	cr_expect(strstr(err, "zero.conf: not a regular file (a character device)"),
		  "%s", err);
	cr_expect_lt(ms_since(&t0), 10000, "took %ld ms", ms_since(&t0));

	/* one line of 2 MiB: bounded, refused */
	snprintf(huge, sizeof(huge), "%s/huge.conf", dir);
	f = fopen(huge, "w");
	cr_assert_not_null(f);
	for (i = 0; i < (2 << 20) / 64; i++)
		fputs("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", f);
	fclose(f);
	cr_expect_eq(start_on(huge, NULL, out, err), 1);
	cr_expect(strstr(err, "huge.conf:1: line longer than"), "%s", err);

	/* the running moatd's config swapped for the link: kept settings */
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	cr_assert_eq(unlink(conf), 0);
	cr_assert_eq(symlink("/dev/zero", conf), 0);
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_expect(wait_log("moat.conf: not a regular file (a character device)", 1, 5000),
		  "the reload did not say why");
	cr_expect(wait_log("reload: ", 1, 5000));
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "100\n", "the settings did not stay");
	text = slurp(huge);
	free(text);
}

/*
 * A FIFO in place of the config: a reload is refused at once, and the
 * control socket, HTTP and the cycle go on.  moatd blocked in open()
 * until someone wrote to the FIFO.
 */
Test(moatd, a_fifo_as_config_is_refused_and_stalls_nothing)
{
	char conf[PATH_MAX], *body;
	double cycles;
	int i;

	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	cr_assert_eq(unlink(conf), 0);
	cr_assert_eq(mkfifo(conf, 0600), 0);
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_expect(wait_log("moat.conf: not a regular file (a FIFO)", 1, 5000),
		  "the reload did not refuse the FIFO");
	for (i = 0; i < 5; i++) {
		cr_expect_eq(ctl(out, err, "get", "version", NULL), 0, "the socket: %s", err);
		cr_expect_eq(http_get(http_port(), "/healthz", page, sizeof(page), &body), 200,
			     "/healthz: %.200s", page);
	}
	cycles = get_number("cycle_us");
	cr_expect(!isnan(cycles), "no cycle");
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "100\n");
}

/*
 * A moatd that accepts and never answers: moatctl gives up within its
 * --timeout with a clear message, not forever.
 */
Test(moatd, moatctl_gives_up_on_a_silent_moatd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[PATH_MAX];
	const char *args[] = { "--socket", path, "--timeout", "1", "get", "version", NULL };
	const char *bad[] = { "--timeout", "-1", "get", "version", NULL };
	struct timespec t0;
	int lfd, cfd;

	snprintf(path, sizeof(path), "%s/silent.sock", dir);
	strcpy(sa.sun_path, path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(lfd, 4), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(run("moatctl", args, out, err), 1);
	cr_expect_lt(ms_since(&t0), 5000, "moatctl waited %ld ms", ms_since(&t0));
	cr_expect(strstr(err, "did not answer within 1 s"), "%s", err);
	cfd = accept(lfd, NULL, NULL);	/* it was accepted, and said nothing */
	cr_expect_geq(cfd, 0);
	close(cfd);
	close(lfd);
	cr_expect_eq(run("moatctl", bad, out, err), 2);
	cr_expect(strstr(err, "--timeout '-1'"), "%s", err);
}

/*
 * A client that holds every one of the socket's connections, idle, and
 * opens more: the operator's moatctl still gets in, every time (the
 * connection idle longest makes room).  It failed 30 of 30 tries.
 */
Test(moatd, idle_connections_never_lock_moatctl_out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fds[20 * 10], n = 0, i, j, ok = 0;

	strcpy(sa.sun_path, sock);
	for (i = 0; i < 10; i++) {
		for (j = 0; j < 20; j++) {
			fds[n] = socket(AF_UNIX, SOCK_STREAM, 0);
			if (!connect(fds[n], (struct sockaddr *)&sa, sizeof(sa)))
				n++;
			else
				close(fds[n]);
		}
		sleep_ms(20);	/* moatd accepts them */
		ok += ctl(out, err, "get", "version", NULL) == 0;
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	cr_expect_eq(ok, 10, "moatctl got in %d times of 10: %s", ok, err);
}

/*
 * A request is one line: a path with a newline in it is refused by
 * moatctl, and two lines sent as one request are refused whole by
 * moatd, never answered for the first and the second dropped.
 */
Test(moatd, a_request_of_two_lines_is_refused_whole)
{
	const char *args[] = { "--socket", sock, "get", "mode\nperiod_ms", NULL };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char req[] = "get version\nset mode enforce\n";
	char reply[512];
	size_t got = 0;
	ssize_t k;
	int fd;

	cr_expect_eq(run("moatctl", args, out, err), 1);
	cr_expect(strstr(err, "a path has no control characters"), "%s", err);
	cr_expect_str_empty(out);

	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(send(fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	while (got < sizeof(reply) - 1 && (k = recv(fd, reply + got, sizeof(reply) - 1 - got, 0)) > 0)
		got += k;
	reply[got] = '\0';
	close(fd);
	cr_expect(!strncmp(reply, "error EINVAL a request is one line", 34), "%s", reply);
	cr_assert_eq(ctl(out, err, "get", "mode", NULL), 0);
	cr_expect_str_eq(out, "observe\n");
}

/* A new rule with a bad value: the same words as an existing rule's. */
Test(moatd, a_bad_new_rule_says_what_a_rule_is)
{
	static const char *const bad[] = { "../* lc", "x LC", NULL };
	char glob[600];
	int i;

	memset(glob, 'g', 505);
	strcpy(glob + 505, " lc");
	for (i = 0; i < 3; i++) {
		const char *v = bad[i] ? bad[i] : glob;
		const char *args[] = { "--socket", sock, "set", "--runtime", "rules/new", v, NULL };
		const char *old[] = { "--socket", sock, "set", "--runtime", "rules/web", v, NULL };

		cr_expect_eq(run("moatctl", args, out, err), 1);
		cr_expect(strstr(err, "rules/new: invalid value") &&
			  strstr(err, "expected '<glob> <class>'"),
			  "a new rule '%.40s': %s", v, err);
		cr_expect_eq(run("moatctl", old, out, err), 1);
		cr_expect(strstr(err, "expected '<glob> <class>'"), "an existing rule: %s", err);
		cr_expect_eq(ctl(out, err, "get", "rules/new", NULL), 1, "the bad rule was made");
	}
}

/*
 * A bad http/listen in the config, with --listen on the command line
 * over it: the file is checked whole, so moatd does not start on it, and
 * a reload to it changes nothing.
 */
Test(moatd, a_bad_line_is_refused_whatever_the_command_line_sets)
{
	char conf[PATH_MAX];

	snprintf(conf, sizeof(conf), "%s/listen.conf", dir);
	write_file(conf, "period_ms = 100\nhttp/listen = 127.0.0.1:99999\n");
	cr_expect_eq(start_on(conf, "127.0.0.1:0", out, err), 1);
	cr_expect(strstr(err, "listen.conf:2: http/listen: invalid value '127.0.0.1:99999'"),
		  "%s", err);
	/* said once, and the last line names no unrelated errno */
	cr_expect_eq(count_of(err, "listen.conf:2:"), 1, "%s", err);
	cr_expect(strstr(err, "not started: the reason is above") &&
		  !strstr(err, "No such file"), "%s", err);

	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	write_file(conf, "period_ms = 200\nhttp/listen = 127.0.0.1:99999\n");
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0);
	cr_expect(wait_log("not applied; the settings are as they were", 1, 5000));
	cr_assert_eq(ctl(out, err, "get", "period_ms", NULL), 0, "%s", err);
	cr_expect_str_eq(out, "100\n");
}

/* A config that starts with a UTF-8 byte order mark: refused, and named. */
Test(moatd, a_byte_order_mark_is_named)
{
	char conf[PATH_MAX];

	snprintf(conf, sizeof(conf), "%s/bom.conf", dir);
	write_file(conf, "\xef\xbb\xbfperiod_ms = 100\n");
	cr_expect_eq(start_on(conf, NULL, out, err), 1);
	cr_expect(strstr(err, "bom.conf:1: starts with a UTF-8 byte order mark (EF BB BF)"),
		  "%s", err);
}

/* A file in a cgroup is no cgroup: refused as a path that is none. */
Test(moatd, moat_rqlat_refuses_a_file_as_a_cgroup)
{
	char file[PATH_MAX + 16];
	struct tcg cg;
	const char *watch[] = { "-d", "1", "--watch", file, NULL };
	const char *cgroup[] = { "-d", "1", "--cgroup", file, NULL };

	cr_assert_eq(tcg_create("web-file", &cg), 0);
	snprintf(file, sizeof(file), "%s/%s", cg.dir,
		 tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares");
	cr_expect_eq(run("moat-rqlat", watch, out, err), 1);
	cr_expect(strstr(err, "no such cgroup"), "%s", err);
	cr_expect_eq(run("moat-rqlat", cgroup, out, err), 1);
	cr_expect(strstr(err, "no such cgroup"), "%s", err);
}
