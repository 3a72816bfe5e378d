// SPDX-License-Identifier: GPL-2.0-only
/*
 * An HTTP/1.1 response, parsed as it arrives (httpc.h): a state machine
 * over lines (status, header fields, chunk sizes, trailers) and counted
 * runs of body bytes, which go to the caller without being copied.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "httpc.h"

enum {
	S_STATUS,	/* the status line */
	S_HEADER,	/* header field lines, to the empty one */
	S_BODY,		/* @left bytes of body */
	S_BODY_EOF,	/* body to the connection's end */
	S_CHUNK_SIZE,	/* a chunk's size line */
	S_CHUNK_DATA,	/* @left bytes of a chunk */
	S_CHUNK_END,	/* the CRLF after a chunk */
	S_TRAILER,	/* trailer field lines, to the empty one */
	S_DONE,
	S_ERR,
};

/* Past 2^60 a length is no length this client will read. */
#define LENGTH_MAX	(1ULL << 60)

void moat_httpc_init(struct moat_httpc *h,
		     int (*head)(long status, void *ctx),
		     int (*data)(const char *p, size_t n, void *ctx), void *ctx)
{
	memset(h, 0, offsetof(struct moat_httpc, line));
	h->head = head;
	h->data = data;
	h->ctx = ctx;
	h->state = S_STATUS;
	h->err[0] = '\0';
}

bool moat_httpc_done(const struct moat_httpc *h)
{
	return h->state == S_DONE;
}

__attribute__((format(printf, 2, 3)))
static int bad(struct moat_httpc *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->err, sizeof(h->err), fmt, ap);
	va_end(ap);
	h->state = S_ERR;
	return -EPROTO;
}

/* "HTTP/1.x NNN[ reason]" */
static int status_line(struct moat_httpc *h, const char *l)
{
	if (strncmp(l, "HTTP/1.", 7) || l[7] < '0' || l[7] > '9' || l[8] != ' ' ||
	    strspn(l + 9, "0123456789") != 3 || (l[12] && l[12] != ' '))
		return bad(h, "not an HTTP/1.x status line: '%.40s'", l);
	h->status = strtol(l + 9, NULL, 10);
	if (h->status < 100 || h->status > 599)
		return bad(h, "status %ld", h->status);
	if (h->status == 101)
		return bad(h, "status 101: no protocol switch was asked for");
	h->chunked = h->has_length = false;
	h->state = S_HEADER;
	return 0;
}

/* Content-Length: 1*DIGIT; a repeat must say the same. */
static int content_length(struct moat_httpc *h, const char *v)
{
	unsigned long long n = 0;
	const char *p;

	if (!*v || strspn(v, "0123456789") != strlen(v))
		return bad(h, "Content-Length '%.40s' is not a number", v);
	for (p = v; *p; p++) {
		n = n * 10 + (unsigned)(*p - '0');
		if (n > LENGTH_MAX)
			return bad(h, "Content-Length %.40s is too large", v);
	}
	if (h->has_length && n != h->left)
		return bad(h, "two Content-Lengths, %llu and %llu", h->left, n);
	h->has_length = true;
	h->left = n;
	return 0;
}

