/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_LOG_H
#define MOAT_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum moat_log_level {
	MOAT_LOG_ERR,
	MOAT_LOG_WARN,
	MOAT_LOG_INFO,
	MOAT_LOG_DEBUG,
	MOAT_LOG_TRACE,		/* debug, and libbpf's own output */
};

/**
 * moat_log_init() - set the program name that prefixes each line and the
 * most verbose level printed.  Also routes libbpf's messages through
 * moat's log: at MOAT_LOG_TRACE they are printed, otherwise the last few
 * lines are kept for moat_log_libbpf_tail().
 */
void moat_log_init(const char *prog, enum moat_log_level level);

/**
 * moat_log_syslog_prefix() - start each line with its syslog priority
 * ("<3>" for errors .. "<7>" for debug) instead of the program name, as
 * journald and kubectl logs read it from a daemon's stderr.
 */
void moat_log_syslog_prefix(bool on);

void moat_log(enum moat_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** moat_log_enabled() - whether messages of @level are printed. */
bool moat_log_enabled(enum moat_log_level level);

/**
 * moat_log_libbpf_tail() - print the last libbpf lines kept (the
 * verifier's verdict when a load failed), at error level.
 */
void moat_log_libbpf_tail(void);

#define pr_err(...)	moat_log(MOAT_LOG_ERR, __VA_ARGS__)
#define pr_warn(...)	moat_log(MOAT_LOG_WARN, __VA_ARGS__)
#define pr_info(...)	moat_log(MOAT_LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	moat_log(MOAT_LOG_DEBUG, __VA_ARGS__)

#endif /* MOAT_LOG_H */
