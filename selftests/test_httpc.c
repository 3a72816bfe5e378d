// SPDX-License-Identifier: GPL-2.0-only
/*
 * The API client's HTTP/1.1 response parser (httpc.h): framing by length,
 * by chunks and by the connection's end, in pieces of any size, and each
 * malformed response refused with why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include "httpc.h"

struct got {
	long status;
	int heads;
	char body[4096];
	size_t n;
	size_t stop_at;		/* non-zero: data() says stop past this many bytes */
};

static int on_head(long status, void *ctx)
{
	struct got *g = ctx;

	g->status = status;
	g->heads++;
	return 0;
}

static int on_data(const char *p, size_t n, void *ctx)
{
	struct got *g = ctx;

	cr_assert_lt(g->n + n, sizeof(g->body));
	memcpy(g->body + g->n, p, n);
	g->n += n;
	g->body[g->n] = '\0';
	return g->stop_at && g->n > g->stop_at;
}

static struct moat_httpc h;

/* @resp fed in pieces of @step bytes (0: whole); the first error, or end()'s. */
static int parse(const char *resp, size_t step, struct got *g)
{
	size_t len = strlen(resp), off;
	int err;

	memset(g, 0, sizeof(*g));
	moat_httpc_init(&h, on_head, on_data, g);
	for (off = 0; off < len; off += step ? step : len) {
		size_t n = step && len - off > step ? step : len - off;

		err = moat_httpc_feed(&h, resp + off, n);
		if (err)
			return err;
	}
	return moat_httpc_end(&h);
}

static const size_t steps[] = { 0, 1, 2, 3, 7, 64 };

Test(httpc, a_body_of_a_length_in_any_pieces)
{
	const char *r = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			"content-length:  13 \r\n\r\n{\"kind\":\"Pod\"";
	struct got g;
	size_t i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		cr_assert_eq(parse(r, steps[i], &g), 0, "step %zu: %s", steps[i], h.err);
		cr_expect_eq(g.status, 200);
		cr_expect_eq(g.heads, 1);
		cr_expect_str_eq(g.body, "{\"kind\":\"Pod\"");
		cr_expect(moat_httpc_done(&h));
	}
}

Test(httpc, chunks_with_extensions_and_trailers_in_any_pieces)
{
	const char *r = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
			"5\r\nhello\r\n1;ext=1\r\n \r\n"
			"A\r\n0123456789\r\n0\r\nX-Trailer: y\r\n\r\n";
	struct got g;
	size_t i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		cr_assert_eq(parse(r, steps[i], &g), 0, "step %zu: %s", steps[i], h.err);
		cr_expect_eq(g.status, 201);
		cr_expect_str_eq(g.body, "hello 0123456789");
	}
	/* bare LFs, as a lenient reader takes them */
	cr_assert_eq(parse("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n", 1, &g),
		     0, "%s", h.err);
	cr_expect_str_eq(g.body, "abc");
}

