// SPDX-License-Identifier: GPL-2.0-only
/*
 * Logging to stderr, one line per message, prefixed with the program name.
 * libbpf's own messages come through here too, so a failed BPF load can be
 * explained with the verifier's last lines without flooding every run.
 *
 * A line is one write(2): moatd's loop and its Node publisher's thread log
 * at once, and stderr is unbuffered, so prefix, body and newline written
 * apart interleave with the other thread's (selftests/test_log.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "log.h"

#define LIBBPF_TAIL_LINES 24
#define LIBBPF_LINE_MAX 256

static const char *log_prog = "moat";
static enum moat_log_level log_level = MOAT_LOG_INFO;
static bool log_syslog;

static char libbpf_tail[LIBBPF_TAIL_LINES][LIBBPF_LINE_MAX];
static unsigned int libbpf_tail_next;

/* @len bytes to stderr, whole: a short write or EINTR goes on. */
static void write_all(const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= n;
	}
}

/*
 * One line: @prefix (short: moat_log()'s), the message, a newline, in one
 * write.  A line longer than the stack's buffer is built on the heap;
 * without memory, cut.
 */
static __attribute__((format(printf, 2, 0)))
void log_line(const char *prefix, const char *fmt, va_list ap)
{
	char stack[1024], *buf = stack;
	size_t plen = strlen(prefix), room = sizeof(stack), len;
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	if (n < 0)
		return;
	if (plen + n + 1 > room) {
		char *big = malloc(plen + n + 1);

		if (big) {
			buf = big;
			room = plen + n + 1;
		}
	}
	memcpy(buf, prefix, plen);
	n = vsnprintf(buf + plen, room - plen, fmt, ap);
	len = plen + ((size_t)n < room - plen - 1 ? (size_t)n : room - plen - 1);
	buf[len] = '\n';		/* over the NUL */
	write_all(buf, len + 1);
	if (buf != stack)
		free(buf);
}

static __attribute__((format(printf, 1, 2)))
void log_plain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

static void keep_line(const char *start, size_t len)
{
	char *line = libbpf_tail[libbpf_tail_next++ % LIBBPF_TAIL_LINES];

	if (len >= LIBBPF_LINE_MAX)
		len = LIBBPF_LINE_MAX - 1;
	memcpy(line, start, len);
	line[len] = '\0';
}

static __attribute__((format(printf, 2, 0)))
int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* The verifier log arrives as one long message: keep its last lines. */
	static char msg[1 << 16];
	const char *p, *nl;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_level >= MOAT_LOG_TRACE) {
		write_all(msg, strlen(msg));	/* libbpf's lines, as they come */
		return 0;
	}
	for (p = msg; *p; p = nl + 1) {
		nl = strchrnul(p, '\n');
		if (nl > p)
			keep_line(p, nl - p);
		if (!*nl)
			break;
	}
	return 0;
}

void moat_log_init(const char *prog, enum moat_log_level level)
{
	log_prog = prog;
	log_level = level;
	libbpf_set_print(libbpf_print);
}

void moat_log_syslog_prefix(bool on)
{
	log_syslog = on;
}

void moat_log(enum moat_log_level level, const char *fmt, ...)
{
	/* LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG from syslog(3) */
	static const int prio[] = { 3, 4, 6, 7, 7 };
	char prefix[128];
	va_list ap;

	if (level > log_level)
		return;
	if (log_syslog)
		snprintf(prefix, sizeof(prefix), "<%d>", prio[level]);
	else
		snprintf(prefix, sizeof(prefix), "%s: ", log_prog);
	va_start(ap, fmt);
	log_line(prefix, fmt, ap);
	va_end(ap);
}

void moat_log_libbpf_tail(void)
{
	unsigned int n = libbpf_tail_next < LIBBPF_TAIL_LINES ?
			 libbpf_tail_next : LIBBPF_TAIL_LINES;
	unsigned int i;

	for (i = libbpf_tail_next - n; i < libbpf_tail_next; i++) {
		const char *line = libbpf_tail[i % LIBBPF_TAIL_LINES];

		log_plain("%s: %s", log_prog, line);
	}
}

bool moat_log_enabled(enum moat_log_level level)
{
	return level <= log_level;
}
