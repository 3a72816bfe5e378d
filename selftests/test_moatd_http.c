// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatd over HTTP: /metrics (promtool, a real Prometheus), /hints,
 * /healthz, and the clients that would keep them from answering.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <zlib.h>
#include "cgroup.h"
#include "endpoint.h"
#include "helpers.h"
#include "journal.h"
#include "moatd_harness.h"
#include "resctrl.h"
#include "tasksched.h"

/* Whether the text format's histogram of @group is sound. */
static void expect_sound_histogram(const char *text, const char *group)
{
	char key[128], *line, *copy = strdup(text), *save;
	double prev = -1, inf = -1, count = -2, le_prev = 0;
	int buckets = 0;

	snprintf(key, sizeof(key), "{group=\"%s\"", group);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *le;

		if (!strstr(line, key))
			continue;
		if (!strncmp(line, "moat_group_rqlat_seconds_count", 30))
			count = strtod(strrchr(line, ' '), NULL);
		if (strncmp(line, "moat_group_rqlat_seconds_bucket", 31))
			continue;
		le = strstr(line, "le=\"");
		cr_assert_not_null(le, "%s", line);
		if (!strncmp(le + 4, "+Inf", 4)) {
			inf = strtod(strrchr(line, ' '), NULL);
			continue;
		}
		cr_expect_gt(strtod(le + 4, NULL), le_prev, "le not increasing: %s", line);
		le_prev = strtod(le + 4, NULL);
		cr_expect_geq(strtod(strrchr(line, ' '), NULL), prev,
			      "buckets not cumulative: %s", line);
		prev = strtod(strrchr(line, ' '), NULL);
		buckets++;
	}
	free(copy);
	cr_expect_gt(buckets, 10, "%s: %d buckets", group, buckets);
	cr_expect_eq(inf, count, "%s: +Inf %.0f, _count %.0f", group, inf, count);
	cr_expect_geq(inf, prev);
	cr_expect_gt(count, 0, "%s: no waits counted", group);
}

/*
 * Every stage of the cycle has its CPU time; they add up to no more than
 * the main thread's (where the cycle runs); the sources, with two groups
 * to read, took some.
 */
static void expect_stage_times(const char *text)
{
	static const char *const stages[] = { "groups", "node", "delay", "observe",
					      "cpi", "rdt", "units", "enforce", "commit" };
	unsigned long long thread_ns = 0;
	char path[64], key[96];
	double sum = 0, v[9];
	const char *p;
	FILE *f;
	size_t i;

	for (i = 0; i < 9; i++) {
		snprintf(key, sizeof(key), "moat_cycle_cpu_seconds_total{stage=\"%s\"} ",
			 stages[i]);
		p = strstr(text, key);
		cr_assert_not_null(p, "no %s", key);
		v[i] = strtod(p + strlen(key), NULL);
		cr_expect_geq(v[i], 0, "%s%f", key, v[i]);
		sum += v[i];
	}
	cr_expect_gt(v[2], 0, "no CPU time in delay");
	cr_expect_gt(v[3], 0, "no CPU time in observe");
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)daemon_pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fscanf(f, "%llu", &thread_ns), 1);
	fclose(f);
	cr_expect_leq(sum, thread_ns / 1e9, "the stages took %.6f s, moatd's main thread %.6f s",
		      sum, thread_ns / 1e9);
}

