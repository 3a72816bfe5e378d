// SPDX-License-Identifier: GPL-2.0-only
/*
 * The Kubernetes API server's client (kubeapi.h): HTTP/1.1 over GnuTLS,
 * one connection a request.  GnuTLS is in moatd for libmicrohttpd
 * already; libcurl, which this client replaced, brought OpenSSL's
 * libcrypto, libssh2, Kerberos, LDAP, RTMP and nghttp2 with it: 3.4 MiB
 * of RSS for requests this file makes in 500 lines (tools/bench/memory.sh,
 * deploy.rst's memory budget).  What it does not do, because moatd needs
 * none of it: HTTP/2, proxies, compressed bodies, redirects, reused
 * connections.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <gnutls/gnutls.h>
#include <json-c/json.h>
#include "httpc.h"
#include "kubeapi.h"
#include "log.h"
#include "moatd.h"

#define SA_DIR		"/var/run/secrets/kubernetes.io/serviceaccount"
/* a request's, where its API has no kube/request_timeout_s */
#define TIMEOUT_S	10L
/*
 * A connection whose peer is gone (a half-open watch after the API
 * server's host died) is found by TCP keepalive within
 * KEEPIDLE + KEEPCNT * KEEPINTVL seconds, and data it cannot deliver
 * fails after USER_TIMEOUT: a minute, where the kernel's defaults take
 * two hours.
 */
#define KEEPIDLE_S	30
#define KEEPINTVL_S	10
#define KEEPCNT		3
#define USER_TIMEOUT_MS	60000
/* how often a request that waits looks at its thread's stop and deadline */
#define TICK_MS		1000

int kube_api_init(struct kube_api *a)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *sa = getenv("MOAT_KUBE_SA_DIR");

	memset(a, 0, sizeof(*a));
	if (!host || !port || !*host || !*port)
		return -ENOENT;
	/* into the Host field and the certificate's check: a name or an address */
	if (strlen(host) >= sizeof(a->host) ||
	    strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789.-:") != strlen(host) ||
	    strlen(port) > 5 || strspn(port, "0123456789") != strlen(port) ||
	    atoi(port) < 1 || atoi(port) > 65535) {
		pr_err("kube: KUBERNETES_SERVICE_HOST '%.80s' and _PORT '%.20s' are not a host and a port",
		       host, port);
		return -EINVAL;
	}
	strcpy(a->host, host);
	strcpy(a->port, port);
	snprintf(a->server, sizeof(a->server), strchr(host, ':') ?
		 "https://[%s]:%s" : "https://%s:%s", host, port);
	snprintf(a->sa_dir, sizeof(a->sa_dir), "%s", sa ? sa : SA_DIR);
	moatd_node_name(a->node, sizeof(a->node));
	return 0;
}

/* The file @name in the service account's directory, trailing space cut. */
static char *sa_file(const struct kube_api *a, const char *name)
{
	char path[PATH_MAX + 32], *buf = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", a->sa_dir, name);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf)
		buf[strcspn(buf, "\r\n")] = '\0';
	return buf;
}

struct body {
	const struct kube_api *api;
	long status;		/* the response's, once its header fields are read */
	bool cancelled;		/* its thread stopped it */
	char *p;
	size_t n, cap, max;
	bool cut;
	/* streaming: lines to @line, or the bytes to @chunk, while the status is 2xx */
	int (*line)(const char *l, size_t len, void *ctx);
	int (*chunk)(const char *p, size_t len, void *ctx);
	bool (*stop)(void *ctx);
	void (*opened)(void *ctx);
	void *ctx;
	bool skip;		/* the rest of a line past max */
	bool ended;		/* @line, @chunk or @stop ended the stream */
};

/*
 * @add bytes more of @b, in a buffer that doubles: a realloc() of each
 * piece the connection gives copied the whole body each time with an
 * allocator that moves what it grows (AddressSanitizer's, musl's), 8 GiB
 * for a 16 MiB list, where glibc's grows it in place.
 */
