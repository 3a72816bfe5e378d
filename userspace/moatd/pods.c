// SPDX-License-Identifier: GPL-2.0-only
/*
 * The node's pods, from the API server: namespace, name, the label
 * moat.io/class, the priority class, priority and QoS class and the
 * containers' names, per pod UID, for classes (groups.c) and for names in
 * every output.
 *
 * What kubelet itself does (its pod config source): list then watch
 * GET /api/v1/pods?fieldSelector=spec.nodeName=<node>, so that the API
 * server sends this node's pods only and the cost stays flat with the
 * cluster's size.  Lists are paged (limit, continue); a watch resumes
 * from the last resourceVersion it saw, asks for bookmarks (which move
 * the resourceVersion while nothing changes), and ends after
 * timeoutSeconds, when it is made again; a 410 Gone (the version was
 * compacted away, as an HTTP status or an ERROR event) means list again.
 * A failed request is retried with a doubling backoff (1 s to 5 min).
 *
 * Kubelet's own /pods endpoint (koordlet reads it) would spare the API
 * server, but on its authenticated port (10250) it needs nodes/proxy,
 * which grants exec into every pod of the node, and the read-only port
 * (10255) is off by default and deprecated: the API server's watch
 * needs only pods get, list and watch.
 *
 * The requests block, so they run in a thread of their own, which keeps
 * a table of pods by UID under a lock; the loop takes what it needs of
 * it once a period (pods_update()), for the groups it has.  When the API
 * server is away the table stays as it was, and a group keeps the
 * metadata it had even when its pod leaves the table: no data going
 * missing reclassifies a pod.  Each kind of failure is logged once, until
 * the source is in sync again.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "groups.h"
#include "kubeapi.h"
#include "log.h"
#include "pods.h"

#define BACKOFF_MIN_MS	1000
#define BACKOFF_MAX_MS	(5 * 60 * 1000)
/*
 * A page's pods are parsed one at a time as its text arrives (podmeta.c),
 * so a page costs one pod's text, whatever its length.  A pod is at most
 * 1.5 MiB (etcd's request limit): ITEM_MAX bounds one, and EVENT_MAX a
 * watch event that carries one.
 */
#define LIST_PAGE	250
#define ITEM_MAX	(2 << 20)	/* a list's item */
#define ERROR_MAX	(64 << 10)	/* an answer that is not 2xx: a Status */
#define EVENT_MAX	(2 << 20)	/* a watch event */
#define WATCH_S		300		/* and up to a fifth more, at random */

/* What the thread knows of one pod: only what moat uses. */
struct pod_entry {
	char uid[MOAT_POD_UID_MAX];
	char *ns, *name, *priority_class;
	long long priority;
	char qos[16];
	bool daemonset, mirror, controlled, terminating, job;
	int label_class;
	char label_value[MOAT_POD_CTR_NAME_MAX];
	long long rqlat_target_us;		/* podmeta.h */
	char target_value[32];
	long long cpu_limit_m;
	size_t nr;
	struct moat_pod_container *c;
};

struct pod_table {
	struct pod_entry **v;	/* sorted by uid */
	size_t n, cap;
};

/* Kinds of failure, each logged once until the source is in sync again. */
enum note {
	NOTE_LIST,		/* a list failed */
	NOTE_WATCH,		/* a watch failed */
	NOTE_EVENT,		/* a watch event that does not parse */
	NOTE_LONG,		/* an event past EVENT_MAX */
	NOTE_ITEM,		/* a list's pod that does not parse */
};

struct podsrc {
	struct kube_thread th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct kube_api api;
	/* under lock: what the loop reads */
	struct pod_table t;
	unsigned long long gen;		/* the table changed */
	bool synced;
	double sync_s;			/* CLOCK_MONOTONIC of the last sync */
	unsigned long long errors, relists, events;
	/* the thread's own */
	char rv[MOAT_POD_RV_MAX];	/* "": list again */
	bool gone;			/* the watch said 410 */
	bool open;			/* the watch was answered 2xx */
	bool failed;			/* it ended on another ERROR event */
	unsigned int noted;		/* enum note bits logged */
};

