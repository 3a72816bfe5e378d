// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stub of the Kubernetes API server (kubestub.h): the fake the tests of
 * moatd's Node publisher, pod source and eviction talk to, and the
 * eviction benchmark's (tools/bench/kubestub_main.c), answering as the
 * API's documents say (API concepts: "Efficient detection of changes",
 * "Retrieving large results sets in chunks"; core/v1 Pod and PodList;
 * policy/v1 Eviction).  It needs nothing of the test harness: out of
 * memory, it aborts with a message.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "kubestub.h"

#define NODE	"test-node"

struct stub_pod {
	char uid[40];
	bool elsewhere;
	char *json;		/* the whole object, its resourceVersion in it */
};

struct stub_event {
	unsigned long rv;
	char *line;		/* with its newline */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct stub_req *req;	/* every request, in order */
	int n, cap, status_patches;
	json_object *node;	/* the Node, as the patches left it */
	unsigned long node_rv;
	/* pods */
	struct stub_pod *pods;
	size_t nr_pods;
	struct stub_event *ev;
	size_t nr_ev;
	unsigned long rv, compacted, bookmarks, closes;
	int fail_status, fail_n;
	int evict_status, evict_n, evict_delay_ms, evicting;
	void (*on_evict)(const char *ns, const char *name);
	bool stopping, gone_always;
	/* stub_odd_answer() */
	char odd_method[8], odd_prefix[128], odd_body[4096];
	int odd_status, odd_n;
	int patch_delay_ms;
} stub = {
	.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
};

/* Out of memory, or what a stub cannot be without: the end. */
#define must(c) do {							\
	if (!(c)) {							\
		fprintf(stderr, "kubestub: %s:%d: %s failed\n", __FILE__,	\
			__LINE__, #c);					\
		abort();						\
	}								\
} while (0)

static void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

struct stub_conn {
	struct stub_req r;	/* its body cut to what the record holds */
	size_t len;
	char *body;		/* all of it */
	size_t body_len;
};

static enum MHD_Result stub_reply(struct MHD_Connection *c, unsigned int code,
				  const char *body)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body),
		(void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	must(s);
	return s;
}

static enum MHD_Result stub_status(struct MHD_Connection *c, unsigned int code,
				   const char *reason)
{
	char body[512];

	snprintf(body, sizeof(body),
		 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
		 "\"status\":\"Failure\",\"reason\":\"%s\",\"code\":%u}", reason, code);
	return stub_reply(c, code, body);
}

/* ---- pods ---- */

/* Under the lock: an event for the watches. */
static void add_event(unsigned long rv, char *line)
{
	struct stub_event *v = realloc(stub.ev, (stub.nr_ev + 1) * sizeof(*v));

	must(v);
	stub.ev = v;
	stub.ev[stub.nr_ev].rv = rv;
	stub.ev[stub.nr_ev++].line = line;
	pthread_cond_broadcast(&stub.cond);
}

static struct stub_pod *find_pod(const char *uid)
{
	size_t i;

	for (i = 0; i < stub.nr_pods; i++)
		if (!strcmp(stub.pods[i].uid, uid))
			return &stub.pods[i];
	return NULL;
}

/* @obj with "@RV@" where its resourceVersion goes; freed. */
static void put_pod(const char *uid, bool elsewhere, char *obj)
{
	char *at = strstr(obj, "@RV@");
	struct stub_pod *p;
	const char *type = "MODIFIED";
	char *json;

	pthread_mutex_lock(&stub.lock);
	stub.rv++;
	/* the object's resourceVersion is the change's */
	json = format("%.*s%lu%s", (int)(at - obj), obj, stub.rv, at + 4);
	p = find_pod(uid);
	if (!p) {
		struct stub_pod *v = realloc(stub.pods, (stub.nr_pods + 1) * sizeof(*v));

		must(v);
		stub.pods = v;
		p = &stub.pods[stub.nr_pods++];
		memset(p, 0, sizeof(*p));
		snprintf(p->uid, sizeof(p->uid), "%s", uid);
		type = "ADDED";
	}
	free(p->json);
	p->json = json;
	p->elsewhere = elsewhere;
	if (!elsewhere)
		add_event(stub.rv, format("{\"type\":\"%s\",\"object\":%s}\n", type, json));
	pthread_mutex_unlock(&stub.lock);
	free(obj);
}

void stub_pod_ex(const char *uid, const char *ns, const char *name,
		 const char *labels, const char *priority_class, int priority,
		 const char *owner_kind, const char *containers)
{
	stub_pod_meta(uid, ns, name, labels, priority_class, priority, owner_kind, "",
		      containers);
}