static int append(struct body *b, const char *ptr, size_t add)
{
	size_t want = b->n + add + 1, cap;
	char *p;

	if (b->n + add > b->max) {
		b->cut = true;
		return -1;
	}
	if (want > b->cap) {
		for (cap = b->cap ? b->cap : 4096; cap < want; cap *= 2)
			;
		if (cap > b->max + 1)
			cap = b->max + 1;	/* no more than max: want fits */
		p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, ptr, add);
	b->n += add;
	b->p[b->n] = '\0';
	return 0;
}

/* Lines to b->line; non-zero: the stream ends (out of memory, or it said so). */
static int stream_data(struct body *b, const char *ptr, size_t add)
{
	size_t done = 0;

	while (done < add) {
		const char *nl = memchr(ptr + done, '\n', add - done);
		size_t n = (nl ? (size_t)(nl - ptr) : add) - done;

		if (!b->skip && append(b, ptr + done, n)) {
			if (!b->cut)
				return -1;	/* out of memory */
			b->skip = true;	/* past max: the rest is dropped */
			b->cut = false;
			if (b->line(b->p, 0, b->ctx))
				goto end;
		}
		done += n;
		if (!nl)
			break;
		done++;
		if (!b->skip && b->n && b->line(b->p, b->n, b->ctx))
			goto end;
		b->skip = false;
		b->n = 0;
	}
	return 0;
end:
	b->ended = true;
	return -1;
}

static int on_head(long status, void *ctx)
{
	struct body *b = ctx;

	b->status = status;
	if (kube_api_ok(status) && b->opened) {
		b->opened(b->ctx);
		b->opened = NULL;
	}
	return 0;
}

/* The body's bytes, decoded: non-zero ends the request. */
static int on_data(const char *ptr, size_t add, void *ctx)
{
	struct body *b = ctx;

	if ((b->line || b->chunk) && kube_api_ok(b->status)) {
		if (b->line)
			return stream_data(b, ptr, add);
		if (!b->chunk(ptr, add, b->ctx))
			return 0;
		b->ended = true;
		return -1;
	}
	return append(b, ptr, add);
}

long long kube_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long deadline_of(const struct kube_api *a)
{
	return a->thread ? __atomic_load_n(&a->thread->deadline_ns, __ATOMIC_ACQUIRE) : 0;
}

/* Whether @a's thread wants its request to end now. */
static bool cancelled(const struct kube_api *a)
{
	long long by = deadline_of(a);

	if (by && kube_mono_ns() >= by)
		return true;
	return a->thread && !a->finishing && kube_thread_stopping(a->thread);
}