/*
 * The module: its knob, the source while it runs, and one asked to stop
 * that has not ended yet (its request ends within a second).
 */
struct pods_mod {
	unsigned int watch;
	struct podsrc *ps, *stopping;
	bool start_wanted;		/* kube/pods went to 1 meanwhile */
	unsigned long long seen_gen, seen_groups_gen;
};

static struct pods_mod *P(const struct moatd *d)
{
	return moatd_mod(d, MOD_PODS);
}

/* ---- the table ---- */

static void entry_free(struct pod_entry *e)
{
	if (!e)
		return;
	free(e->ns);
	free(e->name);
	free(e->priority_class);
	free(e->c);
	free(e);
}

static struct pod_entry *entry_new(const struct moat_pod_meta *p)
{
	struct pod_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	strcpy(e->uid, p->uid);
	e->ns = strdup(p->ns);
	e->name = strdup(p->name);
	e->priority_class = strdup(p->priority_class);
	e->priority = p->priority;
	strcpy(e->qos, p->qos);
	e->daemonset = p->daemonset;
	e->mirror = p->mirror;
	e->controlled = p->controlled;
	e->terminating = p->terminating;
	e->job = p->job;
	e->rqlat_target_us = p->rqlat_target_us;
	strcpy(e->target_value, p->target_value);
	e->label_class = p->label_class;
	strcpy(e->label_value, p->label_value);
	e->cpu_limit_m = p->cpu_limit_m;
	e->nr = p->nr_containers;
	e->c = e->nr ? malloc(e->nr * sizeof(*e->c)) : NULL;
	if (!e->ns || !e->name || !e->priority_class || (e->nr && !e->c)) {
		entry_free(e);
		return NULL;
	}
	if (e->nr)
		memcpy(e->c, p->c, e->nr * sizeof(*e->c));
	return e;
}

/* The index of @uid in @t, or where it would go (*@found false). */
static size_t table_pos(const struct pod_table *t, const char *uid, bool *found)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(t->v[mid]->uid, uid);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static const struct pod_entry *table_find(const struct pod_table *t,
					  const char *uid)
{
	bool found;
	size_t i = table_pos(t, uid, &found);

	return found ? t->v[i] : NULL;
}

static int table_put(struct pod_table *t, const struct moat_pod_meta *p)
{
	struct pod_entry *e = entry_new(p);
	bool found;
	size_t i;

	if (!e)
		return -ENOMEM;
	i = table_pos(t, p->uid, &found);
	if (found) {
		entry_free(t->v[i]);
		t->v[i] = e;
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		void *v = realloc(t->v, cap * sizeof(*t->v));

		if (!v) {
			entry_free(e);
			return -ENOMEM;
		}
		t->v = v;
		t->cap = cap;
	}
	memmove(t->v + i + 1, t->v + i, (t->n - i) * sizeof(*t->v));
	t->v[i] = e;
	t->n++;
	return 0;
}

static void table_del(struct pod_table *t, const char *uid)
{
	bool found;
	size_t i = table_pos(t, uid, &found);

	if (!found)
		return;
	entry_free(t->v[i]);
	memmove(t->v + i, t->v + i + 1, (t->n - i - 1) * sizeof(*t->v));
	t->n--;
}

