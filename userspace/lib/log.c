// SPDX-License-Identifier: GPL-2.0-only
/*
 * Logging to stderr, one line per message, prefixed with the program name.
 * libbpf's own messages come through here too, so a failed BPF load can be
 * explained with the verifier's last lines without flooding every run.
 */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "log.h"

#define LIBBPF_TAIL_LINES 24
#define LIBBPF_LINE_MAX 256

static const char *log_prog = "moat";
static enum moat_log_level log_level = MOAT_LOG_INFO;
static bool log_syslog;

static char libbpf_tail[LIBBPF_TAIL_LINES][LIBBPF_LINE_MAX];
static unsigned int libbpf_tail_next;

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

	if (log_level >= MOAT_LOG_TRACE)
		return vfprintf(stderr, fmt, ap);

	vsnprintf(msg, sizeof(msg), fmt, ap);
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
	va_list ap;

	if (level > log_level)
		return;
	if (log_syslog)
		fprintf(stderr, "<%d>", prio[level]);
	else
		fprintf(stderr, "%s: ", log_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void moat_log_libbpf_tail(void)
{
	unsigned int n = libbpf_tail_next < LIBBPF_TAIL_LINES ?
			 libbpf_tail_next : LIBBPF_TAIL_LINES;
	unsigned int i;

	for (i = libbpf_tail_next - n; i < libbpf_tail_next; i++) {
		const char *line = libbpf_tail[i % LIBBPF_TAIL_LINES];

		fprintf(stderr, "%s: %s\n", log_prog, line);
	}
}

bool moat_log_enabled(enum moat_log_level level)
{
	return level <= log_level;
}
