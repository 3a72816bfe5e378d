// SPDX-License-Identifier: GPL-2.0-only
/*
 * The Kubernetes API server's client (kubeapi.h): libcurl, loaded with
 * dlopen() when the first user starts, not linked: with its dependencies
 * it is 3.9 MiB of moatd's RSS (tools/bench/memory.sh), which a node that
 * talks to no API server should not carry.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <curl/curl.h>
#include <json-c/json.h>
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

#ifndef MOAT_LIBCURL
#define MOAT_LIBCURL	"libcurl.so.4"
#endif

/*
 * libcurl's global init initialises libssh2, where its libcurl has it
 * (Debian's does), and so libssh2's crypto library, OpenSSL's libcrypto:
 * 1.7 MiB of moatd's RSS (libcrypto's code and tables faulted in) for
 * SSH, which moatd never speaks (its TLS is GnuTLS's).  libssh2_init()
 * is counted, and only the first initialises the crypto library, unless
 * told not to (LIBSSH2_INIT_NO_CRYPTO): moatd's goes first.  Where libcurl
 * has no libssh2, nothing is done.
 */
#define LIBSSH2_SONAME		"libssh2.so.1"
#define LIBSSH2_INIT_NO_CRYPTO	0x0001

static void ssh_without_crypto(void)
{
	void *dl = dlopen(LIBSSH2_SONAME, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
	int (*init)(int flags);

	if (!dl)
		return;
	init = (int (*)(int))dlsym(dl, "libssh2_init");
	if (init && init(LIBSSH2_INIT_NO_CRYPTO))
		pr_debug("kube: libssh2_init: failed, left to libcurl");
	dlclose(dl);	/* libcurl holds it */
}

/* The libcurl functions moatd uses, from dlopen(). */
static struct {
	void *dl;
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption o, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO i, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode rc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} curl;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

int kube_api_load(void)
{
	const struct { const char *name; void **fn; } syms[] = {
		{ "curl_global_init", (void **)&curl.global_init },
		{ "curl_easy_init", (void **)&curl.easy_init },
		{ "curl_easy_setopt", (void **)&curl.easy_setopt },
		{ "curl_easy_perform", (void **)&curl.easy_perform },
		{ "curl_easy_getinfo", (void **)&curl.easy_getinfo },
		{ "curl_easy_cleanup", (void **)&curl.easy_cleanup },
		{ "curl_easy_strerror", (void **)&curl.easy_strerror },
		{ "curl_slist_append", (void **)&curl.slist_append },
		{ "curl_slist_free_all", (void **)&curl.slist_free_all },
	};
	size_t i;
	int err = 0;

	pthread_mutex_lock(&load_lock);
	if (curl.dl)
		goto out;
	curl.dl = dlopen(MOAT_LIBCURL, RTLD_NOW | RTLD_LOCAL);
	if (!curl.dl) {
		pr_err("kube: %s (libcurl, for the API server): %s", MOAT_LIBCURL,
		       dlerror());
		err = -ENOENT;
		goto out;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].fn = dlsym(curl.dl, syms[i].name);
		if (!*syms[i].fn) {
			pr_err("kube: %s has no %s", MOAT_LIBCURL, syms[i].name);
			dlclose(curl.dl);
			curl.dl = NULL;
			err = -ENOENT;
			goto out;
		}
	}
	ssh_without_crypto();
	if (curl.global_init(CURL_GLOBAL_DEFAULT)) {
		dlclose(curl.dl);
		curl.dl = NULL;
		err = -EIO;
	}
out:
	pthread_mutex_unlock(&load_lock);
	return err;
}

int kube_api_init(struct kube_api *a)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *sa = getenv("MOAT_KUBE_SA_DIR");

	memset(a, 0, sizeof(*a));
	if (!host || !port || !*host || !*port)
		return -ENOENT;
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
	CURL *c;
	const struct kube_api *api;
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
	bool ended;		/* @line or @stop ended the stream */
};

/*
 * @add bytes more of @b, in a buffer that doubles: a realloc() of each
 * chunk curl gives (16 KiB) copied the whole body each time with an
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

static size_t stream_data(struct body *b, const char *ptr, size_t add)
{
	size_t done = 0;

	while (done < add) {
		const char *nl = memchr(ptr + done, '\n', add - done);
		size_t n = (nl ? (size_t)(nl - ptr) : add) - done;

		if (!b->skip && append(b, ptr + done, n)) {
			if (!b->cut)
				return 0;	/* out of memory */
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
	return add;
