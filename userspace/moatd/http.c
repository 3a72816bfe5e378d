// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatd's read-only HTTP endpoint, served by libmicrohttpd from moatd's
 * own loop (MHD_USE_EPOLL, no thread of its own): /metrics (metrics.c),
 * /hints (hints.c) and /healthz.  Handlers run between two periods, read
 * moatd's state without locks and never change it.
 *
 * A slow or hostile client cannot stall the control loop: sockets are
 * non-blocking, a response is built in memory at once and sent as the
 * socket takes it, and libmicrohttpd bounds each connection's memory (a
 * request's header and body must fit in it) and idle connections'
 * lifetime.
 *
 * Nor can clients keep a probe out.  moatd accepts connections itself
 * and hands them to libmicrohttpd; when a new one would pass the limits
 * (HTTP_CONNECTIONS in all, HTTP_PER_ADDRESS from one address), the
 * oldest connection (from that address, or of all) is shut down to make
 * room.  Idle or slow connections held open, any number of them, only
 * ever cost themselves: kubelet's liveness probe, a new connection that
 * asks at once, always gets in, where fixed limits would turn a local
 * process's idle sockets into a failed probe and a restarted moatd, its
 * protection undone.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <zlib.h>
#include "endpoint.h"
#include "enforce.h"
#include "health.h"
#include "hints.h"
#include "http.h"
#include "log.h"
#include "metrics.h"

#define HTTP_CONNECTIONS	32
#define HTTP_PER_ADDRESS	8
#define HTTP_TIMEOUT_S		10
#define HTTP_CONN_MEMORY	(32 * 1024)

/* A connection handed to libmicrohttpd, until it closes or is evicted. */
struct http_conn {
	int fd;
	struct sockaddr_storage peer;
	unsigned long long seq;		/* accept order: the oldest is least */
};

/*
 * Loopback: /metrics and /hints name every pod and what moat does to it,
 * so a node serves them to the network only when told to (the DaemonSet
 * passes --listen with the pod's address).  9590: not taken in
 * Prometheus's list of default ports.
 */
#define DEFAULT_LISTEN		"127.0.0.1:9590"

/*
 * A body built in place: the mapping below, or (the kept one busy with a
 * response still being sent) the heap.
 */
struct body {
	char *p;
	size_t len, cap;
	z_stream *z;		/* gzip what is written: the client accepts it */
};

struct http {
	struct MHD_Daemon *mhd;
	int epoll_fd, lfd;
	struct http_conn conns[HTTP_CONNECTIONS];
	unsigned int nr;
	unsigned long long seq, evicted;
	/*
	 * The bodies' buffer, kept from one scrape to the next in a mapping
	 * of its own.  Built with open_memstream(), a 1.1 MB /metrics (500
	 * groups) grew glibc's heap by 4.2 MB, a trail of the realloc()s
	 * that glibc kept; trimmed after each reply, the next scrape faulted
	 * it all in again and took 18 ms instead of 6.5 (performance.rst).
	 */
	struct body keep;
	bool keep_busy;		/* a response is sending it */
};

/* The module: where to listen, and the server while it runs. */
struct http_mod {
	struct moatd *d;
	char listen[64];		/* http/listen: "" none */
	bool listen_changed;
	struct http *h;
};

static struct http_mod *HM(const struct moatd *d)
{
	return moatd_mod(d, MOD_HTTP);
}

/* Whether @addr can be bound now (for a knob's check): 0 or -errno. */
static int http_try_bind(const char *addr)
{
	struct sockaddr_storage ss;
	const char *why;
	socklen_t len;
	int fd, one = 1, err;

	if (!*addr)
		return 0;
	err = moat_listen_parse(addr, &ss, &len, &why);
	if (err)
		return err;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	err = bind(fd, (struct sockaddr *)&ss, len) ? -errno : 0;
	close(fd);
	return err;
}