static void set_keepalive(int fd)
{
	int on = 1, idle = KEEPIDLE_S, intvl = KEEPINTVL_S, cnt = KEEPCNT;
	unsigned int user = USER_TIMEOUT_MS;

	/* a failure leaves the kernel's defaults: slower to notice, no worse */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

/* A request's connect and answer, each: kube/request_timeout_s. */
static long request_timeout_s(const struct kube_api *a)
{
	return a->timeout_s ? (long)__atomic_load_n(a->timeout_s, __ATOMIC_RELAXED) :
			      TIMEOUT_S;
}

/* One request on its connection: the socket, the TLS session, the clock. */
struct conn {
	const struct kube_api *a;
	struct body *b;
	int fd;
	gnutls_session_t s;
	gnutls_certificate_credentials_t cred;
	long long by_ns;		/* the request's end, CLOCK_MONOTONIC */
	bool timed_out;
	char why[PATH_MAX + 256];	/* what went wrong, for the log */
};

/*
 * Whether the request is to end now: its time is up (why in c->why), its
 * thread stops, or its reader said stop.  Asked before each wait and
 * after each piece of a response, so that a watch whose events never
 * pause ends as soon as one that waits.  Return: the milliseconds left,
 * or -1.
 */
static long long ended(struct conn *c)
{
	long long left = (c->by_ns - kube_mono_ns()) / 1000000;

	if (cancelled(c->a)) {
		c->b->cancelled = true;
		return -1;
	}
	if (c->b->stop && c->b->stop(c->b->ctx)) {
		c->b->ended = true;
		return -1;
	}
	if (left <= 0) {
		c->timed_out = true;
		snprintf(c->why, sizeof(c->why), "no answer in time");
		return -1;
	}
	return left;
}

/*
 * Wait until @fd is ready for @events, a tick at most; 0 to try again,
 * -1 when the request is to end (ended()).
 */
static int wait_fd(struct conn *c, short events)
{
	struct pollfd pfd = { .fd = c->fd, .events = events };
	long long left = ended(c);

	if (left < 0)
		return -1;
	if (poll(&pfd, 1, left < TICK_MS ? (int)left : TICK_MS) < 0 && errno != EINTR) {
		snprintf(c->why, sizeof(c->why), "poll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* A TCP connection to @c->a's host and port, any of its addresses. */
static int tcp_connect(struct conn *c)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	int err;

	err = getaddrinfo(c->a->host, c->a->port, &hints, &res);
	if (err) {
		snprintf(c->why, sizeof(c->why), "%s: %s", c->a->host, gai_strerror(err));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
		socklen_t len = sizeof(err);

		if (fd < 0) {
			snprintf(c->why, sizeof(c->why), "socket: %s", strerror(errno));
			continue;
		}
		set_keepalive(fd);
		c->fd = fd;
		err = connect(fd, ai->ai_addr, ai->ai_addrlen) ? errno : 0;
		while (err == EINPROGRESS) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			if (wait_fd(c, POLLOUT))
				break;
			if (poll(&pfd, 1, 0) == 1) {
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
				break;
			}
		}
		if (!err) {
			freeaddrinfo(res);
			return 0;
		}
		if (err != EINPROGRESS)
			snprintf(c->why, sizeof(c->why), "connect: %s", strerror(err));
		close(fd);
		c->fd = -1;
		if (c->b->cancelled || c->b->ended || c->timed_out)
			break;
	}
	freeaddrinfo(res);
	return -1;
}

/* What a GnuTLS error was, with the certificate's problem where it is one. */
static void tls_why(struct conn *c, const char *what, int rc)
{
	gnutls_datum_t out = { 0 };
	unsigned int status;

	if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		status = gnutls_session_get_verify_cert_status(c->s);
		if (!gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509,
								  &out, 0)) {
			snprintf(c->why, sizeof(c->why), "the API server's certificate: %s",
				 out.data);
			gnutls_free(out.data);
			return;
		}
	}
	snprintf(c->why, sizeof(c->why), "%s: %s", what, gnutls_strerror(rc));
}

/*
 * TLS on c->fd, the peer's certificate checked against the service
 * account's CA alone (not also the distribution's) and the host's name or
 * address.
 */