static void table_free(struct pod_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		entry_free(t->v[i]);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* ---- the thread ---- */

__attribute__((format(printf, 3, 4)))
static void note(struct podsrc *ps, enum note kind, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	pthread_mutex_lock(&ps->lock);
	ps->errors++;
	pthread_mutex_unlock(&ps->lock);
	if (ps->noted & (1u << kind))
		return;
	ps->noted |= 1u << kind;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_warn("kube: pods: %s (said once, until in sync again)", msg);
}

/* A request that failed: its HTTP status and body, or no answer. */
static void note_failed(struct podsrc *ps, enum note kind, const char *what,
			long status, const char *body)
{
	if (status >= 0)
		note(ps, kind, "%s: HTTP %ld: %.200s", what, status, body ? body : "");
	else if (status == KUBE_API_TOO_LONG)
		note(ps, kind, "%s: an error answer past %d KiB", what, ERROR_MAX >> 10);
	else
		note(ps, kind, "%s: no answer from %s", what, ps->api.server);
}

/* In step with the API server (a list, an event, a watch's end). */
static void synced(struct podsrc *ps)
{
	bool again;

	pthread_mutex_lock(&ps->lock);
	again = !ps->synced && ps->noted;
	ps->synced = true;
	ps->sync_s = moatd_mono_s();
	pthread_mutex_unlock(&ps->lock);
	if (again) {
		pr_info("kube: pods: in sync with the API server again");
		ps->noted = 0;
	}
}

static void unsynced(struct podsrc *ps)
{
	pthread_mutex_lock(&ps->lock);
	ps->synced = false;
	pthread_mutex_unlock(&ps->lock);
}

static bool stopping(void *ctx)
{
	struct podsrc *ps = ctx;

	return kube_thread_stopping(&ps->th);
}

static void selector(const struct podsrc *ps, char *out, size_t len)
{
	char field[300];

	snprintf(field, sizeof(field), "spec.nodeName=%s", ps->api.node);
	kube_api_escape(field, out, len);
}

static int list_add(const struct moat_pod_meta *p, void *ctx)
{
	return table_put(ctx, p);
}

/* A page's text as it comes, to its parser. */
static int list_chunk(const char *p, size_t len, void *ctx)
{
	return moat_pod_list_stream_feed(ctx, p, len);
}

/*
 * List the node's pods, page by page, into a new table: 0 or -EIO.
 *
 * From the API server's watch cache (resourceVersion=0) where @cached, as
 * client-go's reflectors list: when every node relists at once (an API
 * server restarted), etcd is not read once a node.  The cache ignores
 * limit (before Kubernetes 1.33's paginated lists from it), so its answer
 * is one page of all the node's pods: each page is parsed as it arrives
 * (podmeta.h's stream), a pod at a time, so that what it costs is a pod's
 * text, whatever the page's length.  After a 410 the list is not
 * @cached: a cache that lags could give an older state than the one the
 * watch had reached.
 */
static int relist(struct podsrc *ps, bool cached)
{
	char path[8192], sel[1024], cont[2048] = "", esc[3 * 2048 + 1], why[256];
	char rv[MOAT_POD_RV_MAX];
	struct pod_table t = { 0 };
	struct moat_pod_list_stream *ls;
	size_t bad = 0, page_bad;
	int err;
	long status;
	char *body;

	selector(ps, sel, sizeof(sel));
	do {
		kube_api_escape(cont, esc, sizeof(esc));
		snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=%s&limit=%d%s%s%s",
			 sel, LIST_PAGE, cached ? "&resourceVersion=0" : "",
			 cont[0] ? "&continue=" : "", esc);
		ls = moat_pod_list_stream_new(ITEM_MAX, list_add, &t);
		if (!ls) {
			note(ps, NOTE_LIST, "list: %s", "out of memory");
			table_free(&t);
			return -EIO;
		}
		status = kube_api_get_chunks(&ps->api, path, ERROR_MAX,
					     list_chunk, ls, ps->noted & (1u << NOTE_LIST), &body);
		if (!kube_api_ok(status)) {
			note_failed(ps, NOTE_LIST, "list", status, body ? body : "");
			free(body);
			moat_pod_list_stream_free(ls);
			table_free(&t);
			return -EIO;
		}
		err = moat_pod_list_stream_end(ls, rv, cont, sizeof(cont), &page_bad, why,
					       sizeof(why));
		moat_pod_list_stream_free(ls);
		if (err) {
			note(ps, NOTE_LIST, "list: %s", err == -ENOMEM ? "out of memory" : why);
			table_free(&t);
			return -EIO;
		}
		if (page_bad)
			note(ps, NOTE_ITEM, "list: %zu pods left out: %s", page_bad, why);
		bad += page_bad;
	} while (cont[0] && !stopping(ps));
	if (stopping(ps)) {
		table_free(&t);
		return -EIO;
	}
	pthread_mutex_lock(&ps->lock);
	table_free(&ps->t);
	ps->t = t;
	ps->gen++;
	ps->relists++;
	pthread_mutex_unlock(&ps->lock);
	snprintf(ps->rv, sizeof(ps->rv), "%s", rv);
	pr_info("kube: pods: %zu on node %s (resourceVersion %s)%s", t.n,
		ps->api.node, rv, bad ? ", some left out" : "");
	synced(ps);
	return 0;
}

