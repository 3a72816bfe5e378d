// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hints on the Node object, so that the stock kube-scheduler acts on them
 * without a plugin (Documentation/hints.rst):
 *
 *  - status.capacity and status.allocatable "moat.io/be-cpu" (millicores)
 *    and "moat.io/be-memory" (bytes): extended resources BE pods request;
 *  - the taint "moat.io/interference:PreferNoSchedule" while some LC
 *    group is over its target, removed once none has been for
 *    kube/untaint_s seconds;
 *  - the annotation "moat.io/hints": the /hints document.
 *
 * All three are withdrawn when moatd stops publishing (it stops, or
 * kube/publish goes to 0), by the thread on its way out, within
 * kube/stop_timeout_s: at exit after the kernel's values are back, and
 * never with the control loop waiting for it.
 *
 * The API server, the token and the node's name: kubeapi.c, as the pod
 * source (pods.c) has them.
 *
 * Requests are blocking libcurl calls, so they run in a thread of their
 * own: the control loop hands it the latest desired state and goes on.
 * An update is sent only when that state changed, at most once per
 * kube/interval_ms; an API error is logged and retried with a doubling
 * backoff (1 s to 5 min), never fatal.  Node taints have no merge key, so
 * a patch replaces the whole list: the thread reads the node, keeps every
 * taint not moat's, and patches with the node's resourceVersion (a 409
 * from a concurrent writer is retried).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "hints.h"
#include "kube.h"
#include "kubeapi.h"
#include "log.h"
#include "nodepatch.h"

#define BACKOFF_MIN_MS	1000
#define BACKOFF_MAX_MS	(5 * 60 * 1000)
/* a Node object is not 4 MiB */
#define BODY_MAX	(4 << 20)
struct kube_state {
	long long be_cpu_milli, be_memory;	/* -1: not known yet */
	bool taint;
	char *hints;				/* the annotation */
};

struct kube {
	struct kube_thread t;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool pending;
	struct kube_state want;		/* under lock */
	struct kube_state sent;		/* the thread's own */
	struct kube_api api;
	bool sent_valid;
	/* the control loop's own, CLOCK_MONOTONIC ms */
	double over_ms;			/* an LC group was over its target */
	bool tainted;
	double next_ms;			/* no update before */
	double sent_ms;			/* the last update asked for */
	/* counters, read by the loop for knobs and metrics */
	unsigned long long updates, errors;
	double updated_s;		/* CLOCK_REALTIME of the last update */
};

/*
 * The module: its knobs, the publisher while it runs, and one that was
 * asked to stop and is withdrawing the hints (a new one starts only
 * after it ended: its withdrawal would undo the new one's hints).
 */
struct kube_mod {
	struct moatd *d;
	unsigned int publish, interval_ms, untaint_s, change_pct, resync_s;
	struct kube *k, *stopping;
	bool start_wanted;		/* kube/publish went to 1 meanwhile */
};

static struct kube_mod *K(const struct moatd *d)
{
	return moatd_mod(d, MOD_KUBE);
}

static double mono_ms(void)
{
	return moatd_mono_s() * 1e3;
}

static void state_free(struct kube_state *s)
{
	free(s->hints);
	s->hints = NULL;
}

static void log_status(const char *what, long status, const char *body)
{
	if (status >= 0)
		pr_warn("kube: %s: HTTP %ld: %.300s", what, status, body ? body : "");
	else if (status == KUBE_API_TOO_LONG)
		pr_warn("kube: %s: an answer past %d MiB", what, BODY_MAX >> 20);
}

/* The extended resources, on the node's status subresource. */
static int patch_status(struct kube *k, const struct kube_state *s)
{
	char path[400], data[512], *resp;
	long status;

	if (s->be_cpu_milli < 0 || s->be_memory < 0)
		return 0;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", k->api.node);
	snprintf(data, sizeof(data),
		 "{\"status\":{\"capacity\":{\"moat.io/be-cpu\":\"%lld\",\"moat.io/be-memory\":\"%lld\"},"
		 "\"allocatable\":{\"moat.io/be-cpu\":\"%lld\",\"moat.io/be-memory\":\"%lld\"}}}",
		 s->be_cpu_milli, s->be_memory, s->be_cpu_milli, s->be_memory);
	status = kube_api_request(&k->api, "PATCH", path, "application/merge-patch+json", data,
			 BODY_MAX, false, &resp);
	if (!kube_api_ok(status))
		log_status("patch node status", status, resp);
	free(resp);
	return kube_api_ok(status) ? 0 : -EIO;
}