static int tls_start(struct conn *c)
{
	char ca[PATH_MAX + 16];
	struct in6_addr ip;
	int rc;

	snprintf(ca, sizeof(ca), "%s/ca.crt", c->a->sa_dir);
	if (gnutls_certificate_allocate_credentials(&c->cred)) {
		snprintf(c->why, sizeof(c->why), "TLS: out of memory");
		c->cred = NULL;
		return -1;
	}
	rc = gnutls_certificate_set_x509_trust_file(c->cred, ca, GNUTLS_X509_FMT_PEM);
	if (rc <= 0) {
		snprintf(c->why, sizeof(c->why), "%s: %s", ca,
			 rc ? gnutls_strerror(rc) : "no certificate in it");
		return -1;
	}
	/* no SIGPIPE from a peer gone mid-request (MSG_NOSIGNAL) */
	if (gnutls_init(&c->s, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL)) {
		snprintf(c->why, sizeof(c->why), "TLS: out of memory");
		c->s = NULL;
		return -1;
	}
	if (gnutls_set_default_priority(c->s) ||
	    gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, c->cred)) {
		snprintf(c->why, sizeof(c->why), "TLS: cannot set up the session");
		return -1;
	}
	/* SNI is for names; an address is checked against the IP SANs */
	if (inet_pton(AF_INET, c->a->host, &ip) != 1 &&
	    inet_pton(AF_INET6, c->a->host, &ip) != 1)
		gnutls_server_name_set(c->s, GNUTLS_NAME_DNS, c->a->host,
				       strlen(c->a->host));
	gnutls_session_set_verify_cert(c->s, c->a->host, 0);
	gnutls_transport_set_int(c->s, c->fd);
	while ((rc = gnutls_handshake(c->s)) < 0) {
		if (gnutls_error_is_fatal(rc)) {
			tls_why(c, "TLS handshake", rc);
			return -1;
		}
		if (wait_fd(c, gnutls_record_get_direction(c->s) ? POLLOUT : POLLIN))
			return -1;
	}
	return 0;
}

static int send_all(struct conn *c, const char *p, size_t n)
{
	while (n) {
		ssize_t rc = gnutls_record_send(c->s, p, n);

		if (rc >= 0) {
			p += rc;
			n -= rc;
		} else if (gnutls_error_is_fatal(rc)) {
			tls_why(c, "send", (int)rc);
			return -1;
		} else if (wait_fd(c, POLLOUT)) {
			return -1;
		}
	}
	return 0;
}

/* The response, read and handed on as it comes, to its end. */
static int receive(struct conn *c)
{
	struct moat_httpc *h = malloc(sizeof(*h));
	char buf[16384];
	int err = 0;

	if (!h) {
		snprintf(c->why, sizeof(c->why), "out of memory");
		return -1;
	}
	moat_httpc_init(h, on_head, on_data, c->b);
	for (;;) {
		ssize_t rc = gnutls_record_recv(c->s, buf, sizeof(buf));

		if (rc > 0) {
			err = moat_httpc_feed(h, buf, rc);
			if (!err && moat_httpc_done(h))
				break;	/* no wait for the server's close */
			if (!err && ended(c) < 0)
				err = -1;
		} else if (rc == 0 || rc == GNUTLS_E_PREMATURE_TERMINATION) {
			/* a body to the connection's end needs TLS's own end */
			if (rc && !h->chunked && !h->has_length && h->status >= 200) {
				snprintf(c->why, sizeof(c->why),
					 "the connection ended without TLS's close_notify");
				err = -1;
				break;
			}
			err = moat_httpc_end(h);
			break;
		} else if (gnutls_error_is_fatal(rc)) {
			tls_why(c, "receive", (int)rc);
			err = -1;
			break;
		} else if (wait_fd(c, POLLIN)) {
			err = -1;
			break;
		}
		if (err)
			break;
	}
	if (err == -EPROTO)
		snprintf(c->why, sizeof(c->why), "the API server's response: %s", h->err);
	free(h);
	return err ? -1 : 0;
}