Test(moatd, metrics_are_valid_prometheus_text_and_follow_the_groups)
{
	struct tcg web, batch;
	char *body;
	int port = http_port(), status, i;
	pid_t hog, probe;

	cr_assert_eq(tcg_create("web-m", &web), 0);
	cr_assert_eq(tcg_create("batch-m", &batch), 0);
	hog = tcg_spawn(&batch, 0, work_hog, NULL);
	probe = tcg_spawn(&web, 0, work_hog, NULL);
	wait_get("groups/batch.batch-m/path", 0, 30);
	wait_get("groups/web.web-m/path", 0, 30);
	/*
	 * Until a period has read the web group's waits behind the batch
	 * hog: the hogs' fork and first run are the scheduler's, on a busy
	 * machine a good part of a second.
	 */
	for (i = 0; i < 100; i++) {
		status = http_get(port, "/metrics", page, sizeof(page), &body);
		cr_assert_eq(status, 200, "%.300s", page);
		if (strstr(body, "moat_blame_wait_seconds_total{victim=\"web.web-m\",culprit=\"batch.batch-m\"}") &&
		    !strstr(body, "moat_group_rqlat_seconds_count{group=\"web.web-m\",class=\"lc\"} 0\n"))
			break;
		sleep_ms(100);
	}
	cr_log_info("the web group's waits after ~%d x 100 ms", i);
	cr_expect(strstr(page, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
		  "%.300s", page);
	cr_expect(strstr(body, "moat_group_info{group=\"web.web-m\",class=\"lc\"} 1\n"));
	cr_expect(strstr(body, "moat_build_info{version="));
	cr_expect(strstr(body, "moat_blame_wait_seconds_total{victim=\"web.web-m\",culprit=\"batch.batch-m\"}"),
		  "no blame series for two hogs on one CPU");
	expect_sound_histogram(body, "web.web-m");
	expect_stage_times(body);

	/* A removed group's series go with it. */
	tcg_kill(hog);
	cr_assert_eq(rmdir(batch.dir), 0, "%s: %s", batch.dir, strerror(errno));
	wait_get("groups/batch.batch-m/path", 1, 30);
	cr_assert_eq(http_get(port, "/metrics", page, sizeof(page), &body), 200);
	cr_expect_null(strstr(body, "batch.batch-m\""), "a removed group's series stayed");
	tcg_kill(probe);
}

/* Accept-Encoding as RFC 9110 gives it: gzip unless its weight is 0. */
Test(endpoint, accept_encoding_takes_gzip_unless_weighed_zero)
{
	static const char *const yes[] = {
		"gzip", "gzip, deflate, br", "deflate, gzip", "GZip", "x-gzip",
		"gzip;q=0.5", "gzip ; q=1", "br;q=1.0, gzip;q=0.001", "identity,gzip",
	};
	static const char *const no[] = {
		"", "deflate", "*", "gzip;q=0", "gzip;q=0.0", "gzip; q=0.000, br",
		"gzipx", "xgzip", "identity", "deflate;gzip",
	};
	size_t i;

	cr_expect_not(moat_accepts_gzip(NULL));
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		cr_expect(moat_accepts_gzip(yes[i]), "'%s' refused", yes[i]);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		cr_expect_not(moat_accepts_gzip(no[i]), "'%s' taken", no[i]);
}

/* @n bytes of gzip at @gz, inflated into @text (@len): its length, or -1. */
static long gunzip(const char *gz, size_t n, char *text, size_t len)
{
	z_stream z = { .next_in = (Bytef *)gz, .avail_in = (uInt)n,
		       .next_out = (Bytef *)text, .avail_out = (uInt)(len - 1) };
	long got;

	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return -1;
	got = inflate(&z, Z_FINISH) == Z_STREAM_END && !z.avail_in ? (long)z.total_out : -1;
	inflateEnd(&z);
	if (got >= 0)
		text[got] = '\0';
	return got;
}

/*
 * Prometheus asks for gzip, and gets it: the same exposition, a
 * quarter of its size here (a twentieth at 1000 groups), which is all
 * moatd keeps of it between scrapes; a client that refuses gzip gets
 * the text.
 */
Test(moatd, metrics_are_gzipped_for_a_client_that_accepts_it)
{
	static char plain[1 << 22];
#define REQ(accept) "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" \
		    "Accept-Encoding: " accept "\r\n\r\n"
	char *body, *cl;
	int port = http_port();
	long n, len = -1;

	cr_assert_eq(http_req(port, REQ("deflate, gzip;q=0.8"), page, sizeof(page), &body), 200, "%.300s", page);
	cr_expect(strcasestr(page, "\r\nContent-Encoding: gzip\r\n"), "%.300s", page);
	cr_expect(strcasestr(page, "\r\nVary: Accept-Encoding\r\n"), "%.300s", page);
	cl = strcasestr(page, "\r\nContent-Length: ");
	cr_assert(cl && sscanf(cl + 18, "%ld", &len) == 1 && len > 0, "%.300s", page);
	n = gunzip(body, (size_t)len, plain, sizeof(plain));
	cr_assert_gt(n, 0, "the body is not gzip");
	cr_expect(strstr(plain, "moat_build_info{version="), "%.300s", plain);
	cr_expect(strstr(plain, "# TYPE moat_cycles_total counter\n"), "%.300s", plain);
	cr_expect_eq(plain[n - 1], '\n');
	cr_log_info("/metrics: %ld bytes, %ld gzipped", n, len);
	/* a small exposition (a few groups, 16 KiB) gzips to a quarter, give or take */
	cr_expect_lt(len * 2, n, "gzip saved little: %ld of %ld bytes", len, n);

	cr_assert_eq(http_req(port, REQ("gzip;q=0, br"), page, sizeof(page), &body), 200, "%.300s", page);
	cr_expect_not(strcasestr(page, "Content-Encoding:"), "%.300s", page);
	cr_expect(strstr(body, "moat_build_info{version="), "%.300s", body);
}

/* Prometheus's own linter passes what moatd serves. */
Test(moatd, metrics_pass_promtool_check)
{
	char *body, cmd[PATH_MAX + 64], path[PATH_MAX];
	struct tcg web;
	pid_t hog;
	int status;
	FILE *p;

	if (access("/usr/bin/promtool", X_OK))
		skip("no /usr/bin/promtool (tools/deps.sh installs prometheus)");
	cr_assert_eq(tcg_create("web-lint", &web), 0);
	hog = tcg_spawn(&web, 0, work_hog, NULL);
	wait_get("groups/web.web-lint/path", 0, 30);
	cr_assert_geq(wait_cycles(2, 30000), 2, "moatd's periods do not run");
	cr_assert_eq(http_get(http_port(), "/metrics", page, sizeof(page), &body), 200);
	tcg_kill(hog);
	snprintf(path, sizeof(path), "%s/metrics.txt", dir);
	write_file(path, body);
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s 2>&1", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	out[fread(out, 1, OUT_MAX - 1, p)] = '\0';
	status = pclose(p);
	cr_expect_eq(status, 0, "promtool check metrics: %s", out);
}

Test(moatd, hints_are_the_documented_json)
{
	struct tcg web;
	json_object *o, *v, *cap, *lc;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	char *body;
	size_t i;
	bool found = false;

	cr_assert_eq(tcg_create("web-h", &web), 0);
	wait_get("groups/web.web-h/path", 0, 30);
	cr_assert_geq(wait_cycles(2, 30000), 2, "moatd's periods do not run");
	cr_assert_eq(http_get(http_port(), "/hints", page, sizeof(page), &body), 200,
		     "%.300s", page);
	cr_expect(strstr(page, "Content-Type: application/json\r\n"));
	o = json_tokener_parse(body);
	cr_assert_not_null(o, "not JSON: %.300s", body);
	cr_assert(json_object_object_get_ex(o, "apiVersion", &v));
	cr_expect_str_eq(json_object_get_string(v), "moat.io/v2");
	cr_assert(json_object_object_get_ex(o, "kind", &v));
	cr_expect_str_eq(json_object_get_string(v), "NodeHints");
	cr_assert(json_object_object_get_ex(o, "beCapacity", &cap));
	cr_assert(json_object_object_get_ex(cap, "cpuMillicores", &v));
	cr_expect(json_object_is_type(v, json_type_int), "%s", json_object_to_json_string(cap));
	cr_expect(json_object_get_int64(v) >= 0 && json_object_get_int64(v) <= ncpus * 1000,
		  "cpuMillicores %lld of %ld CPUs", (long long)json_object_get_int64(v), ncpus);
	cr_assert(json_object_object_get_ex(cap, "memoryBytes", &v));
	cr_expect_gt(json_object_get_int64(v), 0);
	cr_assert(json_object_object_get_ex(o, "interference", &cap));
	cr_expect(json_object_object_get_ex(cap, "cpu", &v) &&
		  json_object_object_get_ex(cap, "memory", &v) &&
		  json_object_object_get_ex(cap, "cache", &v),
		  "%s", json_object_to_json_string(cap));
	/* no PMU here, so no CPI² victim: no cache interference */
	cr_expect(json_object_object_get_ex(cap, "cache", &v) &&
		  json_object_get_double(v) == 0, "%s", json_object_to_json_string(cap));
	cr_assert(json_object_object_get_ex(o, "culprits", &v));
	cr_assert(json_object_object_get_ex(o, "lc", &lc));
	for (i = 0; i < json_object_array_length(lc); i++) {
		json_object *g = json_object_array_get_idx(lc, i);

		if (!json_object_object_get_ex(g, "group", &v) ||
		    strcmp(json_object_get_string(v), "web.web-h"))
			continue;
		found = true;
		/* the signal is named for what it is: lc/rqlat_signal's p99 */
		cr_expect(json_object_object_get_ex(g, "rqlatP99Seconds", &v),
			  "%s", json_object_to_json_string(g));
		cr_expect(!json_object_object_get_ex(g, "rqlatWp99Seconds", &v),
			  "v1's misnamed field: %s", json_object_to_json_string(g));
		cr_assert_eq(ctl(out, err, "get", "lc/rqlat_signal", NULL), 0, "%s", err);
		out[strcspn(out, "\n")] = '\0';
		cr_expect(json_object_object_get_ex(g, "rqlatSignal", &v) &&
			  !strcmp(json_object_get_string(v), out),
			  "rqlatSignal is not lc/rqlat_signal's %s: %s", out,
			  json_object_to_json_string(g));
	}
	cr_expect(found, "web.web-h not in lc: %s", json_object_to_json_string(lc));
	json_object_put(o);
}

/* Read-only, bounded, and the control loop never waits on a client. */
Test(moatd, http_refuses_writes_and_outlasts_idle_and_oversized_clients)
{
	static char big[70 * 1024];
	int port = http_port(), fds[8], i;
	struct tcg web;
	char *body;
	size_t n;

	cr_assert_eq(http_req(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab",
			      page, sizeof(page), &body), 405);
	cr_expect(strstr(page, "Allow: GET, HEAD\r\n"), "%.300s", page);
	cr_assert_eq(http_get(port, "/nope", page, sizeof(page), &body), 404);

	/* A header larger than a connection may hold: refused, moatd fine. */
	n = snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
	memset(big + n, 'a', sizeof(big) - n - 8);
	strcpy(big + sizeof(big) - 8, "\r\n\r\n");
	i = http_req(port, big, page, sizeof(page), &body);
	cr_expect(i == 431 || i == 413 || i == 400 || i == -1, "oversized header: %d", i);

	/* Idle clients that send nothing, as many as one address may hold:
	 * periods still pass (a new group is found), moatctl still answers. */
	for (i = 0; i < 8; i++)
		fds[i] = tcp_connect(port);
	cr_assert_eq(tcg_create("web-idle", &web), 0);
	wait_get("groups/web.web-idle/path", 0, 30);
	for (i = 0; i < 8; i++)
		close(fds[i]);
	/* moatd sees the closes at its next turn of the loop */
	for (i = 0; i < 40 && http_get(port, "/healthz", page, sizeof(page), &body) != 200; i++)
		sleep_ms(50);
	cr_assert_lt(i, 40, "no /healthz after the idle clients left: %.300s", page);
	cr_expect_eq(strncmp(body, "ok", 2), 0, "%s", body);
}

/*
 * Whether @text is whole Prometheus text: each line a comment or
 * "name[{labels}] value", and a newline at its end.  A body overwritten
 * while it was sent would splice two at some offset, mid-line.
 */
static void expect_whole_exposition(const char *text, size_t len, const char *who)
{
	const char *line = text, *nl;
	int lines = 0;

	cr_assert(len > 0 && text[len - 1] == '\n', "%s: %zu bytes, no final newline", who, len);
	for (; line < text + len; line = nl + 1, lines++) {
		const char *sp, *v;
		char *end;

		nl = memchr(line, '\n', text + len - line);
		cr_assert_not_null(nl);
		if (*line == '#')
			continue;
		sp = memrchr(line, ' ', nl - line);	/* no timestamps */
		v = sp ? sp + 1 : NULL;
		cr_assert(sp && (isalpha((unsigned char)*line) || *line == '_'),
			  "%s, line %d: '%.*s'", who, lines + 1, (int)(nl - line), line);
		if (strncmp(v, "NaN", 3) && strncmp(v, "+Inf", 4))
			strtod(v, &end);
		else
			end = (char *)v + (*v == 'N' ? 3 : 4);
		cr_assert_eq(end, nl, "%s, line %d: '%.*s'", who, lines + 1,
			     (int)(nl - line), line);
	}
	cr_expect(strstr(text, "\nmoat_cycles_total "), "%s: no moat_cycles_total", who);
}

/*
 * The /metrics body lives in a buffer kept from scrape to scrape
 * (http.c): a scrape whose client reads slowly, and scrapes of fewer
 * groups while it reads, each get their whole body, of the length its
 * header says.  (Loopback's send buffer, autotuned to a MB or so, mostly
 * takes the slow body whole, so whether moatd still held it when the
 * others came is not known here.)
 */
Test(moatd, scrapes_during_a_slow_one_each_get_their_whole_body)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int port = http_port(), fd, rcvbuf = 4096, i, waiting = 0;
	size_t n = 0, clen = 0;
	char *body, *head_end;
	ssize_t r;

	cr_assert_eq(tcg_create_many("web-slow", 150), 0);
	for (i = 0; i < 100; i++) {
		cr_assert_eq(ctl(out, err, "ls", "groups", NULL), 0);
		if (strstr(out, "web.web-slow-149"))
			break;
		sleep_ms(100);
	}
	cr_assert_lt(i, 100, "moatd did not find the 150 groups");

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	sa.sin_port = htons(port);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	sleep_ms(300);		/* moatd builds it, and sends what the socket takes */

	/* fewer groups: the fast scrapes' bodies are shorter than the slow's */
	for (i = 50; i < 150; i++) {
		char gone[PATH_MAX];

		snprintf(gone, sizeof(gone), "%s/web-slow-%d", tcg_prefix_dir(), i);
		cr_assert_eq(rmdir(gone), 0, "%s: %s", gone, strerror(errno));
	}
	for (i = 0; i < 100; i++) {
		cr_assert_eq(ctl(out, err, "ls", "groups", NULL), 0);
		if (!strstr(out, "web.web-slow-149"))
			break;
		sleep_ms(100);
	}
	cr_assert_lt(i, 100, "moatd kept the removed groups");
	for (i = 0; i < 2; i++) {
		cr_assert_eq(http_get(port, "/metrics", page, sizeof(page), &body), 200);
		expect_whole_exposition(body, strlen(body), "the fast scrape");
	}

	ioctl(fd, FIONREAD, &waiting);
	while (n + 1 < sizeof(page) && (r = read(fd, page + n, sizeof(page) - n - 1)) > 0)
		n += r;
	close(fd);
	page[n] = '\0';
	head_end = strstr(page, "\r\n\r\n");
	cr_assert_not_null(head_end, "%.300s", page);
	cr_assert_not_null(strcasestr(page, "Content-Length:"), "%.300s", page);
	sscanf(strcasestr(page, "Content-Length:") + 15, "%zu", &clen);
	body = head_end + 4;
	cr_log_info("the slow scrape: %zu bytes, %d of them waiting to be read after the others",
		    clen, waiting);
	cr_assert_eq((size_t)(page + n - body), clen, "the slow scrape's body is cut");
	expect_whole_exposition(body, clen, "the slow scrape");
}

