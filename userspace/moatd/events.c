// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kubernetes Events on the BE pods moat holds back (events.h), so that
 * `kubectl describe pod` and every event exporter show what moat did to
 * a pod, when, and for which LC pod:
 *
 *   MoatHold     a lever first holds the pod back (its step from "max"),
 *                with the figure that decided and the LC pod it was for;
 *   MoatRelease  a lever is put back to the pod's original (slack, or
 *                the pod is no longer BE).
 *
 * The steps in between are not Events (the log and the action history
 * have them).  They come from the controller's action history after
 * each period's actuators, so the controller knows nothing of the API
 * server: only steps written (enforce mode), only kubelet's pods whose
 * metadata came.  Rate-limited, as kubelet's own event recorder is: one
 * Event of a reason on a pod a minute, and node-wide a burst of
 * EVENTS_BURST, then one every EVENTS_REFILL_S; what the limit or a
 * full queue drops is counted (moat_kube_events_total{result="limited"}),
 * never retried.  Posted from a thread of their own, as the evictor's.
 * At stop no Event is posted: moatd's own stop is in its log and the
 * pod's owner sees the values back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "enforce.h"
#include "events.h"
#include "kubeapi.h"
#include "log.h"

#define EVENTS_QUEUE	32
#define EVENTS_RECENT	64	/* (pod, reason) pairs the per-pod limit remembers */
#define EVENTS_POD_S	60	/* one Event of a reason on a pod a minute */
#define EVENTS_BURST	10	/* node-wide: this many at once... */
#define EVENTS_REFILL_S	6	/* ...then one every this many seconds */

struct event_req {
	char ns[MOAT_POD_NS_MAX], name[MOAT_POD_NAME_MAX], uid[MOAT_ID_MAX];
	char reason[16];
	char message[640];
};

struct events_mod {
	unsigned int on;			/* kube/events */
	unsigned long long seen;		/* history steps looked at */
	struct {
		char uid[MOAT_ID_MAX];
		char reason[16];
		double at;
	} recent[EVENTS_RECENT];
	unsigned int next_recent;
	double tokens, tokens_at;
	unsigned long long limited;
	/* the thread, in a pod */
	bool running;
	struct kube_thread t;
	struct kube_api api;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	struct event_req q[EVENTS_QUEUE];
	unsigned int head, n;
	unsigned long long posted, failed;
	bool said_failure;
};

static struct events_mod *M(const struct moatd *d)
{
	return moatd_mod(d, MOD_EVENTS);
}

static const char *const lever_names[MOAT_RES_NR] = {
	[MOAT_RES_CPU_PRIO] = "CPU priority", [MOAT_RES_CPU] = "CPU quota",
	[MOAT_RES_MEMORY] = "memory.high", [MOAT_RES_L3] = "L3 ways",
	[MOAT_RES_MB] = "memory bandwidth",
};

/* Whether the rate limit lets an Event of @reason on pod @uid go now. */
static bool allowed(struct events_mod *m, const char *uid, const char *reason, double now)
{
	unsigned int i;

	for (i = 0; i < EVENTS_RECENT; i++)
		if (!strcmp(m->recent[i].uid, uid) && !strcmp(m->recent[i].reason, reason) &&
		    now - m->recent[i].at < EVENTS_POD_S)
			return false;
	m->tokens += (now - m->tokens_at) / EVENTS_REFILL_S;
	if (m->tokens > EVENTS_BURST)
		m->tokens = EVENTS_BURST;
	m->tokens_at = now;
	if (m->tokens < 1)
		return false;
	m->tokens--;
	i = m->next_recent++ % EVENTS_RECENT;
	snprintf(m->recent[i].uid, sizeof(m->recent[i].uid), "%s", uid);
	snprintf(m->recent[i].reason, sizeof(m->recent[i].reason), "%s", reason);
	m->recent[i].at = now;
	return true;
}

/* @rec as an Event, or false: no Event for it. */
static bool event_of(const struct enforce_record *rec, struct event_req *r)
{
	const char *lever = lever_names[rec->r];

	if (rec->shadow || !rec->ns[0] || !rec->pod[0])
		return false;
	if (rec->action == MOAT_CTL_THROTTLE && !strcmp(rec->from, "max")) {
		snprintf(r->reason, sizeof(r->reason), "MoatHold");
		snprintf(r->message, sizeof(r->message),
			 "moat holds this pod's %s back, %s -> %s, for %s", lever,
			 rec->from, rec->to, rec->cause);
	} else if (rec->action == MOAT_CTL_RESTORE) {
		snprintf(r->reason, sizeof(r->reason), "MoatRelease");
		snprintf(r->message, sizeof(r->message), "moat put this pod's %s back%s%s",
			 lever, rec->cause[0] ? ": it is " : ": LC pods have slack",
			 rec->cause);
	} else {
		return false;
	}
	snprintf(r->ns, sizeof(r->ns), "%s", rec->ns);
	snprintf(r->name, sizeof(r->name), "%s", rec->pod);
	snprintf(r->uid, sizeof(r->uid), "%s", rec->group);
	return true;
}