static void pod_with(const char *uid, const char *ns, const char *name,
		     const char *labels, const char *priority_class, int priority,
		     const char *owner_kind, const char *meta, const char *containers,
		     const char *limits)
{
	char spec[4096] = "", lname[64], q[64];
	char statuses[4096] = "", owners[256] = "", cname[64], cid[80];
	const char *p = containers;
	size_t n = 0;
	int used;

	while (p && *p && sscanf(p, "%63[^=]=%79[^,]%n", cname, cid, &used) == 2) {
		n += snprintf(statuses + n, sizeof(statuses) - n,
			      "%s{\"name\":\"%s\",\"containerID\":\"containerd://%s\","
			      "\"ready\":true,\"restartCount\":0}", n ? "," : "", cname, cid);
		p += used + (p[used] == ',');
	}
	/* the spec's containers, each with its CPU limit */
	for (p = limits, n = 0; p && *p && sscanf(p, "%63[^=]=%63[^,]%n", lname, q, &used) == 2;
	     p += used + (p[used] == ','))
		n += snprintf(spec + n, sizeof(spec) - n,
			      "%s{\"name\":\"%s\",\"image\":\"registry.k8s.io/pause:3.10\","
			      "\"resources\":{\"limits\":{\"cpu\":\"%s\"},"
			      "\"requests\":{\"cpu\":\"%s\"}}}", n ? "," : "", lname, q, q);
	if (*owner_kind)
		snprintf(owners, sizeof(owners),
			 ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"%s\","
			 "\"name\":\"%s-owner\",\"uid\":\"00000000-0000-0000-0000-000000000001\","
			 "\"controller\":true}]", owner_kind, name);
	put_pod(uid, false, format(
		"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
		"\"namespace\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"@RV@\","
		"\"labels\":{%s}%s%s%s},\"spec\":{\"nodeName\":\"" NODE "\"%s%s%s,"
		"\"priority\":%d,\"containers\":[%s]},\"status\":{\"phase\":\"Running\","
		"\"qosClass\":\"Burstable\",\"containerStatuses\":[%s]}}",
		name, ns, uid, labels, owners, *meta ? "," : "", meta,
		*priority_class ? ",\"priorityClassName\":\"" : "",
		priority_class, *priority_class ? "\"" : "", priority, spec, statuses));
}

void stub_pod_meta(const char *uid, const char *ns, const char *name,
		   const char *labels, const char *priority_class, int priority,
		   const char *owner_kind, const char *meta, const char *containers)
{
	pod_with(uid, ns, name, labels, priority_class, priority, owner_kind, meta,
		 containers, "");
}

void stub_pod_cpu(const char *uid, const char *ns, const char *name,
		  const char *containers, const char *limits)
{
	pod_with(uid, ns, name, "", "", 0, "", "", containers, limits);
}

void stub_pod(const char *uid, const char *ns, const char *name,
	      const char *labels, const char *priority_class,
	      const char *containers)
{
	stub_pod_ex(uid, ns, name, labels, priority_class, *priority_class ? 1000 : 0,
		    "", containers);
}

void stub_pod_elsewhere(const char *uid, const char *ns, const char *name)
{
	put_pod(uid, true, format(
		"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
		"\"namespace\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"@RV@\","
		"\"labels\":{\"moat.io/class\":\"be\"}},\"spec\":{\"nodeName\":\"other-node\"},"
		"\"status\":{\"qosClass\":\"Burstable\"}}", name, ns, uid));
}

void stub_pod_delete(const char *uid)
{
	struct stub_pod *p;

	pthread_mutex_lock(&stub.lock);
	p = find_pod(uid);
	if (p) {
		stub.rv++;
		if (!p->elsewhere)
			add_event(stub.rv, format("{\"type\":\"DELETED\",\"object\":%s}\n",
						  p->json));
		free(p->json);
		*p = stub.pods[--stub.nr_pods];
	}
	pthread_mutex_unlock(&stub.lock);
}

void stub_raw_event(const char *line)
{
	pthread_mutex_lock(&stub.lock);
	/* after every change so far: a version of its own */
	stub.rv++;
	add_event(stub.rv, format("%s\n", line));
	pthread_mutex_unlock(&stub.lock);
}

void stub_bookmark(void)
{
	pthread_mutex_lock(&stub.lock);
	stub.bookmarks++;
	pthread_cond_broadcast(&stub.cond);
	pthread_mutex_unlock(&stub.lock);
}

void stub_compact(void)
{
	pthread_mutex_lock(&stub.lock);
	/* (other objects' changes moved the version on) */
	stub.compacted = ++stub.rv;
	pthread_mutex_unlock(&stub.lock);
}

void stub_gone_always(bool on)
{
	pthread_mutex_lock(&stub.lock);
	stub.gone_always = on;
	pthread_mutex_unlock(&stub.lock);
}

void stub_close_watches(void)
{
	pthread_mutex_lock(&stub.lock);
	stub.closes++;
	pthread_cond_broadcast(&stub.cond);
	pthread_mutex_unlock(&stub.lock);
}

void stub_fail_pods(int status, int n)
{
	pthread_mutex_lock(&stub.lock);
	stub.fail_status = status;
	stub.fail_n = n;
	pthread_mutex_unlock(&stub.lock);
}

void stub_evict_answer(int status, int n)
{
	pthread_mutex_lock(&stub.lock);
	stub.evict_status = status;
	stub.evict_n = n;
	pthread_mutex_unlock(&stub.lock);
}