Test(moatd, listen_knob_rejects_bad_addresses_and_moves_the_server)
{
	int port = http_port(), busy, status;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	char addr[64], *body;

	cr_assert_eq(ctl(out, err, "set", "http/listen", "localhost:80"), 1);
	cr_expect(strstr(err, "http/listen") && strstr(err, "ADDR:PORT"), "%s", err);
	cr_assert_eq(ctl(out, err, "set", "http/listen", "127.0.0.1:99999"), 1);

	/* A port someone holds: refused, and the old one still serves. */
	busy = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(bind(busy, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(busy, 1), 0);
	getsockname(busy, (struct sockaddr *)&sa, &len);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
	cr_assert_eq(ctl(out, err, "set", "http/listen", addr), 1);
	cr_expect(strstr(err, "free to bind") &&
		  strstr(err, "cannot listen there: Address already in use"),
		  "%s", err);
	close(busy);
	cr_assert_eq(http_get(port, "/healthz", page, sizeof(page), &body), 200);

	/* Now free: moatd moves there, and leaves the old port. */
	cr_assert_eq(ctl(out, err, "set", "http/listen", addr), 0, "%s", err);
	sleep_ms(200);
	cr_expect_eq(http_port(), ntohs(sa.sin_port));
	status = http_get(ntohs(sa.sin_port), "/healthz", page, sizeof(page), &body);
	cr_expect_eq(status, 200);
	(void)port;
}

/* Whether something accepts connections on 127.0.0.1:@port. */
static bool connect_ok(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa));

	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * The real thing: Debian's prometheus on loopback scrapes moatd every
 * second with moat's rules loaded, its query API returns moat's series,
 * and every dashboard query runs on them.
 */