/* @r, with moatd's headers, as the reply on @c. */
static enum MHD_Result queue(struct MHD_Connection *c, unsigned int status,
			     const char *type, struct MHD_Response *r)
{
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	return MHD_queue_response(c, status, r);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
			     const char *type, char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	ret = queue(c, status, type, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status,
				  const char *text)
{
	char *body = strdup(text);

	return body ? reply(c, status, "text/plain; charset=utf-8", body,
			    strlen(body)) : MHD_NO;
}

/* Room for @need bytes in @b's mapping: 0 or -ENOMEM. */
static int body_grow(struct body *b, size_t need)
{
	size_t page = sysconf(_SC_PAGESIZE), cap = b->cap ? b->cap : 64 * 1024;
	void *p;

	while (cap < need)
		cap *= 2;
	cap = (cap + page - 1) / page * page;
	p = b->p ? mremap(b->p, b->cap, cap, MREMAP_MAYMOVE) :
		   mmap(NULL, cap, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/*
 * What deflate() makes of @flush and the input it has, into @b's mapping,
 * grown as it fills: 0, or -ENOMEM.
 */
static int body_deflate(struct body *b, int flush)
{
	z_stream *z = b->z;
	int rc;

	do {
		if (b->cap - b->len < 16384 && body_grow(b, b->len + 16384))
			return -ENOMEM;
		z->next_out = (Bytef *)b->p + b->len;
		z->avail_out = (uInt)(b->cap - b->len);
		rc = deflate(z, flush);
		b->len = b->cap - z->avail_out;
		if (rc == Z_STREAM_ERROR)
			return -ENOMEM;
	} while (z->avail_in || (flush == Z_FINISH && rc != Z_STREAM_END));
	return 0;
}

static ssize_t body_write(void *cookie, const char *buf, size_t n)
{
	struct body *b = cookie;

	if (b->z) {
		b->z->next_in = (Bytef *)buf;
		b->z->avail_in = (uInt)n;
		if (body_deflate(b, Z_NO_FLUSH)) {
			errno = ENOMEM;
			return -1;
		}
		return n;
	}

	if (b->len + n > b->cap && body_grow(b, b->len + n)) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(b->p + b->len, buf, n);
	b->len += n;
	return n;
}

/*
 * The kept buffer's pages past this body, where a body before it (one
 * not gzipped) left more than a MiB: given back, the mapping kept.
 */
static void keep_trim(struct body *b)
{
	size_t page = sysconf(_SC_PAGESIZE), used = (b->len + page - 1) / page * page;

	if (b->p && b->cap > used + (1 << 20))
		madvise(b->p + used, b->cap - used, MADV_DONTNEED);
}

/* Libmicrohttpd is done with the kept body: the next may use it. */
static void keep_done(void *cls)
{
	((struct http *)cls)->keep_busy = false;
}

/*
 * Build a body with @fn into the kept buffer of @h, gzipped where @gzip;
 * false where it is busy or the build failed (the caller builds on the
 * heap then, without gzip).
 *
 * Prometheus asks for gzip: /metrics at 1000 groups is 2 to 5 MB of
 * text (a histogram per group; pods' names make it longer), 2.2 MB of
 * it 106 KB gzipped (metrics.rst), and the kept buffer holds only what
 * goes out.  Level 1: the text's repetitions are what it saves.
 */
static bool build_kept(struct http *h, int (*fn)(const struct moatd *, FILE *),
		       struct moatd *d, bool gzip)
{
	cookie_io_functions_t io = { .write = body_write };
	z_stream z = { 0 };
	bool ok;
	FILE *f;

	if (!h || h->keep_busy)
		return false;
	h->keep.len = 0;
	h->keep.z = NULL;
	/* windowBits 15 + 16: a gzip header and trailer; memLevel 8: zlib's default */
	if (gzip && deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return false;
	if (gzip)
		h->keep.z = &z;
	f = fopencookie(&h->keep, "w", io);
	ok = f && !fn(d, f);
	ok = f && !fclose(f) && ok;
	if (gzip) {
		ok = ok && !body_deflate(&h->keep, Z_FINISH);
		deflateEnd(&z);
		h->keep.z = NULL;
	}
	keep_trim(&h->keep);
	return ok;
}

/* Build a body with @fn into memory; NULL on failure. */
static char *build(int (*fn)(const struct moatd *, FILE *), struct moatd *d,
		   size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int err;

	if (!f)
		return NULL;
	err = fn(d, f);
	if (fclose(f) || err) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * Healthy, and what an operator should know that is not moat's failure:
 * the files it leaves alone because someone else keeps rewriting them.
 */
static int healthz(const struct moatd *d, FILE *f)
{
	fprintf(f, "ok: last cycle %.0f us ago, period %u ms\n",
		moatd_since_cycle_us(d), d->period_ms);
	/* alive (no restart would help), and said at the top */
	if (d->journal_unreadable[0])
		fprintf(f, "degraded: the journal %s does not decode: nothing it lists was put back; observe only, enforce refused, until it is checked and removed\n",
			d->journal_unreadable);
	enforce_left_alone(d, f);
	return 0;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	static int first;
	struct moatd *d = cls;
	struct http *h = HM(d)->h;
	const char *type = "text/plain; charset=utf-8";
	int (*fn)(const struct moatd *, FILE *);
	unsigned int status = MHD_HTTP_OK;
	enum moat_endpoint route;
	size_t len;
	char *body;
	bool gzip;

	route = moat_endpoint_route(method, url);
	if (route == MOAT_EP_BAD_METHOD)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "moatd serves GET and HEAD only: no endpoint changes state\n");
	if (!*state) {		/* headers only: wait for the end */
		*state = &first;
		return MHD_YES;
	}
	if (*upload_len)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "a GET takes no body\n");
	switch (route) {
	case MOAT_EP_METRICS:
		fn = metrics_write;
		type = "text/plain; version=0.0.4; charset=utf-8";
		break;
	case MOAT_EP_HINTS:
		fn = hints_write_json;
		type = "application/json";
		break;
	case MOAT_EP_HEALTHZ: {
		char why[PATH_MAX + 256];

		fn = healthz;
		if (!moatd_health(d, why, sizeof(why) - 1))
			return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
					  strcat(why, "\n"));
		break;
	}
	default:
		return reply_text(c, MHD_HTTP_NOT_FOUND,
				  "not found: try /metrics, /hints or /healthz\n");
	}
	gzip = moat_accepts_gzip(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							      MHD_HTTP_HEADER_ACCEPT_ENCODING));
	if (build_kept(h, fn, d, gzip)) {
		struct MHD_Response *r;
		enum MHD_Result ret;

		r = MHD_create_response_from_buffer_with_free_callback_cls(
			h->keep.len, h->keep.p, keep_done, h);
		if (!r)
			return MHD_NO;
		h->keep_busy = true;
		if (gzip)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
		ret = queue(c, status, type, r);
		MHD_destroy_response(r);
		return ret;
	}
	body = build(fn, d, &len);
	if (!body)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "out of memory\n");
	return reply(c, status, type, body, len);
}

