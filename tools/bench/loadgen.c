// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-loadgen: an open-loop HTTP/1.1 load generator for the protect
 * benchmark.  Request i is due at start + i / rate whatever happened to
 * the ones before it, and its latency runs from that due time to the end
 * of its response: a server that stalls makes every request due during
 * the stall late, as it does to real clients (no coordinated omission).
 * Requests go out on keep-alive connections, one outstanding each; a
 * request due while every connection is busy waits, and its wait counts.
 *
 *   moat-loadgen [-r RATE] [-d SECONDS] [-c CONNS] [-w WINDOW_MS]
 *                [-s SKIP_S] [-b ON_MS:OFF_MS] HOST PORT PATH
 *
 * -b: arrivals in bursts, as a service's clients bring them: RATE for
 * ON_MS, then none for OFF_MS, over and over (the average is RATE *
 * ON / (ON + OFF)); request i of a burst is due i / RATE into it.
 *
 * Prints "key value" lines: the latency percentiles of the requests due
 * at or after SKIP_S, then per window of WINDOW_MS, "window <start_s>
 * <requests> <p99_us>", for reaction times.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define MAX_CONNS	256
#define RESP_MAX	65536

struct conn {
	int fd;
	bool busy;
	double due;		/* of the request in flight, s */
	char buf[RESP_MAX];
	size_t len;
};

static struct conn conns[MAX_CONNS];
/* The arrivals: RATE, in bursts of @on_s every @on_s + @off_s (off 0: none). */
static double rate = 1000, on_s, off_s;
static size_t per_burst;
static struct sockaddr_in addr;
static char request[512];
static size_t request_len;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "moat-loadgen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void conn_open(int ep, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	int one = 1;

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		die("socket");
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)))
		die("connect");
	fcntl(c->fd, F_SETFL, O_NONBLOCK);
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev))
		die("epoll_ctl");
	c->busy = false;
	c->len = 0;
}

/* The length of the complete response at the start of @c's buffer, or 0. */
static size_t response_len(struct conn *c)
{
	char *end, *cl;
	size_t head;

	c->buf[c->len] = '\0';
	end = strstr(c->buf, "\r\n\r\n");
	if (!end)
		return 0;
	head = end + 4 - c->buf;
	cl = strcasestr(c->buf, "\r\nContent-Length:");
	if (!cl || cl > end)
		return head;
	head += strtoul(cl + 17, NULL, 10);
	return c->len >= head ? head : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The @q quantile of the sorted @v[@n]. */
static double quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * n);

	return n ? v[i ? i - 1 : 0] : NAN;
}

/* When request @i is due, in s from the start. */
static double due_of(size_t i)
{
	if (!per_burst)
		return i / rate;
	return (double)(i / per_burst) * (on_s + off_s) + (i % per_burst) / rate;
}

struct sample {
	double due, lat;
};

static int cmp_due(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	return x->due < y->due ? -1 : x->due > y->due;
}