static long perform(const struct kube_api *a, const char *method,
		    const char *path, const char *type, const char *data,
		    long timeout_s, struct body *b, bool quiet)
{
	struct conn c = { .a = a, .b = b, .fd = -1 };
	long long by = deadline_of(a), now = kube_mono_ns();
	char *token = sa_file(a, "token"), *req = NULL, length[48] = "";
	long status = -1;
	int n;

	b->api = a;
	b->status = -1;
	if (cancelled(a)) {
		free(token);
		b->cancelled = true;
		return -1;
	}
	if (!token) {
		if (!quiet)
			pr_warn("kube: no service account token in %s", a->sa_dir);
		return -1;
	}
	/* nothing that would end a line or a field goes into the request */
	if (strcspn(path, " \t\r\n") != strlen(path) || *path != '/' ||
	    strcspn(token, " \t\r\n") != strlen(token) ||
	    (type && strcspn(type, "\r\n") != strlen(type))) {
		pr_err("kube: %s %.200s: not a path, a token or a type to send", method, path);
		free(token);
		return -1;
	}
	/* connect and TLS: the request's timeout; the whole: @timeout_s */
	c.by_ns = now + request_timeout_s(a) * 1000000000LL;
	if (by && by < c.by_ns)
		c.by_ns = by;
	if (data)
		snprintf(length, sizeof(length), "Content-Length: %zu\r\n", strlen(data));
	n = asprintf(&req, "%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\n"
		     "Authorization: Bearer %s\r\nAccept: application/json\r\n"
		     "User-Agent: moatd/" MOAT_VERSION "\r\n%s%s%s%s"
		     "Connection: close\r\n\r\n",
		     method, path, strchr(a->host, ':') ? "[" : "", a->host,
		     strchr(a->host, ':') ? "]" : "", a->port, token,
		     type ? "Content-Type: " : "", type ? type : "", type ? "\r\n" : "",
		     length);
	free(token);
	if (n < 0) {
		req = NULL;
		snprintf(c.why, sizeof(c.why), "out of memory");
		goto out;
	}
	if (tcp_connect(&c) || tls_start(&c))
		goto out;
	c.by_ns = now + timeout_s * 1000000000LL;
	if (by && by < c.by_ns)
		c.by_ns = by;
	if (send_all(&c, req, n) || (data && send_all(&c, data, strlen(data))) ||
	    receive(&c)) {
		/* a watch that ran its time out is a watch done */
		if ((b->ended || (b->line && c.timed_out)) && b->status > 0)
			status = b->status;
		goto out;
	}
	status = b->status;
	gnutls_bye(c.s, GNUTLS_SHUT_WR);
out:
	/* an answer past max: the caller says so (KUBE_API_TOO_LONG) */
	if (status < 0 && !b->ended && !b->cancelled && !b->cut && !quiet && c.why[0])
		pr_warn("kube: %s %s%s: %s", method, a->server, path, c.why);
	if (c.s)
		gnutls_deinit(c.s);
	if (c.cred)
		gnutls_certificate_free_credentials(c.cred);
	if (c.fd >= 0)
		close(c.fd);
	free(req);
	return status;
}

long kube_api_request(const struct kube_api *a, const char *method,
		      const char *path, const char *type, const char *data,
		      size_t max, bool quiet, char **out)
{
	struct body b = { .max = max };
	long status = perform(a, method, path, type, data, request_timeout_s(a), &b,
			     quiet);

	if (b.cut)
		status = KUBE_API_TOO_LONG;
	if (status >= 0 && !b.p) {
		b.p = strdup("");
		if (!b.p)
			status = -1;
	}
	*out = b.p;
	return status;
}

long kube_api_stream(const struct kube_api *a, const char *path, long timeout_s,
		     size_t max, int (*line)(const char *l, size_t len, void *ctx),
		     bool (*stop)(void *ctx), void (*opened)(void *ctx), void *ctx,
		     bool quiet, char **err_body)
{
	struct body b = { .max = max, .line = line, .stop = stop, .opened = opened,
			  .ctx = ctx };
	long status = perform(a, "GET", path, NULL, NULL, timeout_s, &b, quiet);

	*err_body = NULL;
	if (!kube_api_ok(status))
		*err_body = b.p;
	else
		free(b.p);
	return status;
}

long kube_api_get_chunks(const struct kube_api *a, const char *path, size_t max,
			 int (*chunk)(const char *p, size_t len, void *ctx), void *ctx,
			 bool quiet, char **err_body)
{
	struct body b = { .max = max, .chunk = chunk, .ctx = ctx };
	long status = perform(a, "GET", path, NULL, NULL, request_timeout_s(a), &b, quiet);

	*err_body = NULL;
	if (b.cut)
		status = KUBE_API_TOO_LONG;
	if (!kube_api_ok(status) && status >= 0) {
		*err_body = b.p ? b.p : strdup("");
		if (!*err_body)
			status = -1;
	} else {
		free(b.p);
	}
	return status;
}