static __attribute__((format(printf, 2, 0)))
void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	pr_debug("http: %s", buf);
}

/* libmicrohttpd closed a connection: it is no longer ours to count. */
static void notify(void *cls, struct MHD_Connection *c, void **ctx,
		   enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *info;
	struct http *h = cls;
	unsigned int i;

	if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
		return;
	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	for (i = 0; info && i < h->nr; i++)
		if (h->conns[i].fd == info->connect_fd) {
			h->conns[i] = h->conns[--h->nr];
			break;
		}
}

static int listen_socket(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd, one = 1, err;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, 64)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int server_open(struct http **out, struct moatd *d, const char *addr)
{
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage ss;
	struct http *h;
	const char *why;
	socklen_t len;
	int err;

	*out = NULL;
	if (!*addr)
		return 0;
	err = moat_listen_parse(addr, &ss, &len, &why);
	if (err) {
		pr_err("listen %s: %s", addr, why);
		return err;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->lfd = listen_socket(&ss, len);
	if (h->lfd < 0) {
		err = h->lfd;
		pr_err("listen %s: %s", addr, strerror(-err));
		free(h);
		return err;
	}
	/* Its own limits above moatd's: it never refuses what moatd took. */
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
				  MHD_USE_NO_LISTEN_SOCKET |
				  (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, handle, d,
				  MHD_OPTION_CONNECTION_LIMIT, 4 * HTTP_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, HTTP_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				  (size_t)HTTP_CONN_MEMORY,
				  MHD_OPTION_NOTIFY_CONNECTION, notify, h,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_END);
	info = h->mhd ? MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	h->epoll_fd = info ? info->epoll_fd : -1;
	if (h->epoll_fd < 0) {
		pr_err("listen %s: libmicrohttpd did not start", addr);
		if (h->mhd)
			MHD_stop_daemon(h->mhd);
		close(h->lfd);
		free(h);
		return -EINVAL;
	}
	pr_info("http: /metrics, /hints and /healthz on %s", addr);
	*out = h;
	return 0;
}

static void server_close(struct http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);	/* the responses, the kept body's too */
	if (h->keep.p)
		munmap(h->keep.p, h->keep.cap);
	close(h->lfd);
	free(h);
}

