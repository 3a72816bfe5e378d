// SPDX-License-Identifier: GPL-2.0-only
/*
 * What answers at the API server's address: any bytes as a response.  The
 * parser never reads or writes out of bounds, and reads the same whether
 * the bytes come whole or in pieces (the first byte of the input picks
 * their size): the same status, body, and verdict.
 */
#include <errno.h>
#include "fuzz.h"
#include "httpc.h"

struct got {
	long status;
	int heads;
	unsigned long long n, sum;	/* body bytes, and a checksum of them */
};

static int on_head(long status, void *ctx)
{
	struct got *g = ctx;

	fuzz_check(status >= 200 && status <= 599 && status != 101);
	g->status = status;
	g->heads++;
	return 0;
}

static int on_data(const char *p, size_t n, void *ctx)
{
	struct got *g = ctx;
	size_t i;

	fuzz_check(g->heads == 1 && n);
	for (i = 0; i < n; i++)
		g->sum = g->sum * 31 + (unsigned char)p[i];
	g->n += n;
	return 0;
}

static int run(const uint8_t *data, size_t size, size_t step, struct got *g,
	       struct moat_httpc *h)
{
	size_t off;
	int err = 0;

	moat_httpc_init(h, on_head, on_data, g);
	for (off = 0; off < size && !err; off += step)
		err = moat_httpc_feed(h, (const char *)data + off,
				      size - off < step ? size - off : step);
	if (!err)
		err = moat_httpc_end(h);
	fuzz_check(err == 0 || err == -EPROTO);
	fuzz_check(!err ? moat_httpc_done(h) : h->err[0] != '\0');
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct moat_httpc a, b;
	struct got ga = { 0 }, gb = { 0 };
	size_t step;
	int ea, eb;

	if (!size)
		return 0;
	step = data[0] % 16 + 1;
	data++;
	size--;
	ea = run(data, size, size ? size : 1, &ga, &a);
	eb = run(data, size, step, &gb, &b);
	fuzz_check(ea == eb);
	fuzz_check(ga.heads == gb.heads && ga.status == gb.status);
	if (!ea)
		fuzz_check(ga.n == gb.n && ga.sum == gb.sum);
	return 0;
}