int main(int argc, char **argv)
{
	double secs = 10, skip = 0, window = 1.0, start, t;
	char trail;
	unsigned long errors = 0;
	size_t nconns = 16, total, sent = 0, done = 0, i, n, w;
	struct sample *samples;
	double *lat;
	int ep, c;

	while ((c = getopt(argc, argv, "r:d:c:w:s:b:")) != -1) {
		switch (c) {
		case 'r': rate = atof(optarg); break;
		case 'd': secs = atof(optarg); break;
		case 'c': nconns = strtoul(optarg, NULL, 10); break;
		case 'w': window = atof(optarg) / 1000; break;
		case 's': skip = atof(optarg); break;
		case 'b':
			if (sscanf(optarg, "%lf:%lf%c", &on_s, &off_s, &trail) != 2 ||
			    !(on_s > 0) || !(off_s > 0)) {
				fprintf(stderr, "moat-loadgen: -b: '%s' is not ON_MS:OFF_MS, both over 0\n",
					optarg);
				return 2;
			}
			on_s /= 1000;
			off_s /= 1000;
			break;
		default: goto usage;
		}
	}
	if (argc - optind != 3 || rate <= 0 || secs <= 0 || window <= 0 ||
	    !nconns || nconns > MAX_CONNS)
		goto usage;
	addr.sin_family = AF_INET;
	addr.sin_port = htons(atoi(argv[optind + 1]));
	if (inet_pton(AF_INET, argv[optind], &addr.sin_addr) != 1) {
		fprintf(stderr, "moat-loadgen: HOST: '%s' is not an IPv4 address\n",
			argv[optind]);
		return 2;
	}
	request_len = snprintf(request, sizeof(request),
			       "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n",
			       argv[optind + 2], argv[optind]);
	if (off_s > 0) {
		per_burst = (size_t)ceil(rate * on_s);
		if (!per_burst)
			per_burst = 1;
	}
	for (total = 0; due_of(total) < secs; total++)
		;
	samples = calloc(total, sizeof(*samples));
	lat = calloc(total, sizeof(*lat));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!samples || !lat || ep < 0)
		die("setup");
	for (i = 0; i < nconns; i++)
		conn_open(ep, &conns[i]);

	start = now_s();
	while (done + errors < total) {	/* errors: requests lost */
		struct epoll_event evs[MAX_CONNS];
		double next;
		struct timespec timeout;
		int k, nev;

		/* Send every request now due, while a connection is free. */
		t = now_s() - start;
		for (i = 0; i < nconns && sent < total && due_of(sent) <= t; i++) {
			struct conn *cn = &conns[i];

			if (cn->busy)
				continue;
			if (write(cn->fd, request, request_len) != (ssize_t)request_len) {
				errors++;
				sent++;
				close(cn->fd);
				conn_open(ep, cn);
				continue;
			}
			cn->busy = true;
			cn->due = due_of(sent);
			sent++;
		}
		for (i = 0; i < nconns && conns[i].busy; i++)
			;
		next = sent < total && i < nconns ?
		       due_of(sent) - (now_s() - start) : 0.05;	/* a response */
		if (next < 0)
			next = 0;
		timeout.tv_sec = (time_t)next;
		timeout.tv_nsec = (long)((next - timeout.tv_sec) * 1e9);
		if (now_s() - start > secs + 10) {	/* the rest never came */
			errors = total - done;
			break;
		}
		/* ns, not ms: a due time is not rounded up by up to 1 ms. */
		nev = epoll_pwait2(ep, evs, MAX_CONNS, &timeout, NULL);
		if (nev < 0 && errno != EINTR)
			die("epoll_wait");
		for (k = 0; k < nev; k++) {
			struct conn *cn = evs[k].data.ptr;
			ssize_t r = read(cn->fd, cn->buf + cn->len,
					 RESP_MAX - 1 - cn->len);
			size_t len;

			if (r <= 0) {
				if (r < 0 && errno == EAGAIN)
					continue;
				if (cn->busy)
					errors++;
				close(cn->fd);
				conn_open(ep, cn);
				continue;
			}
			cn->len += r;
			len = response_len(cn);
			if (!len || !cn->busy)
				continue;
			samples[done].due = cn->due;
			samples[done++].lat = now_s() - start - cn->due;
			if (strncmp(cn->buf, "HTTP/1.1 200", 12))
				errors++;
			memmove(cn->buf, cn->buf + len, cn->len - len);
			cn->len -= len;
			cn->busy = false;
		}
	}
	t = now_s() - start;

	qsort(samples, done, sizeof(*samples), cmp_due);
	for (i = n = 0; i < done; i++)
		if (samples[i].due >= skip)
			lat[n++] = samples[i].lat * 1e6;
	qsort(lat, n, sizeof(*lat), cmp_double);
	printf("requests %zu\nerrors %lu\nrate %.1f\n", done, errors, done / t);
	printf("measured %zu\np50_us %.1f\np99_us %.1f\np999_us %.1f\n", n,
	       quantile(lat, n, 0.5), quantile(lat, n, 0.99),
	       quantile(lat, n, 0.999));
	for (i = w = 0; i < done; w++) {
		double end = (w + 1) * window;

		for (n = 0; i < done && samples[i].due < end; i++)
			lat[n++] = samples[i].lat * 1e6;
		qsort(lat, n, sizeof(*lat), cmp_double);
		printf("window %.3f %zu %.1f\n", w * window, n,
		       quantile(lat, n, 0.99));
	}
	return 0;
usage:
	fprintf(stderr, "usage: moat-loadgen [-r RATE] [-d SECONDS] [-c CONNS] [-w WINDOW_MS] [-s SKIP_S] [-b ON_MS:OFF_MS] HOST PORT PATH\n");
	return 2;
}