/* One line of a watch: an event.  Non-zero ends the watch. */
static int on_event(const char *line, size_t len, void *ctx)
{
	struct podsrc *ps = ctx;
	struct moat_watch_event ev;
	char why[256];
	int err = 0;

	if (!len) {
		note(ps, NOTE_LONG, "a watch event past %d MiB: left out, the pods listed again",
		     EVENT_MAX >> 20);
		ps->rv[0] = '\0';
		return 1;
	}
	if (moat_watch_event_parse(line, len, &ev, why, sizeof(why))) {
		/* the table may now lack a change: list again */
		note(ps, NOTE_EVENT, "a watch event left out, the pods listed again: %s: %.120s",
		     why, line);
		ps->rv[0] = '\0';
		return 1;
	}
	if (ev.type == MOAT_WATCH_ERROR) {
		if (ev.code == 410) {
			ps->gone = true;
			return 1;
		}
		note(ps, NOTE_WATCH, "watch: the API server's error %d", ev.code);
		ps->failed = true;
		return 1;
	}
	pthread_mutex_lock(&ps->lock);
	if (ev.type == MOAT_WATCH_ADDED || ev.type == MOAT_WATCH_MODIFIED)
		err = table_put(&ps->t, &ev.pod);
	else if (ev.type == MOAT_WATCH_DELETED)
		table_del(&ps->t, ev.pod.uid);
	if (ev.type != MOAT_WATCH_BOOKMARK)
		ps->gen++;
	ps->events++;
	pthread_mutex_unlock(&ps->lock);
	if (err) {
		/* the table lacks a change: list again */
		note(ps, NOTE_EVENT, "out of memory for pod %s/%s", ev.pod.ns, ev.pod.name);
		ps->rv[0] = '\0';
		return 1;
	}
	if (ev.rv[0])
		snprintf(ps->rv, sizeof(ps->rv), "%s", ev.rv);
	synced(ps);
	return 0;
}

/* The watch is open: in step with the API server from here on. */
static void opened(void *ctx)
{
	struct podsrc *ps = ctx;

	ps->open = true;
	synced(ps);
}

/* Watch from ps->rv until it ends: the HTTP status, or -1. */
static long watch(struct podsrc *ps)
{
	char path[2048], sel[1024];
	long status, t = WATCH_S + random() % (WATCH_S / 5);
	char *body;

	selector(ps, sel, sizeof(sel));
	snprintf(path, sizeof(path),
		 "/api/v1/pods?watch=1&fieldSelector=%s&resourceVersion=%s"
		 "&allowWatchBookmarks=true&timeoutSeconds=%ld", sel, ps->rv, t);
	ps->gone = false;
	ps->open = false;
	ps->failed = false;
	status = kube_api_stream(&ps->api, path, t + 30, EVENT_MAX, on_event,
				 stopping, opened, ps, ps->noted & (1u << NOTE_WATCH),
				 &body);
	if (!kube_api_ok(status) && status != 410 && !stopping(ps))
		note_failed(ps, NOTE_WATCH, "watch", status, body);
	free(body);
	return status;
}

/* Wait @ms or until stopped; whether stopped. */
static bool wait_ms(struct podsrc *ps, double ms)
{
	struct timespec until;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(ms / 1e3);
	until.tv_nsec += (long)fmod(ms, 1e3) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&ps->lock);
	while (!stopping(ps) &&
	       pthread_cond_timedwait(&ps->cond, &ps->lock, &until) != ETIMEDOUT)
		;
	stop = stopping(ps);
	pthread_mutex_unlock(&ps->lock);
	return stop;
}