void stub_evict_delay(int ms)
{
	pthread_mutex_lock(&stub.lock);
	stub.evict_delay_ms = ms;
	pthread_mutex_unlock(&stub.lock);
}

int stub_evicts_in_progress(void)
{
	int n;

	pthread_mutex_lock(&stub.lock);
	n = stub.evicting;
	pthread_mutex_unlock(&stub.lock);
	return n;
}

void stub_odd_answer(const char *method, const char *prefix, int status,
		     const char *body, int n)
{
	pthread_mutex_lock(&stub.lock);
	snprintf(stub.odd_method, sizeof(stub.odd_method), "%s", method);
	snprintf(stub.odd_prefix, sizeof(stub.odd_prefix), "%s", prefix);
	snprintf(stub.odd_body, sizeof(stub.odd_body), "%s", body);
	stub.odd_status = status;
	stub.odd_n = n;
	pthread_mutex_unlock(&stub.lock);
}

void stub_patch_delay(int ms)
{
	pthread_mutex_lock(&stub.lock);
	stub.patch_delay_ms = ms;
	pthread_mutex_unlock(&stub.lock);
}

/* Under no lock: @ms, or less when the stub stops. */
static void held(int ms)
{
	for (; ms > 0 && !__atomic_load_n(&stub.stopping, __ATOMIC_RELAXED); ms -= 50)
		nap(50);
}

void stub_on_evict(void (*fn)(const char *ns, const char *name))
{
	pthread_mutex_lock(&stub.lock);
	stub.on_evict = fn;
	pthread_mutex_unlock(&stub.lock);
}

int stub_posts(const char *what, const char *name)
{
	char tail[256];
	int i, n = 0;

	snprintf(tail, sizeof(tail), "/%s", what);
	pthread_mutex_lock(&stub.lock);
	for (i = 0; i < stub.n; i++) {
		const char *p = stub.req[i].path;
		size_t lp = strlen(p), lt = strlen(tail);

		if (strcmp(stub.req[i].method, "POST") || lp < lt ||
		    strcmp(p + lp - lt, tail))
			continue;
		if (*name && !strstr(stub.req[i].body, name))
			continue;
		n++;
	}
	pthread_mutex_unlock(&stub.lock);
	return n;
}

/*
 * Under the lock: whether an eviction's precondition (deleteOptions'
 * preconditions.uid), if any, is the UID of the pod @ns/@name the stub
 * has now: the API server refuses it with 409 otherwise.
 */
static bool uid_holds(const char *ns, const char *name, const char *body)
{
	const char *want = strstr(body, "\"preconditions\":{\"uid\":\"");
	char key[400];
	size_t i;

	if (!want)
		return true;
	want += strlen("\"preconditions\":{\"uid\":\"");
	snprintf(key, sizeof(key), "\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"", name, ns);
	for (i = 0; i < stub.nr_pods; i++) {
		const char *at = strstr(stub.pods[i].json, key);

		size_t n = strcspn(want, "\"");

		if (at)
			return !strncmp(at + strlen(key), want, n) && at[strlen(key) + n] == '"';
	}
	return true;
}

/*
 * POST /api/v1/namespaces/<ns>/pods/<name>/eviction, a policy/v1
 * Eviction of that pod; POST /api/v1/namespaces/<ns>/events.
 */
static enum MHD_Result namespaced(struct MHD_Connection *c, const char *url,
				  const char *method, const struct stub_req *r)
{
	char ns[64], name[256], want[512];
	void (*fn)(const char *, const char *) = NULL;
	int code = 201, end = 0, delay;

	if (strcmp(method, "POST"))
		return stub_status(c, 405, "MethodNotAllowed");
	if (sscanf(url, "/api/v1/namespaces/%63[^/]/events%n", ns, &end) == 1 && end &&
	    !url[end])
		return stub_reply(c, 201, r->body);
	if (sscanf(url, "/api/v1/namespaces/%63[^/]/pods/%255[^/]/eviction", ns, name) != 2)
		return stub_status(c, 404, "NotFound");
	snprintf(want, sizeof(want), "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"}",
		 name, ns);
	if (!strstr(r->body, "\"apiVersion\":\"policy/v1\"") ||
	    !strstr(r->body, "\"kind\":\"Eviction\"") || !strstr(r->body, want))
		return stub_status(c, 400, "BadRequest");
	pthread_mutex_lock(&stub.lock);
	delay = stub.evict_delay_ms;
	stub.evict_delay_ms = 0;
	stub.evicting++;
	pthread_mutex_unlock(&stub.lock);
	if (delay)		/* (a thread per connection: the others go on) */
		nap(delay);
	pthread_mutex_lock(&stub.lock);
	stub.evicting--;
	if (stub.evict_n > 0) {
		stub.evict_n--;
		code = stub.evict_status;
	}
	if (code / 100 == 2 && !uid_holds(ns, name, r->body))
		code = 409;
	if (code / 100 == 2)
		fn = stub.on_evict;
	pthread_mutex_unlock(&stub.lock);
	if (fn)
		fn(ns, name);
	if (code / 100 == 2)
		return stub_reply(c, code, "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
				  "\"metadata\":{},\"status\":\"Success\",\"code\":201}");
	return stub_status(c, code, code == 429 ? "TooManyRequests" :
				    code == 404 ? "NotFound" :
				    code == 409 ? "Conflict" : "InternalError");
}