static int header_line(struct moat_httpc *h, char *l)
{
	char *colon, *v, *end;
	size_t n;

	if (*l == ' ' || *l == '\t')
		return bad(h, "a folded header field line");
	colon = strchr(l, ':');
	n = colon ? (size_t)(colon - l) : 0;
	if (!n || strspn(l, "!#$%&'*+-.^_`|~0123456789"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != n)
		return bad(h, "not a header field: '%.40s'", l);
	*colon = '\0';
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (end = v + strlen(v); end > v && (end[-1] == ' ' || end[-1] == '\t'); end--)
		;
	*end = '\0';
	if (!strcasecmp(l, "Content-Length"))
		return content_length(h, v);
	if (!strcasecmp(l, "Transfer-Encoding")) {
		if (h->chunked || strcasecmp(v, "chunked"))
			return bad(h, "transfer coding '%.40s': only chunked is read", v);
		h->chunked = true;
	}
	return 0;
}

/* The empty line after the header fields: the body's framing. */
static int head_end(struct moat_httpc *h)
{
	if (h->status < 200) {		/* interim: the final one follows */
		h->state = S_STATUS;
		return 0;
	}
	if (h->head && h->head(h->status, h->ctx)) {
		h->state = S_ERR;
		return -ECANCELED;
	}
	if (h->status == 204 || h->status == 304)
		h->state = S_DONE;
	else if (h->chunked)
		h->state = S_CHUNK_SIZE;
	else if (h->has_length)
		h->state = h->left ? S_BODY : S_DONE;
	else
		h->state = S_BODY_EOF;
	return 0;
}

/* 1*HEXDIG [ chunk-ext ] */
static int chunk_size(struct moat_httpc *h, const char *l)
{
	unsigned long long n = 0;
	const char *p = l;

	for (; *p && strchr("0123456789abcdefABCDEF", *p); p++) {
		if (n >= LENGTH_MAX)	/* below it, n * 16 + 15 fits */
			return bad(h, "chunk size %.40s is too large", l);
		n = n * 16 + (unsigned)(*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
	}
	if (p == l || (*p && *p != ';' && *p != ' ' && *p != '\t'))
		return bad(h, "not a chunk size: '%.40s'", l);
	h->left = n;
	h->state = n ? S_CHUNK_DATA : S_TRAILER;
	return 0;
}

/* A whole line, its CRLF (or a bare LF) cut off. */
static int line(struct moat_httpc *h, char *l)
{
	switch (h->state) {
	case S_STATUS:
		return status_line(h, l);
	case S_HEADER:
		return *l ? header_line(h, l) : head_end(h);
	case S_CHUNK_SIZE:
		return chunk_size(h, l);
	case S_CHUNK_END:
		if (*l)
			return bad(h, "no CRLF after a chunk");
		h->state = S_CHUNK_SIZE;
		return 0;
	case S_TRAILER:
		if (!*l)
			h->state = S_DONE;
		return 0;
	}
	return bad(h, "internal: a line in state %d", h->state);
}

static bool counts_to_head(int state)
{
	return state == S_STATUS || state == S_HEADER || state == S_TRAILER;
}

int moat_httpc_feed(struct moat_httpc *h, const char *p, size_t n)
{
	const char *end = p + n;
	size_t len;
	int err;

	while (p < end) {
		switch (h->state) {
		case S_BODY:
		case S_CHUNK_DATA:
		case S_BODY_EOF: {
			size_t k = end - p;

			if (h->state != S_BODY_EOF && k > h->left)
				k = h->left;
			if (h->data(p, k, h->ctx)) {
				h->state = S_ERR;
				return -ECANCELED;
			}
			p += k;
			if (h->state == S_BODY_EOF)
				break;
			h->left -= k;
			if (!h->left)
				h->state = h->state == S_BODY ? S_DONE : S_CHUNK_END;
			break;
		}
		case S_DONE:
			return bad(h, "bytes after the response");
		case S_ERR:
			return -EPROTO;
		default: {
			const char *nl = memchr(p, '\n', end - p);
			size_t k = (nl ? (size_t)(nl - p) : (size_t)(end - p));

			if (h->n + k >= sizeof(h->line))
				return bad(h, "a line over %zu bytes", sizeof(h->line) - 1);
			if (counts_to_head(h->state)) {
				h->head_bytes += k + !!nl;
				if (h->head_bytes > MOAT_HTTPC_HEAD_MAX)
					return bad(h, "header fields over %d bytes",
						   MOAT_HTTPC_HEAD_MAX);
			}
			memcpy(h->line + h->n, p, k);
			h->n += k;
			p += k;
			if (!nl)
				break;
			p++;
			len = h->n;
			h->n = 0;
			if (len && h->line[len - 1] == '\r')
				len--;
			h->line[len] = '\0';
			if (strcspn(h->line, "\r") != len)
				return bad(h, "a CR or NUL inside a line");
			err = line(h, h->line);
			if (err)
				return err;
		}
		}
	}
	return 0;
}

int moat_httpc_end(struct moat_httpc *h)
{
	switch (h->state) {
	case S_DONE:
		return 0;
	case S_BODY_EOF:
		h->state = S_DONE;
		return 0;
	case S_ERR:
		return -EPROTO;
	case S_STATUS:
		if (!h->n && !h->status)
			return bad(h, "no response");
		break;
	}
	return bad(h, "the response was cut short");
}