static double next_backoff(double b)
{
	return b ? fmin(b * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
}

static void *worker(void *arg)
{
	struct podsrc *ps = arg;
	double backoff = 0;
	bool gone_again = false;	/* the last watch said 410 too */
	double gone_wait = 0;		/* and how long it waited then */

	while (!stopping(ps)) {
		unsigned long long events;
		double start;
		long status;

		if (!ps->rv[0] && relist(ps, !gone_again)) {
			unsynced(ps);
			backoff = next_backoff(backoff);
			if (wait_ms(ps, backoff))
				break;
			continue;
		}
		start = moatd_mono_s();
		pthread_mutex_lock(&ps->lock);
		events = ps->events;
		pthread_mutex_unlock(&ps->lock);
		status = watch(ps);
		if (stopping(ps))
			break;
		if (ps->open && !ps->failed)
			backoff = 0;	/* the failures, if any, are over */
		if (ps->gone || status == 410) {
			/*
			 * Compacted away: list again, at once the first time;
			 * a server that says so of every fresh list's version
			 * is asked again after a doubling backoff, not in a
			 * loop.
			 */
			ps->rv[0] = '\0';
			pthread_mutex_lock(&ps->lock);
			events = ps->events - events;
			pthread_mutex_unlock(&ps->lock);
			if (gone_again && !events) {
				gone_wait = next_backoff(gone_wait);
				if (wait_ms(ps, gone_wait))
					break;
			}
			gone_again = true;
			continue;
		}
		gone_again = false;
		gone_wait = 0;
		if (!kube_api_ok(status) || ps->failed) {
			unsynced(ps);
			backoff = next_backoff(backoff);
			if (wait_ms(ps, backoff))
				break;
			continue;
		}
		/* it ended as watches do: it was in step until then */
		synced(ps);
		pthread_mutex_lock(&ps->lock);
		events = ps->events - events;
		pthread_mutex_unlock(&ps->lock);
		/*
		 * One that ends at once, every time, is not made again at
		 * once: a second between, as the backoff's first step.
		 */
		if (moatd_mono_s() - start < 1 && !events && wait_ms(ps, BACKOFF_MIN_MS))
			break;
	}
	return NULL;
}

static void podsrc_free(struct podsrc *ps)
{
	table_free(&ps->t);
	pthread_mutex_destroy(&ps->lock);
	pthread_cond_destroy(&ps->cond);
	free(ps);
}

static int pods_start(struct moatd *d)
{
	struct pods_mod *pm = P(d);
	struct kube_api api;
	struct podsrc *ps;
	int err;

	pm->start_wanted = false;
	if (!pm->watch || pm->ps)
		return 0;
	if (pm->stopping) {
		pm->start_wanted = true;	/* once the last one ended */
		return 0;
	}
	err = kube_api_init(&api);
	if (err) {
		if (err == -ENOENT)
			pr_warn("kube/pods is on but KUBERNETES_SERVICE_HOST/PORT are not set: not in a pod; classes come from the QoS tiers and rules");
		return 0;
	}
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->api = api;
	ps->api.thread = &ps->th;
	ps->api.timeout_s = &d->kube_request_s;
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->cond, NULL);
	err = kube_thread_start(&ps->th, worker, ps);
	if (err) {
		podsrc_free(ps);
		return err;
	}
	pr_info("kube: pods: node %s's pods from %s", api.node, api.server);
	pm->ps = ps;
	pm->seen_gen = 0;
	return 0;
}

/*
 * The source stops: its request ends within a second, and the loop,
 * which does not wait for that, reaps it after (pods_reap()).  The
 * groups keep what they learned.
 */