end:
	b->ended = true;
	return 0;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ctx)
{
	struct body *b = ctx;
	size_t add = size * nmemb;
	long status = 0;

	if (b->line || b->chunk) {
		curl.easy_getinfo(b->c, CURLINFO_RESPONSE_CODE, &status);
		if (kube_api_ok(status) && b->line)
			return stream_data(b, ptr, add);
		if (kube_api_ok(status)) {
			if (!b->chunk(ptr, add, b->ctx))
				return add;
			b->ended = true;
			return 0;
		}
	}
	return append(b, ptr, add) ? 0 : add;
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

/* libcurl calls it at least once a second, whatever the transfer does. */
static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	struct body *b = ctx;
	long status = 0;

	if (cancelled(b->api)) {
		b->cancelled = true;
		return 1;
	}
	if (b->stop && b->stop(b->ctx)) {
		b->ended = true;
		return 1;
	}
	if (b->opened) {
		curl.easy_getinfo(b->c, CURLINFO_RESPONSE_CODE, &status);
		if (kube_api_ok(status)) {
			b->opened(b->ctx);
			b->opened = NULL;
		}
	}
	return 0;
}

static int set_keepalive(void *ctx, curl_socket_t fd, curlsocktype purpose)
{
	int on = 1, idle = KEEPIDLE_S, intvl = KEEPINTVL_S, cnt = KEEPCNT;
	unsigned int user = USER_TIMEOUT_MS;

	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKOPT_OK;
	/* a failure leaves the kernel's defaults: slower to notice, no worse */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
	return CURL_SOCKOPT_OK;
}

/* A request's connect and answer, each: kube/request_timeout_s. */
static long request_timeout_s(const struct kube_api *a)
{
	return a->timeout_s ? (long)__atomic_load_n(a->timeout_s, __ATOMIC_RELAXED) :
			      TIMEOUT_S;
}

static long perform(const struct kube_api *a, const char *method,
		    const char *path, const char *type, const char *data,
		    long timeout_s, struct body *b, bool quiet)
{
	char url[2048], auth[8192], ca[PATH_MAX + 16], ctype[128];
	struct curl_slist *h = NULL;
	char *token = sa_file(a, "token");
	long long by = deadline_of(a), timeout_ms = timeout_s * 1000;
	long status = -1;
	CURLcode rc;
	CURL *c;

	if (cancelled(a)) {
		free(token);
		b->cancelled = true;
		return -1;
	}
	if (by && (by - kube_mono_ns()) / 1000000 < timeout_ms)
		timeout_ms = (by - kube_mono_ns()) / 1000000 + 1;
	if (!token) {
		if (!quiet)
			pr_warn("kube: no service account token in %s", a->sa_dir);
		return -1;
	}
	c = curl.easy_init();
	if (!c) {
		free(token);
		return -1;
	}
	b->c = c;
	b->api = a;
	snprintf(url, sizeof(url), "%s%s", a->server, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	snprintf(ca, sizeof(ca), "%s/ca.crt", a->sa_dir);
	free(token);
	h = curl.slist_append(h, auth);
	h = curl.slist_append(h, "Accept: application/json");
	if (type) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s", type);
		h = curl.slist_append(h, ctype);
	}
	curl.easy_setopt(c, CURLOPT_URL, url);
	curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl.easy_setopt(c, CURLOPT_HTTPHEADER, h);
	/* the service account's CA only, not also the distribution's */
	curl.easy_setopt(c, CURLOPT_CAINFO, ca);
	curl.easy_setopt(c, CURLOPT_CAPATH, NULL);
	curl.easy_setopt(c, CURLOPT_USERAGENT, "moatd/" MOAT_VERSION);
	curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, request_timeout_s(a));
	curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl.easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, set_keepalive);
	curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl.easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl.easy_setopt(c, CURLOPT_XFERINFODATA, b);
	curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	if (data)
		curl.easy_setopt(c, CURLOPT_POSTFIELDS, data);
	rc = curl.easy_perform(c);
	if (rc == CURLE_OK || b->ended ||
	    (b->line && rc == CURLE_OPERATION_TIMEDOUT))
		curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (!status)
		status = -1;
	/* an answer past max: the caller says so (KUBE_API_TOO_LONG) */
	if (status < 0 && !b->ended && !b->cancelled && !b->cut && !quiet)
		pr_warn("kube: %s %s: %s", method, url, curl.easy_strerror(rc));
	curl.easy_cleanup(c);
	curl.slist_free_all(h);
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