void http_poll_fds(struct moatd *d, struct pollfd *pfd, unsigned int *n,
		   unsigned int max, int *timeout_ms)
{
	struct http *h = HM(d)->h;
	MHD_UNSIGNED_LONG_LONG t;

	if (!h || *n + 2 > max)
		return;
	pfd[(*n)++] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
	pfd[(*n)++] = (struct pollfd){ .fd = h->epoll_fd, .events = POLLIN };
	if (MHD_get_timeout(h->mhd, &t) == MHD_YES &&
	    (*timeout_ms < 0 || t < (MHD_UNSIGNED_LONG_LONG)*timeout_ms))
		*timeout_ms = t;
}

static bool same_address(const struct sockaddr_storage *a,
			 const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr,
		       sizeof(struct in6_addr));
}

/*
 * Make room for a connection from @peer: shut down the oldest one from
 * that address when it has HTTP_PER_ADDRESS, and the oldest of all when
 * there are HTTP_CONNECTIONS.  libmicrohttpd sees the shutdown and closes
 * it; it is no longer counted from now.
 */
static void make_room(struct http *h, const struct sockaddr_storage *peer)
{
	unsigned int i, same = 0, oldest = h->nr, oldest_same = h->nr;

	for (i = 0; i < h->nr; i++) {
		if (oldest == h->nr || h->conns[i].seq < h->conns[oldest].seq)
			oldest = i;
		if (!same_address(&h->conns[i].peer, peer))
			continue;
		same++;
		if (oldest_same == h->nr ||
		    h->conns[i].seq < h->conns[oldest_same].seq)
			oldest_same = i;
	}
	i = same >= HTTP_PER_ADDRESS ? oldest_same :
	    h->nr >= HTTP_CONNECTIONS ? oldest : h->nr;
	if (i == h->nr)
		return;
	pr_debug("http: %s: the oldest connection closed for a new one",
		 same >= HTTP_PER_ADDRESS ? "connections from one address at their limit" :
					    "connections at their limit");
	shutdown(h->conns[i].fd, SHUT_RDWR);
	h->conns[i] = h->conns[--h->nr];
	h->evicted++;
}

