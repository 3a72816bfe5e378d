// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hints on the Node object, so that the schedulers a cluster already
 * runs act on them without a plugin (Documentation/hints.rst):
 *
 *  - status.capacity and status.allocatable "moat.io/be-cpu" (millicores)
 *    and "moat.io/be-memory" (bytes): extended resources BE pods request;
 *  - the taint "moat.io/interference:PreferNoSchedule" while some LC
 *    group is over its target, removed once none has been for
 *    kube/untaint_s seconds;
 *  - the condition MoatInterference in status.conditions, True while the
 *    taint is on, with the LC pod and its culprit in its message
 *    (kube/condition);
 *  - the annotation "moat.io/hints": the /hints document;
 *  - opt-in: koordinator's per-node usage-thresholds annotation lowered
 *    while the taint is on (kube/koordinator_usage_thresholds), and
 *    crane-scheduler's "<value>,<time>" annotation (kube/crane).
 *
 * All are withdrawn when moatd stops publishing (it stops, or
 * kube/publish goes to 0), by the thread on its way out, within
 * kube/stop_timeout_s: at exit after the kernel's values are back, and
 * never with the control loop waiting for it.
 *
 * The API server, the token and the node's name: kubeapi.c, as the pod
 * source (pods.c) has them.
 *
 * Requests block (kubeapi.c), so they run in a thread of their
 * own: the control loop hands it the latest desired state and goes on.
 * An update is sent only when that state changed, at most once per
 * kube/interval_ms; an API error is logged and retried with a doubling
 * backoff (1 s to 5 min), never fatal.  Each update reads the node and
 * patches it from what it read (nodepatch.h): the taints, which have no
 * merge key, and the annotations with the node's resourceVersion (a 409
 * from a concurrent writer is retried); the status with a strategic
 * merge patch, which merges moat's condition with the kubelet's by type.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
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
	char *koord;				/* koordinator's, while lowered */
	double crane;				/* crane's value; NAN: none */
	char crane_text[64];
	bool cond, cond_true;			/* the condition, or none */
	char reason[32], message[768];
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
	unsigned long long koord_adopted;	/* changed under moat */
};

/*
 * The module: its knobs, the publisher while it runs, and one that was
 * asked to stop and is withdrawing the hints (a new one starts only
 * after it ended: its withdrawal would undo the new one's hints).
 */
struct kube_mod {
	struct moatd *d;
	unsigned int publish, interval_ms, untaint_s, change_pct, resync_s;
	unsigned int condition, crane;
	char koord[MOAT_KNOB_VALUE_MAX];	/* "": the adapter off */
	char crane_tz[8];			/* "+08:00" */
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
	free(s->koord);
	s->hints = s->koord = NULL;
}

static void log_status(const char *what, long status, const char *body)
{
	if (status >= 0)
		pr_warn("kube: %s: HTTP %ld: %.300s", what, status, body ? body : "");
	else if (status == KUBE_API_TOO_LONG)
		pr_warn("kube: %s: an answer past %d MiB", what, BODY_MAX >> 20);
}

/* An answer: 0 if it is a success, else said and -EIO; @resp freed. */
static int answered(const char *what, long status, char *resp)
{
	bool ok = kube_api_ok(status);

	if (!ok)
		log_status(status == 409 ? "patch node (changed meanwhile, again later)" : what,
			   status, resp);
	free(resp);
	return ok ? 0 : -EIO;
}

/*
 * The node as @s says, from what it is now: read it, patch its taints
 * and annotations, then its status (nodepatch.h); @s NULL: all of moat's
 * withdrawn.  @adopted: koordinator's annotation was someone else's.
 */