unsigned long stub_rv(void)
{
	unsigned long rv;

	pthread_mutex_lock(&stub.lock);
	rv = stub.rv;
	pthread_mutex_unlock(&stub.lock);
	return rv;
}

/* A watch streaming: what it has sent up to, and what is left to send. */
struct watch {
	unsigned long rv, bookmarks, closes;
	bool want_bookmarks;
	time_t until;
	char *pending;
	size_t len, off;
	bool gone;		/* 410 sent: the end */
};

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct watch *w = cls;
	struct timespec ts;
	size_t i, n;

	pthread_mutex_lock(&stub.lock);
	for (;;) {
		if (w->off < w->len) {
			n = w->len - w->off < max ? w->len - w->off : max;
			memcpy(buf, w->pending + w->off, n);
			w->off += n;
			pthread_mutex_unlock(&stub.lock);
			return n;
		}
		free(w->pending);
		w->pending = NULL;
		w->len = w->off = 0;
		if (w->gone || stub.stopping || stub.closes != w->closes ||
		    time(NULL) >= w->until)
			break;
		for (i = 0; i < stub.nr_ev && stub.ev[i].rv <= w->rv; i++)
			;
		if (i < stub.nr_ev) {
			w->rv = stub.ev[i].rv;
			w->pending = strdup(stub.ev[i].line);
			w->len = strlen(w->pending);
			continue;
		}
		if (w->bookmarks != stub.bookmarks) {
			w->bookmarks = stub.bookmarks;
			if (w->want_bookmarks) {
				w->pending = format("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
						    "\"apiVersion\":\"v1\",\"metadata\":"
						    "{\"resourceVersion\":\"%lu\"}}}\n", stub.rv);
				w->len = strlen(w->pending);
				w->rv = stub.rv;
			}
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&stub.cond, &stub.lock, &ts);
	}
	pthread_mutex_unlock(&stub.lock);
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static void watch_free(void *cls)
{
	struct watch *w = cls;

	free(w->pending);
	free(w);
}

static const char *arg(struct MHD_Connection *c, const char *key)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result pods_watch(struct MHD_Connection *c)
{
	const char *rv = arg(c, "resourceVersion"), *t = arg(c, "timeoutSeconds");
	const char *b = arg(c, "allowWatchBookmarks"), *sel = arg(c, "fieldSelector");
	struct watch *w;
	struct MHD_Response *r;
	enum MHD_Result ret;

	/* the tests' moatd watches its node's pods only */
	if (!sel || strcmp(sel, "spec.nodeName=" NODE))
		return stub_status(c, 400, "BadRequest");
	w = calloc(1, sizeof(*w));
	must(w);
	pthread_mutex_lock(&stub.lock);
	w->rv = rv ? strtoul(rv, NULL, 10) : stub.rv;
	w->bookmarks = stub.bookmarks;
	w->closes = stub.closes;
	w->want_bookmarks = b && !strcmp(b, "true");
	w->until = time(NULL) + (t ? atol(t) : 1800);
	if (rv && (w->rv < stub.compacted || stub.gone_always)) {
		/* as the API server: 200, then an ERROR event, then the end */
		w->pending = format("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
				    "\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
				    "\"message\":\"too old resource version: %lu (%lu)\","
				    "\"reason\":\"Expired\",\"code\":410}}\n", w->rv, stub.compacted);
		w->len = strlen(w->pending);
		w->gone = true;
	}
	pthread_mutex_unlock(&stub.lock);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, watch_read, w,
					      watch_free);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result pods_list(struct MHD_Connection *c)
{
	const char *sel = arg(c, "fieldSelector"), *lim = arg(c, "limit");
	const char *cont = arg(c, "continue"), *rv = arg(c, "resourceVersion");
	size_t i, from = cont ? strtoul(cont + (*cont == 'c'), NULL, 10) : 0;
	size_t limit = lim ? strtoul(lim, NULL, 10) : 0, n = 0, seen = 0;
	bool mine = sel && !strcmp(sel, "spec.nodeName=" NODE);
	char *body = NULL, *more = NULL;
	size_t blen = 0;
	FILE *f;
	enum MHD_Result ret;

	/* as the API server: a continue token carries its version */
	if ((sel && !mine) || (cont && rv))
		return stub_status(c, 400, "BadRequest");
	/* resourceVersion=0: the watch cache's answer, which ignores limit */
	if (rv && !strcmp(rv, "0"))
		limit = 0;
	f = open_memstream(&body, &blen);
	must(f);
	pthread_mutex_lock(&stub.lock);
	fputs("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[", f);
	for (i = 0; i < stub.nr_pods; i++) {
		if (mine && stub.pods[i].elsewhere)
			continue;
		if (seen++ < from)
			continue;
		if (limit && n == limit) {
			more = format("c%zu", seen - 1);
			break;
		}
		fprintf(f, "%s%s", n++ ? "," : "", stub.pods[i].json);
	}
	fprintf(f, "],\"metadata\":{\"resourceVersion\":\"%lu\"", stub.rv);
	if (more)
		fprintf(f, ",\"continue\":\"%s\",\"remainingItemCount\":1", more);
	fputs("}}", f);
	pthread_mutex_unlock(&stub.lock);
	fclose(f);
	free(more);
	ret = stub_reply(c, 200, body);
	free(body);
	return ret;
}

