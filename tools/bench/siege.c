// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-siege: what a liveness probe sees while other local clients hold
 * moatd's HTTP connections: IDLE connections from 127.0.0.1 that send
 * nothing, and SLOW ones from 127.0.0.10, .11, ... that send a request
 * header one byte a second and never end it (slowloris).  Meanwhile a
 * probe, as kubelet's, opens a new connection from 127.0.0.1 every 200 ms
 * and asks for /healthz with a 1 s timeout.
 *
 *   moat-siege [-i IDLE] [-s SLOW] [-d SECONDS] PORT
 *
 * Prints "key value" lines: probes sent, answered 200, failed, and the
 * answered probes' latency percentiles.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define MAX_CLIENTS	1024

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A connection from 127.0.0.@host to 127.0.0.1:@port; -1 on failure. */
static int connect_from(int port, int host)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(0x7f000000 | host) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One probe: its latency in seconds, or -1 when it got no 200 in 1 s. */
static double probe(int port)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				  "Connection: close\r\n\r\n";
	double start = now();
	char buf[512];
	size_t n = 0;
	int fd = connect_from(port, 1), status = -1;

	if (fd < 0)
		return -1;
	if (write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		close(fd);
		return -1;
	}
	while (n + 1 < sizeof(buf) && now() - start < 1.0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, (int)((1.0 - (now() - start)) * 1000) + 1) <= 0)
			break;
		r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r <= 0)
			break;
		n += r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[n] = '\0';
	close(fd);
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || status != 200)
		return -1;
	return now() - start;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int idle = 12, slow = 40, port, c, i, nidle = 0, nslow = 0;
	static int fds[MAX_CLIENTS];
	double secs = 10, start, next_byte, *lat;
	size_t sent = 0, ok = 0;
	unsigned int byte = 0;

	while ((c = getopt(argc, argv, "i:s:d:h")) != -1) {
		switch (c) {
		case 'i':
			idle = atoi(optarg);
			break;
		case 's':
			slow = atoi(optarg);
			break;
		case 'd':
			secs = atof(optarg);
			break;
		default:
			fprintf(stderr, "usage: moat-siege [-i IDLE] [-s SLOW] [-d SECONDS] PORT\n");
			return 2;
		}
	}
	if (optind != argc - 1 || idle < 0 || slow < 0 || idle + slow > MAX_CLIENTS ||
	    slow > 240 || secs <= 0) {
		fprintf(stderr, "usage: moat-siege [-i IDLE] [-s SLOW <= 240] [-d SECONDS] PORT\n");
		return 2;
	}
	port = atoi(argv[optind]);
	signal(SIGPIPE, SIG_IGN);	/* a client moatd closed writes on */
	for (i = 0; i < idle; i++)
		if ((fds[nidle] = connect_from(port, 1)) >= 0)
			nidle++;
	for (i = 0; i < slow; i++)
		if ((fds[nidle + nslow] = connect_from(port, 10 + i)) >= 0)
			nslow++;
	lat = calloc((size_t)(secs * 5) + 2, sizeof(*lat));
	if (!lat)
		return 1;
	start = now();
	next_byte = start;
	while (now() - start < secs) {
		double l;

		if (now() >= next_byte) {	/* a byte a second from each slow one */
			static const char hdr[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
			char b = byte < sizeof(hdr) - 1 ? hdr[byte] : 'a';

			/* one moatd closed costs that client alone: ignored */
			for (i = 0; i < nslow; i++)
				(void)!write(fds[nidle + i], &b, 1);
			byte++;
			next_byte += 1.0;
		}
		l = probe(port);
		sent++;
		if (l >= 0)
			lat[ok++] = l;
		usleep(200000);
	}
	qsort(lat, ok, sizeof(*lat), cmp_double);
	printf("idle_connections %d\nslow_connections %d\n", nidle, nslow);
	printf("probes %zu\nprobes_ok %zu\nprobes_failed %zu\n", sent, ok, sent - ok);
	if (ok)
		printf("probe_p50_ms %.2f\nprobe_max_ms %.2f\n", lat[ok / 2] * 1e3,
		       lat[ok - 1] * 1e3);
	for (i = 0; i < nidle + nslow; i++)
		close(fds[i]);
	free(lat);
	return sent == ok ? 0 : 1;
}