static int update(struct kube *k, const struct kube_state *s, bool *adopted)
{
	struct moat_node_want w = { 0 };
	struct moat_node_status st = { .be_cpu_milli = -1, .be_memory = -1, .withdraw = !s };
	struct moat_node_condition c = { 0 };
	char path[400], why[128], now[32], *node, *body, *resp;
	time_t t = time(NULL);
	struct tm tm;
	long status;
	int err;

	if (s) {
		w.taint = s->taint;
		w.hints = s->hints;
		w.koord = s->koord;
		w.crane = isnan(s->crane) ? NULL : s->crane_text;
		st.be_cpu_milli = s->be_cpu_milli;
		st.be_memory = s->be_memory;
		c.status = s->cond_true;
		c.reason = s->reason;
		c.message = s->message;
		st.cond = s->cond ? &c : NULL;
	}
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	st.now = now;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", k->api.node);
	status = kube_api_request(&k->api, "GET", path, NULL, NULL, BODY_MAX, false, &node);
	if (!kube_api_ok(status))
		return answered("get node", status, node);
	err = moat_node_patch(node, strlen(node), &w, &body, adopted, why, sizeof(why));
	if (err)
		goto out;
	if (*adopted)
		pr_warn("kube: node %s: %s changed while moat held it: taken as the node's own",
			k->api.node, MOAT_KOORD_KEY);
	status = kube_api_request(&k->api, "PATCH", path, "application/merge-patch+json", body,
				  BODY_MAX, false, &resp);
	free(body);
	err = answered("patch node", status, resp);
	if (err)
		goto out;

	err = moat_node_status_patch(node, strlen(node), &st, &body, why, sizeof(why));
	if (err)
		goto out;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", k->api.node);
	status = kube_api_request(&k->api, "PATCH", path, "application/strategic-merge-patch+json",
				  body, BODY_MAX, false, &resp);
	free(body);
	err = answered("patch node status", status, resp);
out:
	if (err == -EINVAL)
		pr_warn("kube: get node: HTTP 200, but %s", why);
	free(node);
	return err ? -EIO : 0;
}

/*
 * What moatd put on the node goes when it stops publishing: the taint,
 * the condition, the annotations (koordinator's as moat found it) and
 * the extended resources, so that a node without moatd is not left
 * tainted or offering BE capacity nobody measures.  Best effort: an
 * error is logged, and the next moatd to publish puts them right.
 */