/* ---- the node ---- */

/*
 * A JSON merge patch (RFC 7386) of @patch onto object @into; @smp: a
 * strategic merge patch instead, as the API server applies one to a
 * Node's status: "conditions" merged by their "type" (NodeStatus's
 * patchMergeKey), an element with "$patch": "delete" removed, other
 * lists replaced.  Whether anything changed.
 */
static bool merge(json_object *into, json_object *patch, bool smp);

static bool merge_conditions(json_object *have, json_object *patch)
{
	bool changed = false;
	size_t i, j;

	for (i = 0; i < json_object_array_length(patch); i++) {
		json_object *e = json_object_array_get_idx(patch, i), *t, *d, *mine = NULL;
		const char *type;

		must(json_object_object_get_ex(e, "type", &t));
		type = json_object_get_string(t);
		for (j = 0; j < json_object_array_length(have); j++) {
			json_object *h = json_object_array_get_idx(have, j), *ht;

			if (json_object_object_get_ex(h, "type", &ht) &&
			    !strcmp(json_object_get_string(ht), type))
				break;
		}
		mine = j < json_object_array_length(have) ? json_object_array_get_idx(have, j) : NULL;
		if (json_object_object_get_ex(e, "$patch", &d)) {
			if (mine) {
				json_object_array_del_idx(have, j, 1);
				changed = true;
			}
			continue;
		}
		if (!mine) {
			mine = json_object_new_object();
			json_object_array_add(have, mine);
			changed = true;
		}
		changed |= merge(mine, e, true);
	}
	return changed;
}

static bool merge(json_object *into, json_object *patch, bool smp)
{
	bool changed = false;

	json_object_object_foreach(patch, key, val) {
		json_object *have = NULL;
		bool had = json_object_object_get_ex(into, key, &have);

		if (!val) {
			if (had) {
				json_object_object_del(into, key);
				changed = true;
			}
		} else if (json_object_is_type(val, json_type_object)) {
			if (!json_object_is_type(have, json_type_object)) {
				have = json_object_new_object();
				json_object_object_add(into, key, have);
				changed = true;
			}
			changed |= merge(have, val, smp);
		} else if (smp && !strcmp(key, "conditions") &&
			   json_object_is_type(val, json_type_array)) {
			if (!json_object_is_type(have, json_type_array)) {
				have = json_object_new_array();
				json_object_object_add(into, key, have);
			}
			changed |= merge_conditions(have, val);
		} else if (!had || !json_object_equal(have, val)) {
			json_object_object_add(into, key, json_object_get(val));
			changed = true;
		}
	}
	return changed;
}

static json_object *node_part(const char *part)
{
	json_object *o;

	must(json_object_object_get_ex(stub.node, part, &o));
	return o;
}

static void node_reset(void)
{
	json_object_put(stub.node);
	stub.node = json_tokener_parse(
		"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" NODE "\","
		"\"annotations\":{\"other.io/owner\":\"ops\"}},"
		"\"spec\":{\"taints\":[{\"key\":\"other.io/maintenance\",\"effect\":\"NoSchedule\"}]},"
		"\"status\":{\"capacity\":{\"cpu\":\"2\"},\"allocatable\":{\"cpu\":\"2\"},"
		"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
		"\"lastTransitionTime\":\"2026-12-01T00:00:00Z\"}]}}");
	must(stub.node);
	stub.node_rv = 7;
}

/* The node, its resourceVersion in it, malloc()ed; under the lock. */
static char *node_text(void)
{
	json_object *meta = node_part("metadata");
	char rv[24];

	snprintf(rv, sizeof(rv), "%lu", stub.node_rv);
	json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
	return format("%s", json_object_to_json_string_ext(stub.node, JSON_C_TO_STRING_PLAIN));
}

/*
 * A PATCH of the node (@status: of its status subresource), as the API
 * server takes it: the patch types it knows, a resourceVersion in the
 * patch a precondition (409 when the node changed since), the main
 * resource's status and the status subresource's spec and metadata left
 * alone.  Its answer's code; the node in @out.
 */