/*
 * The taint and the annotation, on the node: read it, keep every taint
 * not moat's, patch the whole list with its resourceVersion (nodepatch.h).
 */
static int patch_node(struct kube *k, const struct kube_state *s)
{
	char path[400], why[128], *resp, *patch;
	long status;
	int err;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", k->api.node);
	status = kube_api_request(&k->api, "GET", path, NULL, NULL, BODY_MAX, false, &resp);
	if (!kube_api_ok(status)) {
		log_status("get node", status, resp);
		free(resp);
		return -EIO;
	}
	err = moat_node_patch(resp, strlen(resp), s->taint, s->hints, &patch, why,
			      sizeof(why));
	free(resp);
	if (err) {
		pr_warn("kube: get node: HTTP %ld, but %s", status,
			err == -EINVAL ? why : strerror(-err));
		return -EIO;
	}
	status = kube_api_request(&k->api, "PATCH", path, "application/merge-patch+json",
				  patch, BODY_MAX, false, &resp);
	if (!kube_api_ok(status))
		log_status(status == 409 ? "patch node (changed meanwhile, again later)" :
					   "patch node", status, resp);
	free(resp);
	free(patch);
	return kube_api_ok(status) ? 0 : -EIO;
}

/*
 * What moatd put on the node goes when it stops publishing: the taint,
 * the annotation (null) and the extended resources (null), so that a
 * node without moatd is not left tainted or offering BE capacity nobody
 * measures.  Best effort: an error is logged, and the next moatd to
 * publish sets them all again.
 */
static void withdraw(struct kube *k)
{
	struct kube_state none = { .be_cpu_milli = -1, .be_memory = -1 };
	char path[400], *resp;
	long status;
	bool gone = true;

	if (patch_node(k, &none)) {
		pr_warn("kube: node %s: the taint and annotation stay", k->api.node);
		gone = false;
	}
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", k->api.node);
	status = kube_api_request(&k->api, "PATCH", path, "application/merge-patch+json",
			 "{\"status\":{\"capacity\":{\"moat.io/be-cpu\":null,\"moat.io/be-memory\":null},"
			 "\"allocatable\":{\"moat.io/be-cpu\":null,\"moat.io/be-memory\":null}}}",
			 BODY_MAX, false, &resp);
	if (!kube_api_ok(status)) {
		log_status("withdraw the extended resources", status, resp);
		gone = false;
	}
	free(resp);
	if (gone)
		pr_info("kube: node %s: moat's taint, annotation and extended resources withdrawn",
			k->api.node);
}