static void pods_stop(struct moatd *d, long long by_ns)
{
	struct pods_mod *pm = P(d);
	struct podsrc *ps = pm->ps ? pm->ps : pm->stopping;

	if (!ps)
		return;
	pthread_mutex_lock(&ps->lock);
	kube_thread_stop(&ps->th, by_ns);
	pthread_cond_signal(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
	if (pm->ps) {
		pm->stopping = ps;
		pm->ps = NULL;
	}
}

static void pods_reap(struct moatd *d)
{
	struct pods_mod *pm = P(d);

	if (!pm->stopping || !kube_thread_done(&pm->stopping->th))
		return;
	kube_thread_join(&pm->stopping->th, 0);
	podsrc_free(pm->stopping);
	pm->stopping = NULL;
	if (pm->start_wanted)
		pods_start(d);
}

static void pods_mod_stop(struct moatd *d)
{
	pods_stop(d, d->stop_by_ns);
}

static void pods_close(struct moatd *d)
{
	struct pods_mod *pm = P(d);
	long long by = d->stop_by_ns ? d->stop_by_ns :
		       kube_mono_ns() + d->kube_stop_s * 1000000000LL;

	pods_stop(d, by);
	if (!pm->stopping)
		return;
	if (kube_thread_join(&pm->stopping->th, by + 2000000000LL)) {
		pr_warn("kube: pods: a request did not end by its deadline: left to the exit");
		return;
	}
	podsrc_free(pm->stopping);
	pm->stopping = NULL;
}

/* ---- the loop's side ---- */

/* @e's metadata as group @g keeps it.  Return: 0 or -ENOMEM. */
static int meta_of(const struct moatd_group *g, const struct pod_entry *e,
		   struct group_meta *m)
{
	const char *container = "";
	size_t i;

	group_meta_init(m);
	m->known = true;
	m->label_class = e->label_class;
	m->priority = e->priority;
	snprintf(m->qos, sizeof(m->qos), "%s", e->qos);
	m->daemonset = e->daemonset;
	m->mirror = e->mirror;
	m->controlled = e->controlled;
	m->terminating = e->terminating;
	m->job = e->job;
	m->rqlat_target_us = e->rqlat_target_us;
	m->cpu_limit_m = e->cpu_limit_m;
	if (g->gid.kind == MOAT_GROUP_CONTAINER) {
		m->cpu_limit_m = -1;
		for (i = 0; i < e->nr; i++)
			if (!strcmp(e->c[i].id, g->gid.kube.container_id)) {
				container = e->c[i].name;
				m->cpu_limit_m = e->c[i].cpu_limit_m;
			}
	}
	return group_meta_set_names(m, e->ns, e->name, container, e->priority_class);
}

void pods_update(struct moatd *d)
{
	struct pods_mod *pm = P(d);
	struct podsrc *ps = pm->ps;
	bool changed = false;
	size_t i;

	pods_reap(d);
	if (!ps)
		return;
	pthread_mutex_lock(&ps->lock);
	if (ps->gen == pm->seen_gen && d->groups_gen == pm->seen_groups_gen) {
		pthread_mutex_unlock(&ps->lock);
		return;
	}
	pm->seen_gen = ps->gen;
	pm->seen_groups_gen = d->groups_gen;
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		const struct pod_entry *e;
		struct group_meta m;

		if (g->gid.kind == MOAT_GROUP_RULE)
			continue;
		e = table_find(&ps->t, g->gid.kube.pod_uid);
		if (!e)
			continue;	/* what it had, if anything, stays */
		if (meta_of(g, e, &m))
			continue;	/* out of memory: what it had stays, tried again */
		if (group_meta_eq(&m, &g->meta)) {
			group_meta_free(&m);
			continue;
		}
		if (m.label_class == MOAT_POD_LABEL_BAD &&
		    g->gid.kind == MOAT_GROUP_POD &&
		    (g->meta.label_class != MOAT_POD_LABEL_BAD || !g->meta.known))
			pr_warn("pod %s/%s: label %s='%s' is none of none, lc, be: ignored",
				m.ns, m.name, MOAT_POD_CLASS_LABEL, e->label_value);
		if (m.rqlat_target_us < 0 && g->gid.kind == MOAT_GROUP_POD &&
		    (g->meta.rqlat_target_us >= 0 || !g->meta.known))
			pr_warn("pod %s/%s: annotation %s='%s' is not microseconds from 1 to %d: ignored, its class's target stands",
				m.ns, m.name, MOAT_POD_TARGET_ANNOTATION, e->target_value,
				MOAT_POD_TARGET_MAX_US);
		else if (m.rqlat_target_us > 0 && g->gid.kind == MOAT_GROUP_POD &&
			 m.rqlat_target_us != g->meta.rqlat_target_us)
			pr_info("pod %s/%s: run-queue p99 target %lld us, its annotation %s",
				m.ns, m.name, m.rqlat_target_us, MOAT_POD_TARGET_ANNOTATION);
		group_meta_free(&g->meta);
		g->meta = m;
		changed = true;
	}
	pthread_mutex_unlock(&ps->lock);
	if (changed)
		groups_reclassify(d);
}