static void withdraw(struct kube *k)
{
	bool adopted;

	if (update(k, NULL, &adopted))
		pr_warn("kube: node %s: the taint, condition and annotations stay",
			k->api.node);
	else
		pr_info("kube: node %s: moat's taint, condition, annotations and extended resources withdrawn",
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
		bool nomem, adopted = false;
		int err;

		if (!k->pending) {
			pthread_cond_wait(&k->cond, &k->lock);
			continue;
		}
		s = k->want;
		s.hints = strdup(k->want.hints ? k->want.hints : "");
		s.koord = k->want.koord ? strdup(k->want.koord) : NULL;
		nomem = !s.hints || (k->want.koord && !s.koord);
		k->pending = false;
		pthread_mutex_unlock(&k->lock);

		err = nomem ? -ENOMEM : update(k, &s, &adopted);
		pthread_mutex_lock(&k->lock);
		k->koord_adopted += adopted;
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
	free(k);
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
	err = kube_api_init(&api);
	if (err) {
		if (err == -ENOENT)
			pr_warn("kube/publish is on but KUBERNETES_SERVICE_HOST/PORT are not set: not in a pod; nothing goes to the Node object");
		return 0;
	}
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
 * crane-scheduler's value: "<fraction>,<time>", the time as it parses
 * it, in its time zone (kube/crane_timezone, "+08:00"), with no offset.
 */
static void crane_value(const struct kube_mod *km, double v, struct kube_state *s)
{
	int sign = km->crane_tz[0] == '-' ? -1 : 1;
	time_t t = time(NULL) + sign * (atoi(km->crane_tz + 1) * 3600 +
					atoi(km->crane_tz + 4) * 60);
	char when[32];
	struct tm tm;

	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	s->crane = v;
	snprintf(s->crane_text, sizeof(s->crane_text), "%.5f,%s", v, when);
}

/* What the condition says while the taint waits out kube/untaint_s. */
static void settling(const struct kube_mod *km, double since_ms, struct kube_state *s)
{
	snprintf(s->reason, sizeof(s->reason), "Settling");
	snprintf(s->message, sizeof(s->message),
		 "no LC pod is over its target for %.0f s; the condition and the taint go after %u s (kube/untaint_s)",
		 since_ms / 1e3, km->untaint_s);
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * Each cycle: work out what the node should say, and hand it on when it
 * says something new: the taint flips, a BE capacity moved by more than
 * kube/change_pct, crane's value by 0.05, an opt-in was turned on or
 * off, or the last update is kube/resync_s old (the annotation and the
 * condition's message ride along).  Never more often than
 * kube/interval_ms.
 */
void kube_publish(struct moatd *d)
{
	struct kube_mod *km = K(d);
	struct kube *k = km->k;
	struct kube_state s = { 0 };
	struct kube_hints h;
	double now = mono_ms();
	bool over, send;

	kube_reap(d);
	if (!k)
		return;
	/*
	 * Every period, sent or not: an LC pod over its target for a period
	 * that falls between two updates (kube/interval_ms) still taints the
	 * node, and the next update says so.  Judged only when an update was
	 * due, such a period went unseen: one step of enforce can end it.
	 */
	over = hints_over(d);
	if (over) {
		k->over_ms = now;
		k->tainted = true;
	} else if (k->tainted && now - k->over_ms >= km->untaint_s * 1e3) {
		k->tainted = false;
	}
	if (now < k->next_ms)
		return;
	if (hints_for_kube(d, &h))
		return;
	s.be_cpu_milli = isnan(h.be_cpus) ? -1 : llround(h.be_cpus * 1000);
	s.be_memory = isnan(h.be_memory) ? -1 : llround(h.be_memory);
	s.taint = k->tainted;
	s.hints = h.json;
	s.cond = km->condition;
	s.cond_true = k->tainted;
	if (k->tainted && !over) {
		settling(km, now - k->over_ms, &s);
	} else {
		snprintf(s.reason, sizeof(s.reason), "%s", h.reason);
		snprintf(s.message, sizeof(s.message), "%s", h.message);
	}
	s.crane = NAN;
	if (km->crane)
		crane_value(km, h.node_interference, &s);
	if (k->tainted && km->koord[0] && !(s.koord = strdup(km->koord))) {
		free(s.hints);
		return;
	}
	pthread_mutex_lock(&k->lock);
	send = !k->sent_valid || s.taint != k->sent.taint ||
	       moved(s.be_cpu_milli, k->sent.be_cpu_milli, km->change_pct) ||
	       moved(s.be_memory, k->sent.be_memory, km->change_pct) ||
	       s.cond != k->sent.cond || !same_text(s.koord, k->sent.koord) ||
	       isnan(s.crane) != isnan(k->sent.crane) || fabs(s.crane - k->sent.crane) >= 0.05 ||
	       now - k->sent_ms >= km->resync_s * 1e3;
	if (send) {
		state_free(&k->want);
		k->want = s;
		k->pending = true;
		k->sent_ms = now;	/* asked for; the thread retries errors */
		pthread_cond_signal(&k->cond);
		k->next_ms = now + km->interval_ms;
	} else {
		state_free(&s);
	}
	pthread_mutex_unlock(&k->lock);
}

/* The publisher's counter at offset @off, read under its lock. */
static unsigned long long counter(const struct moatd *d, size_t off)
{
	struct kube *k = K(d)->k;
	unsigned long long v;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	v = *(const unsigned long long *)((const char *)k + off);
	pthread_mutex_unlock(&k->lock);
	return v;
}

unsigned long long kube_counter(const struct moatd *d, bool errors)
{
	return counter(d, errors ? offsetof(struct kube, errors) : offsetof(struct kube, updates));
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
	unsigned long long v = !strcmp(k->path, "kube/koordinator_adopted") ?
			       counter(d, offsetof(struct kube, koord_adopted)) :
			       kube_counter(d, !strcmp(k->path, "kube/errors"));

	return snprintf(buf, len, "%llu", v) >= (int)len ? -EOVERFLOW : 0;
}

static int check_koord(const struct moat_knob *k, const char *val, char *why, size_t len)
{
	return moat_koord_thresholds_check(val, why, len);
}

/* An offset from UTC as "+HH:MM" or "-HH:MM", as time zones have them. */
static int check_tz(const struct moat_knob *k, const char *val, char *why, size_t len)
{
	unsigned int h, m;
	char sign, end;

	if (sscanf(val, "%c%2u:%2u%c", &sign, &h, &m, &end) != 3 || strlen(val) != 6 ||
	    (sign != '+' && sign != '-') || h > 14 || m > 59) {
		snprintf(why, len, "not an offset from UTC such as +08:00");
		return -EINVAL;
	}
	return 0;
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
		U32("kube/condition", 0, 1, &km->condition),
		{ .path = "kube/koordinator_usage_thresholds", .type = MOAT_KNOB_STRING,
		  .writable = true, .data = km->koord, .str_max = sizeof(km->koord),
		  .expects = "koordinator's usage-thresholds JSON, or nothing",
		  .check = check_koord },
		U32("kube/crane", 0, 1, &km->crane),
		{ .path = "kube/crane_timezone", .type = MOAT_KNOB_STRING, .writable = true,
		  .data = km->crane_tz, .str_max = sizeof(km->crane_tz),
		  .expects = "an offset from UTC such as +08:00", .check = check_tz },
		{ .path = "kube/koordinator_adopted", .type = MOAT_KNOB_SHOW,
		  .show = show_counter },
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
	km->condition = 1;
	km->crane = 0;
	/* crane-scheduler's own default zone, Asia/Shanghai (no summer time) */
	strcpy(km->crane_tz, "+08:00");
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
