/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_HTTPC_H
#define MOAT_HTTPC_H

#include <stdbool.h>
#include <stddef.h>

/*
 * An HTTP/1.1 response as a client reads it (RFC 9112), fed in whatever
 * pieces the connection gives: the status line, the header fields, and
 * the body framed by Transfer-Encoding: chunked, Content-Length, or the
 * connection's end.  The body is handed over as it is decoded, never
 * kept: a list of 10 000 pods or a watch that lasts an hour take the same
 * memory.  Interim (1xx) responses are skipped.  No pipelining: one
 * response per connection, so bytes after it are an error.
 *
 * A response is refused (-EPROTO) for a malformed status line, a header
 * field line over MOAT_HTTPC_LINE_MAX or header fields over
 * MOAT_HTTPC_HEAD_MAX in all, an invalid or conflicting Content-Length,
 * a transfer coding other than chunked, a malformed chunk, or a body cut
 * short; what was wrong is in @err.
 */
#define MOAT_HTTPC_LINE_MAX	8192
#define MOAT_HTTPC_HEAD_MAX	65536

struct moat_httpc {
	/* The caller's: */
	/* The final response's status, its header fields read; non-zero stops. */
	int (*head)(long status, void *ctx);
	/* Body bytes, decoded; non-zero stops. */
	int (*data)(const char *p, size_t n, void *ctx);
	void *ctx;
	/* The parser's: */
	int state;
	long status;
	bool chunked, has_length;
	unsigned long long left;	/* of the body or the chunk */
	size_t head_bytes;
	size_t n;			/* in @line */
	char line[MOAT_HTTPC_LINE_MAX];
	char err[128];
};

/** moat_httpc_init() - ready @h for a response; @head may be NULL. */
void moat_httpc_init(struct moat_httpc *h,
		     int (*head)(long status, void *ctx),
		     int (*data)(const char *p, size_t n, void *ctx), void *ctx);

/**
 * moat_httpc_feed() - the next @n bytes of the response.
 *
 * Return: 0; -EPROTO for a malformed response (why in @h->err);
 * -ECANCELED where a callback returned non-zero.  Either error ends it.
 */
int moat_httpc_feed(struct moat_httpc *h, const char *p, size_t n);

/**
 * moat_httpc_end() - the connection ended.
 *
 * Return: 0 where the response is whole (its body ends at the
 * connection's end where it has neither length nor chunks), -EPROTO
 * where it was cut short.
 */
int moat_httpc_end(struct moat_httpc *h);

/** moat_httpc_done() - whether the whole response has been read. */
bool moat_httpc_done(const struct moat_httpc *h);

#endif /* MOAT_HTTPC_H */
