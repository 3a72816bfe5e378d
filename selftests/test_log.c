// SPDX-License-Identifier: GPL-2.0-only
/*
 * The log: each message is one line, whole, even while two threads log at
 * once (moatd's loop and its Node publisher do), so journald and `kubectl
 * logs` never see one line's prefix before another's body.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include "log.h"

#define LINES	20000
#define BODY	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

static void *logger(void *arg)
{
	const char *who = arg;
	int i;

	for (i = 0; i < LINES; i++)
		pr_info("thread %s line %d %s", who, i, BODY);
	return NULL;
}

/* Every line "<prefix>thread A|B line N BODY", each N once per thread. */
static void expect_whole_lines(const char *file, const char *prefix)
{
	FILE *f = fopen(file, "r");
	static char seen[2][LINES];
	char line[1024], who, body[96];
	size_t plen = strlen(prefix);
	int n, bad = 0, total = 0;

	cr_assert_not_null(f);
	memset(seen, 0, sizeof(seen));
	while (fgets(line, sizeof(line), f)) {
		total++;
		if (strncmp(line, prefix, plen) ||
		    sscanf(line + plen, "thread %c line %d %80s", &who, &n, body) != 3 ||
		    (who != 'A' && who != 'B') || n < 0 || n >= LINES ||
		    strcmp(body, BODY) || line[strlen(line) - 1] != '\n') {
			if (bad++ < 3)
				cr_log_error("torn line %d: %s", total, line);
			continue;
		}
		seen[who - 'A'][n]++;
	}
	fclose(f);
	cr_expect_eq(bad, 0, "%d of %d lines torn by the other thread's", bad, total);
	for (n = 0; n < LINES; n++)
		if (seen[0][n] != 1 || seen[1][n] != 1)
			break;
	cr_expect_eq(n, LINES, "line %d of a thread not there exactly once", n);
}

static void two_threads_log(bool syslog, const char *prefix)
{
	char file[] = "/tmp/moat-log-XXXXXX";
	int fd = mkstemp(file), status;
	pid_t pid;

	cr_assert_geq(fd, 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		pthread_t a, b;

		dup2(fd, 2);
		moat_log_init("moat-test", MOAT_LOG_INFO);
		moat_log_syslog_prefix(syslog);
		pthread_create(&a, NULL, logger, "A");
		pthread_create(&b, NULL, logger, "B");
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	close(fd);
	expect_whole_lines(file, prefix);
	unlink(file);
}

Test(log, two_threads_never_tear_a_line)
{
	two_threads_log(false, "moat-test: ");
}

Test(log, with_the_syslog_prefix_either)
{
	two_threads_log(true, "<6>");
}

/* A line longer than the stack's buffer (a path near PATH_MAX) is whole. */
Test(log, a_long_line_is_whole)
{
	char file[] = "/tmp/moat-log-XXXXXX", msg[6000], got[7000];
	int fd = mkstemp(file), saved = dup(2);
	FILE *f;

	cr_assert_geq(fd, 0);
	memset(msg, 'p', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	moat_log_init("moat-test", MOAT_LOG_INFO);
	moat_log_syslog_prefix(false);
	dup2(fd, 2);
	pr_err("%s", msg);
	dup2(saved, 2);
	close(saved);
	f = fdopen(fd, "r");
	rewind(f);
	cr_assert_not_null(fgets(got, sizeof(got), f));
	fclose(f);
	unlink(file);
	cr_expect_eq(strlen(got), strlen("moat-test: ") + strlen(msg) + 1);
	cr_expect(!strncmp(got, "moat-test: ", 11) && !strncmp(got + 11, msg, strlen(msg)) &&
		  got[strlen(got) - 1] == '\n', "not the line logged");
}