Test(moatd, prometheus_scrapes_moatd)
{
	char conf[PATH_MAX], data[PATH_MAX], log[PATH_MAX], flag[PATH_MAX + 32],
	     web[64], query[256], *body;
	int moat_port = http_port(), prom_port = free_port(), status = -1, i;
	int dash = -1;
	struct tcg lc;
	pid_t prom, parent = getpid();
	FILE *f;

	if (access("/usr/bin/prometheus", X_OK))
		skip("no /usr/bin/prometheus (tools/deps.sh installs it)");
	cr_assert_eq(tcg_create("web-prom", &lc), 0);
	wait_get("groups/web.web-prom/path", 0, 30);
	snprintf(conf, sizeof(conf), "%s/prometheus.yml", dir);
	snprintf(data, sizeof(data), "%s/prometheus", dir);
	snprintf(log, sizeof(log), "%s/prometheus.log", dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	/* the alerting and recording rules load, or prometheus stops */
	fprintf(f, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		   "rule_files: ['%s/contrib/prometheus/moat.rules.yml']\n"
		   "scrape_configs:\n  - job_name: moatd\n    static_configs:\n"
		   "      - targets: ['127.0.0.1:%d']\n", source_dir(), moat_port);
	fclose(f);
	snprintf(web, sizeof(web), "--web.listen-address=127.0.0.1:%d", prom_port);
	snprintf(flag, sizeof(flag), "--storage.tsdb.path=%s", data);
	prom = fork();
	cr_assert_geq(prom, 0);
	if (!prom) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		die_with_parent(parent, SIGTERM);
		char cf[PATH_MAX + 32];

		snprintf(cf, sizeof(cf), "--config.file=%s", conf);
		dup2(fd, 1);
		dup2(fd, 2);
		execl("/usr/bin/prometheus", "prometheus", cf, flag, web,
		      "--log.level=warn", NULL);
		_exit(127);
	}
	snprintf(query, sizeof(query),
		 "/api/v1/query?query=moat_group_info%%7Bgroup%%3D%%22web.web-prom%%22%%7D");
	for (i = 0; i < 80; i++) {
		sleep_ms(500);
		if (waitpid(prom, NULL, WNOHANG) == prom) {
			prom = 0;
			break;
		}
		if (!connect_ok(prom_port))
			continue;
		status = http_get(prom_port, query, page, sizeof(page), &body);
		if (status == 200 && strstr(body, "\"result\":[{"))
			break;
	}
	/*
	 * Every Grafana panel's query (contrib/grafana/) against it, once
	 * it has two scrapes of moatd: rate() needs two samples.
	 */
	if (status == 200 && strstr(body, "\"result\":[{") && prom > 0) {
		char cmd[PATH_MAX + 64];

		sleep_ms(2500);
		snprintf(cmd, sizeof(cmd), "%s/selftests/dashboard_queries.sh %d %d >&2",
			 source_dir(), prom_port, moat_port);
		dash = system(cmd);
	}
	if (prom > 0) {
		kill(prom, SIGTERM);
		waitpid(prom, NULL, 0);
	}
	snprintf(flag, sizeof(flag), "tail -n 20 %s >&2", log);
	if (status != 200 || !strstr(body, "\"result\":[{"))
		cr_expect_eq(system(flag), 0);
	cr_assert_eq(status, 200, "prometheus's query API: %d (%s)", status,
		     prom ? "running" : "it exited");
	cr_expect(strstr(body, "\"job\":\"moatd\"") && strstr(body, "web.web-prom"),
		  "%s", body);
	cr_log_info("prometheus had moat_group_info after ~%d x 500 ms", i + 1);
	cr_expect_eq(dash, 0, "a dashboard query failed (above)");
}