static unsigned int node_patch(bool status, const char *type, const char *body, char **out)
{
	json_object *p, *part, *meta, *rv;
	bool smp = !strcmp(type, "application/strategic-merge-patch+json"), changed = false;
	unsigned int code = 200;

	*out = NULL;
	if (!smp && strcmp(type, "application/merge-patch+json"))
		return 415;
	p = json_tokener_parse(body);
	if (!json_object_is_type(p, json_type_object)) {
		json_object_put(p);
		return 400;
	}
	pthread_mutex_lock(&stub.lock);
	if (json_object_object_get_ex(p, "metadata", &meta) &&
	    json_object_object_get_ex(meta, "resourceVersion", &rv)) {
		if (strtoul(json_object_get_string(rv), NULL, 10) != stub.node_rv)
			code = 409;
		json_object_object_del(meta, "resourceVersion");
	}
	json_object_object_foreach(p, key, val) {
		bool mine = status ? !strcmp(key, "status") :
			    !strcmp(key, "metadata") || !strcmp(key, "spec");

		if (code != 200 || !mine || !json_object_is_type(val, json_type_object))
			continue;
		part = node_part(key);
		changed |= merge(part, val, smp);
	}
	if (changed)
		stub.node_rv++;
	*out = node_text();
	pthread_mutex_unlock(&stub.lock);
	json_object_put(p);
	return code;
}

/* @from's member @key as text in @out; false where it has none. */
static bool text_of(json_object *from, const char *key, char *out, size_t len)
{
	json_object *v;

	if (!json_object_object_get_ex(from, key, &v) || !v)
		return false;
	snprintf(out, len, "%s", json_object_get_string(v));
	return true;
}

char *stub_node_json(void)
{
	char *s;

	pthread_mutex_lock(&stub.lock);
	s = node_text();
	pthread_mutex_unlock(&stub.lock);
	return s;
}

bool stub_node_annotation(const char *key, char *out, size_t len)
{
	json_object *ann;
	bool found;

	pthread_mutex_lock(&stub.lock);
	found = json_object_object_get_ex(node_part("metadata"), "annotations", &ann) &&
		text_of(ann, key, out, len);
	pthread_mutex_unlock(&stub.lock);
	return found;
}

void stub_node_annotate(const char *key, const char *val)
{
	json_object *meta, *ann;

	pthread_mutex_lock(&stub.lock);
	meta = node_part("metadata");
	if (!json_object_object_get_ex(meta, "annotations", &ann) || !ann) {
		ann = json_object_new_object();
		json_object_object_add(meta, "annotations", ann);
	}
	if (val)
		json_object_object_add(ann, key, json_object_new_string(val));
	else
		json_object_object_del(ann, key);
	stub.node_rv++;
	pthread_mutex_unlock(&stub.lock);
}

bool stub_node_condition(const char *type, const char *field, char *out, size_t len)
{
	json_object *conds, *t;
	bool found = false;
	size_t i;

	pthread_mutex_lock(&stub.lock);
	if (json_object_object_get_ex(node_part("status"), "conditions", &conds))
		for (i = 0; !found && i < json_object_array_length(conds); i++) {
			json_object *c = json_object_array_get_idx(conds, i);

			if (json_object_object_get_ex(c, "type", &t) &&
			    !strcmp(json_object_get_string(t), type))
				found = text_of(c, field, out, len);
		}
	pthread_mutex_unlock(&stub.lock);
	return found;
}

bool stub_node_taint(const char *key)
{
	json_object *taints, *k;
	bool found = false;
	size_t i;

	pthread_mutex_lock(&stub.lock);
	if (json_object_object_get_ex(node_part("spec"), "taints", &taints))
		for (i = 0; i < json_object_array_length(taints); i++)
			found |= json_object_object_get_ex(json_object_array_get_idx(taints, i),
							   "key", &k) &&
				 !strcmp(json_object_get_string(k), key);
	pthread_mutex_unlock(&stub.lock);
	return found;
}

/* ---- the server ---- */

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind,
			       const char *key, const char *value)
{
	struct stub_req *r = cls;
	size_t n = strlen(r->query);

	snprintf(r->query + n, sizeof(r->query) - n, "%s%s=%s", n ? "&" : "", key,
		 value ? value : "");
	return MHD_YES;
}