static void accept_all(struct http *h)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	int fd;

	while ((fd = accept4(h->lfd, (struct sockaddr *)&peer, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		make_room(h, &peer);
		if (MHD_add_connection(h->mhd, fd, (struct sockaddr *)&peer, len) !=
		    MHD_YES) {
			pr_debug("http: libmicrohttpd refused a connection");
			len = sizeof(peer);
			continue;	/* it closed the socket */
		}
		h->conns[h->nr++] = (struct http_conn){ fd, peer, ++h->seq };
		len = sizeof(peer);
	}
}

/* http/listen changed: serve on the new address, or keep the old. */
static void relisten(struct moatd *d, struct http_mod *hm)
{
	struct http *h;

	hm->listen_changed = false;
	if (!server_open(&h, d, hm->listen) || !*hm->listen) {
		server_close(hm->h);
		hm->h = h;
		if (!*hm->listen)
			pr_info("http: no longer served");
	}
}

void http_work(struct moatd *d)
{
	struct http_mod *hm = HM(d);

	if (hm->listen_changed)
		relisten(d, hm);
	if (!hm->h)
		return;
	accept_all(hm->h);
	MHD_run(hm->h->mhd);
}

static int listen_check(const struct moat_knob *k, const char *val,
			char *why, size_t whylen)
{
	struct http_mod *hm = k->owner;
	struct sockaddr_storage ss;
	const char *bad;
	socklen_t len;
	int err;

	if (!*val || !strcmp(val, hm->listen))
		return 0;
	if (moat_listen_parse(val, &ss, &len, &bad)) {
		snprintf(why, whylen, "%s", bad);
		return -EINVAL;
	}
	/* Running: the new address must be free now (the old one is ours). */
	err = hm->h ? http_try_bind(val) : 0;
	if (err)
		snprintf(why, whylen, "cannot listen there: %s", strerror(-err));
	return err ? -EINVAL : 0;
}

static void listen_store(const struct moat_knob *k, unsigned int u,
			 const char *val)
{
	struct http_mod *hm = k->owner;

	if (strcmp(val, hm->listen))
		hm->listen_changed = true;
	snprintf(hm->listen, sizeof(hm->listen), "%s", val);
}

/* The port bound: http/listen may ask for port 0, any free one. */
static int show_port(const struct moat_knob *k, char *buf, size_t len)
{
	const struct http_mod *hm = k->owner;
	struct sockaddr_storage ss = {};
	socklen_t sl = sizeof(ss);
	unsigned int port = 0;

	if (hm->h && !getsockname(hm->h->lfd, (struct sockaddr *)&ss, &sl))
		port = ntohs(ss.ss_family == AF_INET6 ?
			     ((struct sockaddr_in6 *)&ss)->sin6_port :
			     ((struct sockaddr_in *)&ss)->sin_port);
	return snprintf(buf, len, "%u", port) >= (int)len ? -EOVERFLOW : 0;
}

static int http_init(struct moatd *d)
{
	struct http_mod *hm = HM(d);
	const struct moat_knob knobs[] = {
		{ .path = "http/listen", .type = MOAT_KNOB_STRING, .writable = true,
		  .data = hm->listen, .str_max = sizeof(hm->listen),
		  .check = listen_check, .store = listen_store,
		  .expects = "ADDR:PORT with a numeric address (127.0.0.1:9590, [::1]:9590), free to bind; '' serves no HTTP" },
		{ .path = "http/port", .type = MOAT_KNOB_SHOW, .show = show_port },
	};

	hm->d = d;
	snprintf(hm->listen, sizeof(hm->listen), "%s", DEFAULT_LISTEN);
	return moat_knob_add_all(d->tree, "", knobs,
				 sizeof(knobs) / sizeof(knobs[0]), hm);
}

static int http_open(struct moatd *d)
{
	struct http_mod *hm = HM(d);
	int err = server_open(&hm->h, d, hm->listen);

	hm->listen_changed = false;
	return err;
}

static void http_close(struct moatd *d)
{
	server_close(HM(d)->h);
	HM(d)->h = NULL;
}

const struct moatd_module http_module = {
	.name = "http",
	.size = sizeof(struct http_mod),
	.init = http_init,
	.open = http_open,
	.close = http_close,
};