static void *thread_main(void *arg)
{
	struct kube_thread *t = arg;

	t->fn(t->arg);
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
	return NULL;
}

int kube_thread_start(struct kube_thread *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	*t = (struct kube_thread){ .fn = fn, .arg = arg };
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&t->id, NULL, thread_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		pr_err("kube: no thread for the API server's requests: %s", strerror(err));
	return err ? -EAGAIN : 0;
}

void kube_thread_stop(struct kube_thread *t, long long deadline_ns)
{
	long long was = __atomic_load_n(&t->deadline_ns, __ATOMIC_ACQUIRE);

	/* asked twice (a toggle, then the exit): the earlier deadline holds */
	if (!was || deadline_ns < was)
		__atomic_store_n(&t->deadline_ns, deadline_ns, __ATOMIC_RELEASE);
	__atomic_store_n(&t->stop, true, __ATOMIC_RELEASE);
}

bool kube_thread_stopping(const struct kube_thread *t)
{
	return __atomic_load_n(&t->stop, __ATOMIC_ACQUIRE);
}

bool kube_thread_done(const struct kube_thread *t)
{
	return __atomic_load_n(&t->done, __ATOMIC_ACQUIRE);
}

int kube_thread_join(struct kube_thread *t, long long by_ns)
{
	long long left = by_ns - kube_mono_ns();
	struct timespec until;

	if (kube_thread_done(t))
		return -pthread_join(t->id, NULL);
	if (left <= 0)
		return -ETIMEDOUT;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += left / 1000000000LL;
	until.tv_nsec += left % 1000000000LL;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	return pthread_timedjoin_np(t->id, NULL, &until) ? -ETIMEDOUT : 0;
}

void kube_api_escape(const char *s, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *s && n + 4 < len; s++) {
		unsigned char ch = *s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~", ch)) {
			out[n++] = ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	out[n] = '\0';
}

char *kube_event_json(const struct kube_api *a, const char *ns, const char *name,
		      const char *uid, const char *reason, const char *type,
		      const char *message)
{
	json_object *o = json_object_new_object(), *m, *io, *src;
	char when[32], gen[MOAT_POD_NAME_MAX + 8], *text;
	time_t now = time(NULL);
	struct tm tm;

	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	snprintf(gen, sizeof(gen), "%.200s.moat-", name);
	json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(o, "kind", json_object_new_string("Event"));
	m = json_object_new_object();
	json_object_object_add(m, "generateName", json_object_new_string(gen));
	json_object_object_add(m, "namespace", json_object_new_string(ns));
	json_object_object_add(o, "metadata", m);
	io = json_object_new_object();
	json_object_object_add(io, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(io, "kind", json_object_new_string("Pod"));
	json_object_object_add(io, "namespace", json_object_new_string(ns));
	json_object_object_add(io, "name", json_object_new_string(name));
	json_object_object_add(io, "uid", json_object_new_string(uid));
	json_object_object_add(o, "involvedObject", io);
	json_object_object_add(o, "reason", json_object_new_string(reason));
	json_object_object_add(o, "message", json_object_new_string(message));
	json_object_object_add(o, "type", json_object_new_string(type));
	src = json_object_new_object();
	json_object_object_add(src, "component", json_object_new_string("moatd"));
	json_object_object_add(src, "host", json_object_new_string(a->node));
	json_object_object_add(o, "source", src);
	json_object_object_add(o, "reportingComponent", json_object_new_string("moatd"));
	json_object_object_add(o, "reportingInstance", json_object_new_string(a->node));
	json_object_object_add(o, "firstTimestamp", json_object_new_string(when));
	json_object_object_add(o, "lastTimestamp", json_object_new_string(when));
	json_object_object_add(o, "count", json_object_new_int(1));
	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}