static enum MHD_Result stub_handle(void *cls, struct MHD_Connection *c,
				   const char *url, const char *method,
				   const char *version, const char *data,
				   size_t *data_len, void **state)
{
	struct stub_conn *sc = *state;
	const char *h, *w;
	char odd[4096], type[64], *body, *node;
	unsigned int code;
	bool status;
	int fail = 0, odd_status = 0, delay = 0;

	if (!sc) {
		sc = calloc(1, sizeof(*sc));
		snprintf(sc->r.method, sizeof(sc->r.method), "%s", method);
		snprintf(sc->r.path, sizeof(sc->r.path), "%s", url);
		h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
		snprintf(sc->r.type, sizeof(sc->r.type), "%s", h ? h : "");
		h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
		snprintf(sc->r.auth, sizeof(sc->r.auth), "%s", h ? h : "");
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &sc->r);
		*state = sc;
		return MHD_YES;
	}
	if (*data_len) {
		size_t n = *data_len;

		sc->body = realloc(sc->body, sc->body_len + n + 1);
		must(sc->body);
		memcpy(sc->body + sc->body_len, data, n);
		sc->body_len += n;
		sc->body[sc->body_len] = '\0';
		if (sc->len + n >= sizeof(sc->r.body))
			n = sizeof(sc->r.body) - sc->len - 1;
		memcpy(sc->r.body + sc->len, data, n);
		sc->len += n;
		*data_len = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&stub.lock);
	if (stub.n == stub.cap) {
		struct stub_req *v = realloc(stub.req, (stub.cap * 2 + 256) * sizeof(*v));

		must(v);
		stub.req = v;
		stub.cap = stub.cap * 2 + 256;
	}
	stub.req[stub.n++] = sc->r;
	status = !strcmp(url, "/api/v1/nodes/" NODE "/status");
	if (status && !strcmp(method, "PATCH"))
		stub.status_patches++;
	if (!strcmp(url, "/api/v1/pods") && stub.fail_n > 0) {
		stub.fail_n--;
		fail = stub.fail_status;
	}
	if (stub.odd_n > 0 && !strcmp(method, stub.odd_method) &&
	    !strncmp(url, stub.odd_prefix, strlen(stub.odd_prefix))) {
		stub.odd_n--;
		odd_status = stub.odd_status;
		snprintf(odd, sizeof(odd), "%s", stub.odd_body);
	}
	if (!strcmp(method, "PATCH"))
		delay = stub.patch_delay_ms;
	pthread_mutex_unlock(&stub.lock);
	body = sc->body;
	snprintf(type, sizeof(type), "%s", sc->r.type);
	if (odd_status) {
		free(body);
		free(sc);
		*state = NULL;
		return stub_reply(c, odd_status, odd);
	}
	if (!strncmp(url, "/api/v1/namespaces/", 19)) {
		enum MHD_Result ret = namespaced(c, url, method, &sc->r);

		free(body);
		free(sc);
		*state = NULL;
		return ret;
	}
	free(sc);
	*state = NULL;
	if (strcmp(method, "PATCH") || strncmp(url, "/api/v1/nodes/" NODE,
					       strlen("/api/v1/nodes/" NODE))) {
		free(body);
		body = NULL;
	}
	if (!strcmp(url, "/api/v1/pods")) {
		if (strcmp(method, "GET"))
			return stub_status(c, 405, "MethodNotAllowed");
		if (fail)
			return stub_status(c, fail, fail == 401 ? "Unauthorized" :
						    "InternalError");
		w = arg(c, "watch");
		if (w && (!strcmp(w, "1") || !strcmp(w, "true")))
			return pods_watch(c);
		return pods_list(c);
	}
	if (strcmp(url, "/api/v1/nodes/" NODE) && !status)
		return stub_status(c, 404, "NotFound");
	if (!strcmp(method, "GET") && !status) {
		enum MHD_Result ret;

		pthread_mutex_lock(&stub.lock);
		node = node_text();
		pthread_mutex_unlock(&stub.lock);
		ret = stub_reply(c, 200, node);
		free(node);
		return ret;
	}
	if (strcmp(method, "PATCH"))
		return stub_status(c, 405, "MethodNotAllowed");
	held(delay);
	if (status && stub_status_patches() == 1) {
		free(body);
		return stub_status(c, 500, "InternalError");
	}
	code = node_patch(status, type, body ? body : "", &node);
	free(body);
	if (code == 200) {
		enum MHD_Result ret = stub_reply(c, 200, node);

		free(node);
		return ret;
	}
	free(node);
	return stub_status(c, code, code == 409 ? "Conflict" : code == 415 ?
				    "UnsupportedMediaType" : "BadRequest");
}

bool stub_seen(const char *method, const char *path, const char *has,
	       const char *lacks, struct stub_req *got)
{
	bool found = false;
	int i;

	pthread_mutex_lock(&stub.lock);
	for (i = stub.n - 1; i >= 0 && !found; i--) {
		struct stub_req *r = &stub.req[i];

		if (strcmp(r->method, method) || strcmp(r->path, path) ||
		    (has && !strstr(r->body, has)) || (lacks && strstr(r->body, lacks)))
			continue;
		*got = *r;
		found = true;
	}
	pthread_mutex_unlock(&stub.lock);
	return found;
}

bool wait_stub(const char *method, const char *path, const char *has,
	       const char *lacks, struct stub_req *got, int ms)
{
	for (; ms > 0; ms -= 100) {
		if (stub_seen(method, path, has, lacks, got))
			return true;
		nap(100);
	}
	return false;
}

int stub_status_patches(void)
{
	int n;

	pthread_mutex_lock(&stub.lock);
	n = stub.status_patches;
	pthread_mutex_unlock(&stub.lock);
	return n;
}