void pods_status(const struct moatd *d, struct pods_status *s)
{
	struct podsrc *ps = P(d)->ps;

	memset(s, 0, sizeof(*s));
	s->sync_age_s = NAN;
	if (!ps)
		return;
	s->watching = true;
	pthread_mutex_lock(&ps->lock);
	s->synced = ps->synced;
	if (ps->sync_s)
		s->sync_age_s = moatd_mono_s() - ps->sync_s;
	s->known = ps->t.n;
	s->errors = ps->errors;
	s->relists = ps->relists;
	pthread_mutex_unlock(&ps->lock);
}

/* ---- knobs ---- */

static int show_state(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;
	struct pods_status s;
	int n;

	pods_status(d, &s);
	if (!s.watching)
		n = snprintf(buf, len, "%s", P(d)->watch ?
			     "off: not in a pod" : "off");
	else if (isnan(s.sync_age_s))
		n = snprintf(buf, len, "listing");
	else
		n = snprintf(buf, len, "%s", s.synced ? "synced" : "away");
	return n >= (int)len ? -EOVERFLOW : 0;
}

static int show_number(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;
	struct pods_status s;
	int n;

	pods_status(d, &s);
	if (!strcmp(k->path, "kube/pods_known"))
		n = snprintf(buf, len, "%zu", s.known);
	else if (!strcmp(k->path, "kube/pods_errors"))
		n = snprintf(buf, len, "%llu", s.errors);
	else if (!strcmp(k->path, "kube/pods_relists"))
		n = snprintf(buf, len, "%llu", s.relists);
	else if (isnan(s.sync_age_s))
		n = snprintf(buf, len, "-");
	else
		n = snprintf(buf, len, "%.0f", s.sync_age_s);
	return n >= (int)len ? -EOVERFLOW : 0;
}

/* kube/pods set at run time starts or stops the source. */
static void store_watch(const struct moat_knob *k, unsigned int u,
			const char *val)
{
	struct moatd *d = k->owner;

	P(d)->watch = u;
	if (!d->started)
		return;		/* started once moatd detached */
	if (u)
		pods_start(d);
	else
		pods_stop(d, kube_mono_ns() + d->kube_stop_s * 1000000000LL);
}

static int pods_init(struct moatd *d)
{
	struct pods_mod *pm = P(d);
	unsigned int seed;
	const struct moat_knob knobs[] = {
		{ .path = "kube/pods", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 0, .max = 1, .data = &pm->watch, .store = store_watch },
		{ .path = "kube/pods_state", .type = MOAT_KNOB_SHOW, .show = show_state },
		{ .path = "kube/pods_known", .type = MOAT_KNOB_SHOW, .show = show_number },
		{ .path = "kube/pods_sync_age_s", .type = MOAT_KNOB_SHOW,
		  .show = show_number },
		{ .path = "kube/pods_errors", .type = MOAT_KNOB_SHOW, .show = show_number },
		{ .path = "kube/pods_relists", .type = MOAT_KNOB_SHOW, .show = show_number },
	};

	/* On by default in a pod, where the API server is. */
	pm->watch = getenv("KUBERNETES_SERVICE_HOST") != NULL;
	/*
	 * The watches' lengths are jittered so that a fleet's agents do not
	 * all list at once: each process its own sequence.
	 */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (unsigned int)getpid() ^ (unsigned int)time(NULL);
	srandom(seed);
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]),
				 d);
}

const struct moatd_module pods_module = {
	.name = "pods",
	.size = sizeof(struct pods_mod),
	.init = pods_init,
	.start = pods_start,
	.stop = pods_mod_stop,
	.close = pods_close,
};