Test(httpc, interim_responses_are_skipped_and_no_body_where_none_can_be)
{
	struct got g;

	cr_assert_eq(parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
			   "Content-Length: 2\r\n\r\nok", 1, &g), 0, "%s", h.err);
	cr_expect_eq(g.status, 200);
	cr_expect_eq(g.heads, 1);
	cr_expect_str_eq(g.body, "ok");
	cr_assert_eq(parse("HTTP/1.1 204 No Content\r\n\r\n", 0, &g), 0);
	cr_expect(moat_httpc_done(&h));
	cr_expect_eq(g.n, 0);
	cr_assert_eq(parse("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, &g), 0);
	cr_expect(moat_httpc_done(&h));
}

Test(httpc, a_body_to_the_end_of_the_connection)
{
	struct got g;

	moat_httpc_init(&h, on_head, on_data, &g);
	memset(&g, 0, sizeof(g));
	cr_assert_eq(parse("HTTP/1.0 403 Forbidden\r\n\r\nno", 1, &g), 0, "%s", h.err);
	cr_expect_eq(g.status, 403);
	cr_expect_str_eq(g.body, "no");
	cr_expect(moat_httpc_done(&h));
}

Test(httpc, a_response_cut_short_is_refused)
{
	struct got g;

	cr_expect_eq(parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234", 0, &g), -EPROTO);
	cr_expect_str_eq(h.err, "the response was cut short");
	cr_expect_eq(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", 1, &g),
		     -EPROTO);
	cr_expect_eq(parse("HTTP/1.1 200 OK\r\nContent-Le", 0, &g), -EPROTO);
	cr_expect_eq(parse("", 0, &g), -EPROTO);
	cr_expect_str_eq(h.err, "no response");
}

Test(httpc, malformed_responses_are_refused_with_why)
{
	static const struct { const char *resp, *why; } bad[] = {
		{ "HTTP/2 200 OK\r\n\r\n", "not an HTTP/1.x status line" },
		{ "HTTP/1.1 20 OK\r\n\r\n", "not an HTTP/1.x status line" },
		{ "HTTP/1.1 200OK\r\n\r\n", "not an HTTP/1.x status line" },
		{ "HTTP/1.1 700 Huh\r\n\r\n", "status 700" },
		{ "HTTP/1.1 101 Switching Protocols\r\n\r\n", "status 101" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		  "two Content-Lengths" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "is not a number" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
		  "is too large" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		  "only chunked is read" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		  "only chunked is read" },
		{ "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n", "a folded header field line" },
		{ "HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", "not a header field" },
		{ "HTTP/1.1 200 OK\r\n: empty\r\n\r\n", "not a header field" },
		{ "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "a CR or NUL inside a line" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		  "not a chunk size" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
		  "is too large" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
		  "no CRLF after a chunk" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab", "bytes after the response" },
	};
	struct got g;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse(bad[i].resp, 1, &g), -EPROTO, "%s", bad[i].resp);
		cr_expect(strstr(h.err, bad[i].why), "%s: '%s', not '%s'", bad[i].resp,
			  h.err, bad[i].why);
		/* and once refused, nothing more is taken */
		cr_expect_eq(moat_httpc_feed(&h, "x", 1), -EPROTO);
	}
}

Test(httpc, header_fields_are_bounded)
{
	char *r = malloc(MOAT_HTTPC_HEAD_MAX + 4096);
	struct got g;
	size_t n, i;

	cr_assert_not_null(r);
	/* one line over the bound */
	n = sprintf(r, "HTTP/1.1 200 OK\r\nX: ");
	memset(r + n, 'a', MOAT_HTTPC_LINE_MAX);
	strcpy(r + n + MOAT_HTTPC_LINE_MAX, "\r\n\r\n");
	cr_expect_eq(parse(r, 100, &g), -EPROTO);
	cr_expect(strstr(h.err, "a line over"), "%s", h.err);
	/* many lines, each short, over the bound in all */
	n = sprintf(r, "HTTP/1.1 200 OK\r\n");
	for (i = 0; n < MOAT_HTTPC_HEAD_MAX + 100; i++)
		n += sprintf(r + n, "X-%zu: %0100d\r\n", i, 0);
	strcpy(r + n, "\r\n");
	cr_expect_eq(parse(r, 0, &g), -EPROTO);
	cr_expect(strstr(h.err, "header fields over"), "%s", h.err);
	cr_expect_eq(g.heads, 0);
	free(r);
}

Test(httpc, a_reader_that_says_stop_stops_it)
{
	struct got g;

	memset(&g, 0, sizeof(g));
	g.stop_at = 3;
	moat_httpc_init(&h, on_head, on_data, &g);
	cr_expect_eq(moat_httpc_feed(&h, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
				     strlen("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789")),
		     -ECANCELED);
	cr_expect_eq(moat_httpc_feed(&h, "x", 1), -EPROTO);
}