static void *worker(void *arg)
{
	struct kube *k = arg;
	double backoff = 0;

	pthread_mutex_lock(&k->lock);
	while (!kube_thread_stopping(&k->t)) {
		struct kube_state s;
		struct timespec until;
		int err;

		if (!k->pending) {
			pthread_cond_wait(&k->cond, &k->lock);
			continue;
		}
		s = k->want;
		s.hints = strdup(k->want.hints ? k->want.hints : "");
		k->pending = false;
		pthread_mutex_unlock(&k->lock);

		err = s.hints ? patch_node(k, &s) : -ENOMEM;
		if (!err)
			err = patch_status(k, &s);
		pthread_mutex_lock(&k->lock);
		if (!err) {
			struct timespec now;

			clock_gettime(CLOCK_REALTIME, &now);
			k->updated_s = now.tv_sec + now.tv_nsec / 1e9;
			k->updates++;
			backoff = 0;
			state_free(&k->sent);
			k->sent = s;
			k->sent_valid = true;
			continue;
		}
		state_free(&s);
		k->errors++;
		backoff = backoff ? fmin(backoff * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
		pr_warn("kube: node %s not updated: again in %.0f s", k->api.node,
			backoff / 1e3);
		k->pending = true;	/* the newest wanted state, after the wait */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (time_t)(backoff / 1e3);
		while (!kube_thread_stopping(&k->t) &&
		       pthread_cond_timedwait(&k->cond, &k->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&k->lock);
	/* on its way out, by its deadline: what moat put on the node goes */
	if (k->sent_valid || k->errors) {
		k->api.finishing = true;
		withdraw(k);
	}
	return NULL;
}

static void kube_free(struct kube *k)
{
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	state_free(&k->want);
	state_free(&k->sent);
	free(k);	/* libcurl stays loaded: publishing may start again */
}

static int kube_start(struct moatd *d)
{
	struct kube_api api;
	struct kube *k;
	int err;

	K(d)->start_wanted = false;
	if (!K(d)->publish || K(d)->k)
		return 0;
	if (K(d)->stopping) {
		K(d)->start_wanted = true;	/* once it has withdrawn */
		return 0;
	}
	if (kube_api_init(&api)) {
		pr_warn("kube/publish is on but KUBERNETES_SERVICE_HOST/PORT are not set: not in a pod; nothing goes to the Node object");
		return 0;
	}
	if (kube_api_load())
		return 0;	/* said why; moatd goes on without it */
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->api = api;
	k->api.thread = &k->t;
	k->api.timeout_s = &d->kube_request_s;
	k->want.be_cpu_milli = k->want.be_memory = -1;
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	err = kube_thread_start(&k->t, worker, k);
	if (err) {
		kube_free(k);
		return err;
	}
	pr_info("kube: hints go to node %s through %s", k->api.node, k->api.server);
	K(d)->k = k;
	return 0;
}


/* Ask @k's thread to withdraw and end by @by_ns; it is not waited for. */
static void ask_stop(struct kube *k, long long by_ns)
{
	pthread_mutex_lock(&k->lock);
	kube_thread_stop(&k->t, by_ns);
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
}

/*
 * The publisher stops: the loop goes on, and reaps the thread once it
 * has withdrawn the hints (kube_reap()).
 */
static void kube_stop(struct moatd *d, long long by_ns)
{
	struct kube_mod *km = K(d);

	if (km->k) {
		ask_stop(km->k, by_ns);
		km->stopping = km->k;
		km->k = NULL;
	} else if (km->stopping) {
		ask_stop(km->stopping, by_ns);	/* the earlier deadline holds */
	}
}

/* The publisher that was stopped, once it ended; then one wanted since. */
static void kube_reap(struct moatd *d)
{
	struct kube_mod *km = K(d);

	if (!km->stopping || !kube_thread_done(&km->stopping->t))
		return;
	kube_thread_join(&km->stopping->t, 0);
	kube_free(km->stopping);
	km->stopping = NULL;
	if (km->start_wanted)
		kube_start(d);
}

static void kube_mod_stop(struct moatd *d)
{
	kube_stop(d, d->stop_by_ns);
}

/*
 * At exit, after kube_mod_stop(): wait for the withdrawal, until its
 * deadline and the second that a request takes to see it.  A thread
 * still in a request then is left to the process's exit.
 */
static void kube_close(struct moatd *d)
{
	struct kube_mod *km = K(d);
	long long by = d->stop_by_ns ? d->stop_by_ns :
		       kube_mono_ns() + d->kube_stop_s * 1000000000LL;

	kube_stop(d, by);
	if (!km->stopping)
		return;
	if (kube_thread_join(&km->stopping->t, by + 2000000000LL)) {
		pr_warn("kube: node %s: the publisher's request did not end by its deadline: left to the exit",
			km->stopping->api.node);
		return;
	}
	kube_free(km->stopping);
	km->stopping = NULL;
}

/* Whether @now differs from @was by more than @pct% of @was. */
static bool moved(long long now, long long was, unsigned int pct)
{
	return (now < 0) != (was < 0) ||
	       llabs(now - was) * 100.0 > (double)llabs(was) * pct;
}

/*
 * Each cycle: work out what the node should say, and hand it on when it
 * says something new: the taint flips, a BE capacity moved by more than
 * kube/change_pct, or the last update is kube/resync_s old (the
 * annotation rides along).  Never more often than kube/interval_ms.
 */
void kube_publish(struct moatd *d)
{
	struct kube_mod *km = K(d);
	struct kube *k = km->k;
	struct kube_state s;
	struct kube_hints h;
	double now = mono_ms();
	bool over, send;

	kube_reap(d);
	if (!k || now < k->next_ms)
		return;
	if (hints_for_kube(d, &h))
		return;
	over = h.cpu_interference >= 1 || h.memory_interference >= 1 ||
	       h.cache_interference >= 1;
	if (over) {
		k->over_ms = now;
		k->tainted = true;
	} else if (k->tainted && now - k->over_ms >= km->untaint_s * 1e3) {
		k->tainted = false;
	}
	s.be_cpu_milli = isnan(h.be_cpus) ? -1 : llround(h.be_cpus * 1000);
	s.be_memory = isnan(h.be_memory) ? -1 : llround(h.be_memory);
	s.taint = k->tainted;
	s.hints = h.json;
	pthread_mutex_lock(&k->lock);
	send = !k->sent_valid || s.taint != k->sent.taint ||
	       moved(s.be_cpu_milli, k->sent.be_cpu_milli, km->change_pct) ||
	       moved(s.be_memory, k->sent.be_memory, km->change_pct) ||
	       now - k->sent_ms >= km->resync_s * 1e3;
	if (send) {
		state_free(&k->want);
		k->want = s;
		k->pending = true;
		k->sent_ms = now;	/* asked for; the thread retries errors */
		pthread_cond_signal(&k->cond);
		k->next_ms = now + km->interval_ms;
	} else {
		free(s.hints);
	}
	pthread_mutex_unlock(&k->lock);
}

unsigned long long kube_counter(const struct moatd *d, bool errors)
{
	struct kube *k = K(d)->k;
	unsigned long long v;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	v = errors ? k->errors : k->updates;
	pthread_mutex_unlock(&k->lock);
	return v;
}

double kube_updated_s(const struct moatd *d)
{
	struct kube *k = K(d)->k;
	double v;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	v = k->updated_s;
	pthread_mutex_unlock(&k->lock);
	return v;
}

bool kube_publishing(const struct moatd *d)
{
	return K(d)->k != NULL;
}

static int show_counter(const struct moat_knob *k, char *buf, size_t len)
{
	struct moatd *d = k->owner;

	return snprintf(buf, len, "%llu", kube_counter(d, !strcmp(k->path, "kube/errors"))) >=
	       (int)len ? -EOVERFLOW : 0;
}

static int show_node(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%s", K(d)->k ? K(d)->k->api.node : "") >= (int)len ?
	       -EOVERFLOW : 0;
}

/* kube/publish set at run time starts or stops the updates. */
static void store_publish(const struct moat_knob *k, unsigned int u,
			  const char *val)
{
	struct moatd *d = k->owner;

	K(d)->publish = u;
	if (!d->started)
		return;		/* started once moatd detached */
	if (u)
		kube_start(d);
	else
		kube_stop(d, kube_mono_ns() + d->kube_stop_s * 1000000000LL);
}

/* Read by the API server's threads, without the loop's lock. */
static void store_request_timeout(const struct moat_knob *k, unsigned int u,
				  const char *val)
{
	struct moatd *d = k->owner;

	__atomic_store_n(&d->kube_request_s, u, __ATOMIC_RELAXED);
}

static int kube_init(struct moatd *d)
{
	struct kube_mod *km = K(d);
#define U32(p, lo, hi, v) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
			    .min = lo, .max = hi, .data = v }
	const struct moat_knob knobs[] = {
		{ .path = "kube/publish", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 0, .max = 1, .data = &km->publish,
		  .store = store_publish },
		U32("kube/interval_ms", 100, 3600000, &km->interval_ms),
		U32("kube/untaint_s", 0, 86400, &km->untaint_s),
		U32("kube/change_pct", 1, 100, &km->change_pct),
		U32("kube/resync_s", 1, 86400, &km->resync_s),
		U32("kube/stop_timeout_s", 1, 60, &d->kube_stop_s),
		{ .path = "kube/request_timeout_s", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 1, .max = 60, .data = &d->kube_request_s,
		  .store = store_request_timeout },
		{ .path = "kube/node", .type = MOAT_KNOB_SHOW, .show = show_node },
		{ .path = "kube/updates", .type = MOAT_KNOB_SHOW, .show = show_counter },
		{ .path = "kube/errors", .type = MOAT_KNOB_SHOW, .show = show_counter },
	};
#undef U32

	km->d = d;
	/*
	 * Off until the operator turns it on: the Node is the cluster's, and
	 * observe mode writes nothing anywhere (enforce.rst), the taint and
	 * extended resources included.  Deploying moatd is not a decision
	 * to change what the scheduler does with the node.
	 */
	km->publish = 0;
	km->interval_ms = 10000;
	km->untaint_s = 60;
	km->change_pct = 10;
	km->resync_s = 300;
	d->kube_stop_s = 5;
	d->kube_request_s = 10;
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]),
				 d);
}

const struct moatd_module kube_module = {
	.name = "kube",
	.size = sizeof(struct kube_mod),
	.init = kube_init,
	.start = kube_start,
	.stop = kube_mod_stop,
	.close = kube_close,
};