/* A connection to 127.0.0.@host -> 127.0.0.1:@port, left as it is. */
static int tcp_connect_from(int port, int host)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(0x7f000000 | host) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0, "%s",
		     strerror(errno));
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0,
		     "connect to port %d: %s", port, strerror(errno));
	return fd;
}

/*
 * Liveness cannot be starved: more idle connections from the probe's
 * own address than its limit, then more slow ones (a header begun,
 * never ended) from other addresses than the total, and /healthz still
 * answers (Documentation/testing.rst has the figures under load).
 */
Test(moatd, healthz_outlasts_idle_and_slow_clients)
{
	int port = http_port(), fds[48], n = 0, i;
	char *body;

	for (i = 0; i < 12; i++)
		fds[n++] = tcp_connect_from(port, 1);
	sleep_ms(300);
	cr_expect_eq(http_get(port, "/healthz", page, sizeof(page), &body), 200,
		     "12 idle connections from 127.0.0.1 kept its probe out");
	for (i = 0; i < 34; i++) {
		fds[n] = tcp_connect_from(port, 10 + i);
		cr_assert_eq(write(fds[n], "GET /heal", 9), 9);
		n++;
	}
	sleep_ms(300);
	cr_expect_eq(http_get(port, "/healthz", page, sizeof(page), &body), 200,
		     "34 slow clients kept the probe out");
	cr_expect_eq(http_get(port, "/metrics", page, sizeof(page), &body), 200);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * A period lowered from 20 s to 500 ms: moatd is as healthy before its
 * next cycle as after.  /healthz judged the last cycle's age by the new
 * period and answered 503 "stalled" until the next cycle came; and the
 * other way, raised, it would until the first cycle at the new period.
 */
Test(moatd, healthz_judges_a_cycle_by_the_period_it_ran_at)
{
	int port = http_port(), i, bad = 0;
	char *body;

	set_runtime("period_ms", "20000");
	sleep_ms(2000);		/* the last cycle is older than 3 new periods */
	set_runtime("period_ms", "500");
	for (i = 0; i < 20; i++) {
		bad += http_get(port, "/healthz", page, sizeof(page), &body) != 200;
		sleep_ms(50);
	}
	cr_expect_eq(bad, 0, "%d of 20 /healthz in the second after the period was lowered were not 200: %.200s",
		     bad, page);
	set_runtime("period_ms", "20000");
	for (i = 0, bad = 0; i < 40; i++) {
		bad += http_get(port, "/healthz", page, sizeof(page), &body) != 200;
		sleep_ms(50);
	}
	cr_expect_eq(bad, 0, "%d of 40 /healthz in the 2 s after the period was raised were not 200: %.200s",
		     bad, page);
}