void events_act(struct moatd *d)
{
	struct events_mod *m = M(d);
	unsigned long long total;
	const struct enforce_record *rec;
	struct event_req r;
	unsigned int i;
	double now;

	if (!m)
		return;
	total = enforce_history_total(d);
	if (!m->running || !m->on || d->mode != MOATD_ENFORCE) {
		m->seen = total;
		return;
	}
	now = moatd_mono_s();
	for (i = 0; (rec = enforce_history(d, i)); i++) {
		if (rec->seq < m->seen || !event_of(rec, &r))
			continue;
		if (!allowed(m, r.uid, r.reason, now)) {
			m->limited++;
			continue;
		}
		pthread_mutex_lock(&m->lock);
		if (m->n == EVENTS_QUEUE) {
			m->limited++;
		} else {
			m->q[(m->head + m->n++) % EVENTS_QUEUE] = r;
			pthread_cond_signal(&m->cond);
		}
		pthread_mutex_unlock(&m->lock);
	}
	m->seen = total;
}

static void *worker(void *arg)
{
	struct events_mod *m = arg;

	pthread_mutex_lock(&m->lock);
	while (!kube_thread_stopping(&m->t)) {
		struct event_req r;
		char path[MOAT_POD_NS_MAX + 32], *body, *resp = NULL;
		long status = -1;

		if (!m->n) {
			pthread_cond_wait(&m->cond, &m->lock);
			continue;
		}
		r = m->q[m->head];
		m->head = (m->head + 1) % EVENTS_QUEUE;
		m->n--;
		pthread_mutex_unlock(&m->lock);
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", r.ns);
		body = kube_event_json(&m->api, r.ns, r.name, r.uid, r.reason, "Normal",
				       r.message);
		if (body)
			status = kube_api_request(&m->api, "POST", path, "application/json",
						  body, 1 << 20, true, &resp);
		pthread_mutex_lock(&m->lock);
		if (kube_api_ok(status)) {
			m->posted++;
			m->said_failure = false;
		} else {
			m->failed++;
			if (!m->said_failure)
				pr_warn("events: the %s Event on pod %s/%s: %s%ld %.200s (said once until one goes)",
					r.reason, r.ns, r.name, status < 0 ? "no answer " : "HTTP ",
					status, resp ? resp : "");
			m->said_failure = true;
		}
		free(body);
		free(resp);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static int events_start(struct moatd *d)
{
	struct events_mod *m = M(d);

	if (m->running || kube_api_init(&m->api))
		return 0;	/* not in a pod: no Events, as no eviction */
	m->api.thread = &m->t;
	m->api.timeout_s = &d->kube_request_s;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	if (kube_thread_start(&m->t, worker, m)) {
		pthread_mutex_destroy(&m->lock);
		pthread_cond_destroy(&m->cond);
		return -EAGAIN;
	}
	m->running = true;
	return 0;
}

/* moatd stops: what is queued is dropped, a request in flight ends soon. */
static void events_stop(struct moatd *d)
{
	struct events_mod *m = M(d);
	long long by = d->stop_by_ns ? d->stop_by_ns :
		       kube_mono_ns() + d->kube_stop_s * 1000000000LL;

	if (!m->running)
		return;
	pthread_mutex_lock(&m->lock);
	kube_thread_stop(&m->t, by);
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

static void events_close(struct moatd *d)
{
	struct events_mod *m = M(d);

	if (!m->running)
		return;
	events_stop(d);
	if (kube_thread_join(&m->t, m->t.deadline_ns + 2000000000LL)) {
		pr_warn("events: a request did not end by its deadline: left to the exit");
		return;
	}
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->cond);
	m->running = false;
}

static void counts(struct events_mod *m, unsigned long long *posted,
		   unsigned long long *limited, unsigned long long *failed)
{
	*posted = *failed = 0;
	*limited = m ? m->limited : 0;
	if (!m || !m->running)
		return;
	pthread_mutex_lock(&m->lock);
	*posted = m->posted;
	*failed = m->failed;
	pthread_mutex_unlock(&m->lock);
}

void events_counts(const struct moatd *d, unsigned long long *posted,
		   unsigned long long *limited, unsigned long long *failed)
{
	counts(M(d), posted, limited, failed);
}

static int show_counts(const struct moat_knob *k, char *buf, size_t len)
{
	unsigned long long posted, limited, failed;

	counts(k->owner, &posted, &limited, &failed);
	return snprintf(buf, len, "posted %llu limited %llu failed %llu", posted, limited,
			failed) >= (int)len ? -EOVERFLOW : 0;
}

static int events_init(struct moatd *d)
{
	struct events_mod *m = M(d);
	const struct moat_knob knobs[] = {
		{ .path = "kube/events", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 0, .max = 1, .data = &m->on },
		{ .path = "kube/events_sent", .type = MOAT_KNOB_SHOW, .show = show_counts },
	};

	m->on = 1;
	m->tokens = EVENTS_BURST;
	m->tokens_at = moatd_mono_s();
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]), m);
}

const struct moatd_module events_module = {
	.name = "events",
	.size = sizeof(struct events_mod),
	.init = events_init,
	.start = events_start,
	.stop = events_stop,
	.close = events_close,
};