bool stub_query_value(const char *path, const char *has, const char *key, char *out,
		      size_t len)
{
	bool found = false;
	int i;

	pthread_mutex_lock(&stub.lock);
	for (i = stub.n - 1; i >= 0 && !found; i--) {
		const char *q = stub.req[i].query, *at;
		size_t k = strlen(key);

		if (strcmp(stub.req[i].method, "GET") || strcmp(stub.req[i].path, path) ||
		    (has && !strstr(q, has)))
			continue;
		for (at = q; (at = strstr(at, key)); at += k)
			if ((at == q || at[-1] == '&') && at[k] == '=')
				break;
		if (!at)
			break;
		snprintf(out, len, "%.*s", (int)strcspn(at + k + 1, "&"), at + k + 1);
		found = true;
	}
	pthread_mutex_unlock(&stub.lock);
	return found;
}

int stub_count(const char *method, const char *path, const char *has)
{
	int i, n = 0;

	pthread_mutex_lock(&stub.lock);
	for (i = 0; i < stub.n; i++)
		n += !strcmp(stub.req[i].method, method) &&
		     !strcmp(stub.req[i].path, path) &&
		     (!has || strstr(stub.req[i].query, has));
	pthread_mutex_unlock(&stub.lock);
	return n;
}

int stub_writes(char *first, size_t len)
{
	int i, n = 0;

	first[0] = '\0';
	pthread_mutex_lock(&stub.lock);
	for (i = 0; i < stub.n; i++) {
		if (!strcmp(stub.req[i].method, "GET"))
			continue;
		if (!n++)
			snprintf(first, len, "%s %s %.120s", stub.req[i].method,
				 stub.req[i].path, stub.req[i].body);
	}
	pthread_mutex_unlock(&stub.lock);
	return n;
}

/* The stub's certificate and key, kept for its life. */
static char *stub_cert, *stub_key;

static char *slurp_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static char stub_san[128] = "IP:127.0.0.1";

void stub_cert_san(const char *san)
{
	snprintf(stub_san, sizeof(stub_san), "%s", san);
}

struct MHD_Daemon *stub_serve(const char *sa, unsigned int *port)
{
	char cmd[2 * PATH_MAX + 256];
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *api;

	if (mkdir(sa, 0700) && errno != EEXIST) {
		fprintf(stderr, "kubestub: %s: %s\n", sa, strerror(errno));
		return NULL;
	}
	snprintf(cmd, sizeof(cmd),
		 "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
		 "-nodes -keyout key.pem -out ca.crt -days 1 -subj /CN=127.0.0.1 "
		 "-addext subjectAltName=%s 2>/dev/null && printf 't0ken-123\\n' >token",
		 sa, stub_san);
	stub_cert_san("IP:127.0.0.1");	/* the next one as usual */
	if (system(cmd)) {
		fprintf(stderr, "kubestub: the certificate: %s failed\n", cmd);
		return NULL;
	}
	snprintf(cmd, sizeof(cmd), "%s/ca.crt", sa);
	stub_cert = slurp_file(cmd);
	snprintf(cmd, sizeof(cmd), "%s/key.pem", sa);
	stub_key = slurp_file(cmd);
	if (!stub_cert || !stub_key) {
		fprintf(stderr, "kubestub: %s/ca.crt or key.pem unreadable\n", sa);
		return NULL;
	}
	pthread_mutex_lock(&stub.lock);
	node_reset();
	stub.n = stub.status_patches = 0;
	stub.rv = 100;
	stub.compacted = stub.bookmarks = stub.closes = 0;
	stub.fail_n = 0;
	stub.evict_n = 0;
	stub.evict_delay_ms = 0;
	stub.evicting = 0;
	stub.gone_always = false;
	stub.on_evict = NULL;
	stub.odd_n = 0;
	stub.patch_delay_ms = 0;
	stub.stopping = false;
	pthread_mutex_unlock(&stub.lock);
	api = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
			       MHD_USE_THREAD_PER_CONNECTION | MHD_USE_TLS |
			       MHD_USE_ERROR_LOG, 0, NULL, NULL, stub_handle, NULL,
			       MHD_OPTION_HTTPS_MEM_KEY, stub_key,
			       MHD_OPTION_HTTPS_MEM_CERT, stub_cert, MHD_OPTION_END);
	if (!api) {
		fprintf(stderr, "kubestub: the server did not start\n");
		return NULL;
	}
	info = MHD_get_daemon_info(api, MHD_DAEMON_INFO_BIND_PORT);
	*port = info->port;
	return api;
}

void stub_stop(struct MHD_Daemon *api)
{
	size_t i;

	pthread_mutex_lock(&stub.lock);
	stub.stopping = true;
	pthread_cond_broadcast(&stub.cond);
	pthread_mutex_unlock(&stub.lock);
	MHD_stop_daemon(api);
	free(stub_cert);
	free(stub_key);
	stub_cert = stub_key = NULL;
	for (i = 0; i < stub.nr_pods; i++)
		free(stub.pods[i].json);
	free(stub.pods);
	stub.pods = NULL;
	stub.nr_pods = 0;
	for (i = 0; i < stub.nr_ev; i++)
		free(stub.ev[i].line);
	free(stub.ev);
	stub.ev = NULL;
	stub.nr_ev = 0;
	json_object_put(stub.node);
	stub.node = NULL;
}
