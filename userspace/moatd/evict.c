// SPDX-License-Identifier: GPL-2.0-only
/*
 * Eviction, the last resort (evict.h).
 *
 * Who may go: a pod (a unit, never a container or a rule's cgroup) of
 * class be whose metadata came from the API server (pods.c), made again
 * by a controller (a bare pod evicted is gone for good: only with
 * evict/bare_pods), and not leaving already.  Never an LC pod, never one
 * not classed, never one not known; never a DaemonSet's pod, a static
 * pod's mirror, moat's own ($POD_UID), one of priority 2000000000 or more
 * (system-node-critical, system-cluster-critical), nor one in the
 * namespaces of evict/never_namespaces (kube-system).  The first to go:
 * the lowest priority, then the largest memory user (lib/evict.c).
 *
 * When: the node's memory available (or the pods' under kubepods' limit,
 * node.c, whichever is shorter) under evict/memory_available_pct for
 * evict/memory_periods periods while BE pods' memory.high is at its floor
 * (or there is none to lower, or no swap for it to reclaim to) starts it,
 * one pod at a time, until the available memory is back at
 * evict/memory_release_pct; with evict/cpu, a
 * BE pod held at its CPU quota's floor for evict/cpu_starved_s while it
 * uses 90% of that quota goes too, so that the scheduler may place it
 * where it can run.  Between two: evict/cooldown_s, and no more than
 * evict/max_per_10min in ten minutes, a restart's predecessors'
 * evictions counted (<state-dir>/evictions).
 *
 * How: POST /api/v1/namespaces/<ns>/pods/<name>/eviction with a
 * policy/v1 Eviction whose deleteOptions hold the pod's UID as a
 * precondition (a pod made again under the same name since is not the
 * one decided on: the API server says 409), then an Event on the pod
 * (reason MoatEviction, the figure that decided).  201/200 is evicted;
 * 404 is gone already, as good; 429 is a PodDisruptionBudget saying not
 * now: that pod is left alone for a doubling while and the next
 * candidate may go; anything else is logged and retried after a
 * doubling backoff.  A pod whose eviction was accepted is never asked
 * for again, and none other goes while it leaves: until its cgroup is
 * gone, or for evict/stuck_s, after which it is counted (evict/stuck)
 * and another may go.
 * Requests block, so they run in a thread of their own; the loop hands it
 * one pod at a time and reads its answer at the next decision.
 *
 * evict/mode: off, dry-run (the default: what would go is logged and
 * counted, nothing is asked for) or on; in observe mode it is dry-run at
 * most, since observe mode changes nothing.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "enforce.h"
#include "evict.h"
#include "evictpol.h"
#include "journal.h"
#include "kubeapi.h"
#include "log.h"

#define LAST		8
#define ASKED_MAX	64	/* pods accepted for eviction, still here */
#define SKIP_MAX	64	/* pods a disruption budget keeps, for now */
#define CRITICAL_PRIORITY 2000000000LL	/* system-cluster-critical and up */
#define RETRY_MIN_S	5
#define RETRY_MAX_S	300

enum evict_mode { EVICT_OFF, EVICT_DRY_RUN, EVICT_ON };
static const char *const mode_names[] = { "off", "dry-run", "on", NULL };
const char *const evict_reason_names[EVICT_REASONS] = { "memory", "cpu" };

/* What the thread is asked, and what it answers. */
struct evict_req {
	char uid[MOAT_POD_UID_MAX], ns[MOAT_POD_NS_MAX], name[MOAT_POD_NAME_MAX];
	unsigned int reason;
	char why[256];
};

struct evictor {
	struct kube_thread t;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct kube_api api;
	/* under lock */
	bool pending, done;
	struct evict_req req;
	long status;		/* the eviction's answer; -1: none */
	bool event_ok;
};

/* A line of evict/last. */
struct evict_last {
	time_t at;
	char who[MOAT_POD_NS_MAX + MOAT_POD_NAME_MAX + 2];
	unsigned int reason;
	char result[48];
};

/* A pod the policy remembers by UID, with a time (CLOCK_MONOTONIC, s). */
struct evict_pod {
	char uid[MOAT_POD_UID_MAX];
	double at;		/* asked: accepted at; skipped: until */
	double wait;		/* skipped: the last wait, doubled each time */
	bool stuck;		/* asked: counted as stuck already */
};

struct evict_mod {
	/* knobs */
	unsigned int mode, mem_pct, release_pct, mem_periods, after_high;
	unsigned int cooldown_s, max_per_10min, cpu, cpu_starved_s;
	unsigned int bare_pods, stuck_s;
	char never_ns[256];		/* evict/never_namespaces */
	char self_uid[MOAT_POD_UID_MAX];	/* $POD_UID: moat's own pod */
	/* the policy's state */
	struct moat_evict_mem mem;
	double last_s;			/* CLOCK_MONOTONIC of the last decision */
	double recent[MOAT_EVICT_RATE_MAX];	/* of the last evictions asked for */
	unsigned int next_recent;
	bool loaded;			/* the record of the moatd before: read */
	double retry_s, retry_wait;	/* after a failure */
	bool said_rate, said_unavailable, said_full;
	/* the pod in flight */
	bool in_flight;
	struct evict_req flight;
	/* pods accepted for eviction and not gone yet: never asked again */
	struct evict_pod asked[ASKED_MAX];
	size_t nr_asked;
	/* pods a disruption budget refused: left alone until their time */
	struct evict_pod skip[SKIP_MAX];
	size_t nr_skip;
	/* counters and the record */
	unsigned long long count[EVICT_REASONS][2], refused, stuck, errors;
	struct evict_last last[LAST];
	unsigned int next_last;
	char candidates[512];
	struct evictor *ev;
	/* a FAKE of the API server in place of the thread (evict_set_api()) */
	evict_api_fn api;
	void *api_ctx;
	long answer;			/* its answer to the pod in flight */
};

/*
 * Each group's: since when it is held at its CPU floor (NAN: not), and
 * the CPU it used in that time.
 */
struct evict_group {
	double starved_s;
	double used_s, wall_s;		/* CPU time and time since */
};

static struct evict_mod *V(const struct moatd *d)
{
	return moatd_mod(d, MOD_EVICT);
}

/* ---- the thread ---- */

/* The Event on the pod: what moat did, and the figure that decided it. */
static bool post_event(struct evictor *ev, const struct evict_req *r)
{
	char path[512], *body, *resp = NULL;
	long status = -1;

	body = kube_event_json(&ev->api, r->ns, r->name, r->uid, "MoatEviction",
			       "Warning", r->why);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", r->ns);
	if (body)
		status = kube_api_request(&ev->api, "POST", path, "application/json",
					  body, 1 << 20, false, &resp);
	if (!kube_api_ok(status) && status >= 0)
		pr_warn("evict: the Event on pod %s/%s: HTTP %ld: %.200s", r->ns, r->name,
			status, resp ? resp : "");
	free(resp);
	free(body);
	return kube_api_ok(status);
}

static long post_eviction(struct evictor *ev, const struct evict_req *r)
{
	char path[512], body[1024], *resp;
	long status;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", r->ns,
		 r->name);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
		 "\"deleteOptions\":{\"preconditions\":{\"uid\":\"%s\"}}}",
		 r->name, r->ns, r->uid);
	status = kube_api_request(&ev->api, "POST", path, "application/json", body,
				  1 << 20, false, &resp);
	if (!kube_api_ok(status) && status != 404 && status != 409 && status != 429 &&
	    status >= 0)
		pr_warn("evict: pod %s/%s: HTTP %ld: %.200s", r->ns, r->name, status,
			resp ? resp : "");
	free(resp);
	return status;
}

static void *worker(void *arg)
{
	struct evictor *ev = arg;

	pthread_mutex_lock(&ev->lock);
	while (!kube_thread_stopping(&ev->t)) {
		struct evict_req r;
		long status;
		bool event = false;

		if (!ev->pending) {
			pthread_cond_wait(&ev->cond, &ev->lock);
			continue;
		}
		r = ev->req;
		ev->pending = false;
		pthread_mutex_unlock(&ev->lock);
		status = post_eviction(ev, &r);
		if (kube_api_ok(status))
			event = post_event(ev, &r);
		pthread_mutex_lock(&ev->lock);
		ev->status = status;
		ev->event_ok = event;
		ev->done = true;
	}
	pthread_mutex_unlock(&ev->lock);
	return NULL;
}

static int evict_start(struct moatd *d)
{
	struct kube_api api;
	struct evictor *ev;

	if (V(d)->ev || kube_api_init(&api))
		return 0;	/* not in a pod: said when a pod would go */
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	ev->api = api;
	ev->api.thread = &ev->t;
	ev->api.timeout_s = &d->kube_request_s;
	pthread_mutex_init(&ev->lock, NULL);
	pthread_cond_init(&ev->cond, NULL);
	if (kube_thread_start(&ev->t, worker, ev)) {
		pthread_mutex_destroy(&ev->lock);
		pthread_cond_destroy(&ev->cond);
		free(ev);
		return -EAGAIN;
	}
	V(d)->ev = ev;
	return 0;
}

/* moatd stops: an eviction in flight is abandoned within a second. */
static void evict_stop(struct moatd *d)
{
	struct evictor *ev = V(d)->ev;
	long long by = d->stop_by_ns ? d->stop_by_ns :
		       kube_mono_ns() + d->kube_stop_s * 1000000000LL;

	if (!ev)
		return;
	pthread_mutex_lock(&ev->lock);
	kube_thread_stop(&ev->t, by);
	pthread_cond_signal(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
}

static void evict_close(struct moatd *d)
{
	struct evictor *ev = V(d)->ev;

	if (!ev)
		return;
	evict_stop(d);
	if (kube_thread_join(&ev->t, ev->t.deadline_ns + 2000000000LL)) {
		pr_warn("evict: a request did not end by its deadline: left to the exit");
		return;
	}
	pthread_mutex_destroy(&ev->lock);
	pthread_cond_destroy(&ev->cond);
	free(ev);
	V(d)->ev = NULL;
}

/* ---- what a restart keeps: when the last evictions were ---- */

/*
 * <state-dir>/evictions: when the evictions of the last ten minutes
 * were accepted (CLOCK_REALTIME, s), so that a moatd started again
 * (after a crash, an upgrade, in a crash loop) counts its predecessors'
 * against evict/max_per_10min and evict/cooldown_s, which otherwise
 * only one process's evictions would be held to:
 *
 *   moat-evictions 1
 *   1796590000.500
 */
#define RECORD_FILE	"evictions"
#define RECORD_HEAD	"moat-evictions 1"
#define RECORD_MAX	(32 + MOAT_EVICT_RATE_MAX * 24)

static bool record_path(const struct moatd *d, char *path, size_t len)
{
	return *d->state_dir &&
	       (size_t)snprintf(path, len, "%s/" RECORD_FILE, d->state_dir) < len;
}

static double wall_s(const struct period *p)
{
	return p->wall.tv_sec + p->wall.tv_nsec / 1e9;
}

/* After each eviction accepted; said where it cannot be saved. */
static void record_save(const struct moatd *d, const struct evict_mod *vm)
{
	double now = moatd_period_s(&d->period), wall = wall_s(&d->period);
	char path[PATH_MAX], buf[RECORD_MAX];
	size_t len, i;
	int err;

	if (!record_path(d, path, sizeof(path)))
		return;
	len = snprintf(buf, sizeof(buf), RECORD_HEAD "\n");
	for (i = 0; i < MOAT_EVICT_RATE_MAX; i++)
		if (vm->recent[i] > 0 && now - vm->recent[i] < 600)
			len += snprintf(buf + len, sizeof(buf) - len, "%.3f\n",
					wall - (now - vm->recent[i]));
	err = moat_state_save(path, buf, len);
	if (err)
		pr_warn("evict: %s: %s: a moatd started again would not count this eviction against evict/max_per_10min",
			path, strerror(-err));
}

/* At the first decision: the evictions of the moatd before, counted. */
static void record_load(const struct moatd *d, struct evict_mod *vm, double now)
{
	double wall = wall_s(&d->period), t;
	char path[PATH_MAX], buf[RECORD_MAX], *line, *end, *save = NULL;
	unsigned int n = 0;
	int err;

	if (!record_path(d, path, sizeof(path)))
		return;
	err = moat_state_load(path, buf, sizeof(buf));
	if (err == -ENOENT)
		return;
	if (err) {
		pr_warn("evict: %s: %s: the evictions before this start are not counted",
			path, err == -EINVAL ? "not a regular file" : strerror(-err));
		return;
	}
	line = strtok_r(buf, "\n", &save);
	if (!line || strcmp(line, RECORD_HEAD)) {
		pr_warn("evict: %s: its first line is not '" RECORD_HEAD "': the evictions before this start are not counted",
			path);
		return;
	}
	while ((line = strtok_r(NULL, "\n", &save))) {
		t = strtod(line, &end);
		if (end == line || *end || !isfinite(t)) {
			pr_warn("evict: %s: '%.40s' is not a time: not counted", path, line);
			continue;
		}
		t = fmin(t, wall);	/* ahead of the clock, which went back: now */
		if (wall - t >= 600)
			continue;
		/*
		 * On the monotonic clock; one from before this boot's clock
		 * began counts from its start: a little longer, never less.
		 */
		t = fmax(now - (wall - t), 1e-3);
		vm->recent[vm->next_recent++ % MOAT_EVICT_RATE_MAX] = t;
		vm->last_s = fmax(vm->last_s, t);
		n++;
	}
	if (n)
		pr_info("evict: %u evictions in the ten minutes before this start (%s): counted against evict/max_per_10min and evict/cooldown_s",
			n, path);
}

/* ---- the policy ---- */

static void remember(struct evict_mod *vm, const struct evict_req *r, const char *result)
{
	struct evict_last *l = &vm->last[vm->next_last++ % LAST];

	l->at = time(NULL);
	snprintf(l->who, sizeof(l->who), "%s/%s", r->ns, r->name);
	l->reason = r->reason;
	snprintf(l->result, sizeof(l->result), "%s", result);
}

static struct moatd_group *pod_by_uid(const struct moatd *d, const char *uid)
{
	size_t i;

	for (i = 0; i < d->nr_groups; i++)
		if (d->groups[i]->gid.kind == MOAT_GROUP_POD &&
		    !strcmp(d->groups[i]->gid.kube.pod_uid, uid))
			return d->groups[i];
	return NULL;
}

/* @uid's entry in @v (@n of them), or NULL. */
static struct evict_pod *pod_in(struct evict_pod *v, size_t n, const char *uid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].uid, uid))
			return &v[i];
	return NULL;
}

/* A 429 for the pod in flight: left alone a doubling while, others may go. */
static void skip_pod(struct evict_mod *vm, double now)
{
	struct evict_pod *p = pod_in(vm->skip, vm->nr_skip, vm->flight.uid);
	size_t i, old = 0;

	if (!p && vm->nr_skip < SKIP_MAX) {
		p = &vm->skip[vm->nr_skip++];
		*p = (struct evict_pod){ .wait = 0 };
	} else if (!p) {
		for (i = 1; i < vm->nr_skip; i++)	/* the one free the soonest */
			if (vm->skip[i].at < vm->skip[old].at)
				old = i;
		p = &vm->skip[old];
		*p = (struct evict_pod){ .wait = 0 };
	}
	snprintf(p->uid, sizeof(p->uid), "%s", vm->flight.uid);
	p->wait = p->wait ? fmin(p->wait * 2, RETRY_MAX_S) : RETRY_MIN_S;
	p->at = now + p->wait;
}

/* The thread's answer to the pod in flight, if it came, at @now. */
static void take_answer(struct moatd *d, struct evict_mod *vm, double now)
{
	struct evictor *ev = vm->ev;
	bool done;
	long status = -1;
	bool event = false;
	struct evict_pod *s;

	if (!vm->in_flight)
		return;
	if (vm->api) {
		done = true;
		status = vm->answer;
		event = kube_api_ok(status);
	} else {
		if (!ev)
			return;
		pthread_mutex_lock(&ev->lock);
		done = ev->done;
		if (done) {
			status = ev->status;
			event = ev->event_ok;
			ev->done = false;
		}
		pthread_mutex_unlock(&ev->lock);
	}
	if (!done)
		return;
	vm->in_flight = false;
	if (kube_api_ok(status) || status == 404) {
		pr_info("evict: pod %s/%s %s (%s)%s", vm->flight.ns, vm->flight.name,
			status == 404 ? "was gone already" : "evicted", vm->flight.why,
			kube_api_ok(status) && !event ? "; its Event was not recorded" : "");
		vm->count[vm->flight.reason][0]++;
		remember(vm, &vm->flight, status == 404 ? "gone" : "evicted");
		vm->recent[vm->next_recent++ % MOAT_EVICT_RATE_MAX] = now;
		record_save(d, vm);
		vm->retry_wait = 0;
		s = pod_in(vm->skip, vm->nr_skip, vm->flight.uid);
		if (s)
			*s = vm->skip[--vm->nr_skip];
		/* it leaves; until its cgroup is gone it is never asked for again */
		if (status != 404 && vm->nr_asked < ASKED_MAX) {
			struct evict_pod *a = &vm->asked[vm->nr_asked++];

			*a = (struct evict_pod){ .at = now };
			snprintf(a->uid, sizeof(a->uid), "%s", vm->flight.uid);
		}
		return;
	}
	if (status == 429) {
		vm->refused++;
		skip_pod(vm, now);
		remember(vm, &vm->flight, "refused (429: a disruption budget)");
		pr_info("evict: pod %s/%s: a disruption budget refuses it now (429): left alone %.0f s, the next may go",
			vm->flight.ns, vm->flight.name,
			pod_in(vm->skip, vm->nr_skip, vm->flight.uid)->wait);
		return;
	}
	vm->retry_wait = vm->retry_wait ? fmin(vm->retry_wait * 2, RETRY_MAX_S) :
					  RETRY_MIN_S;
	vm->retry_s = now + vm->retry_wait;
	vm->errors++;
	remember(vm, &vm->flight, status == 409 ? "failed (409: not the pod decided on)" :
		 status < 0 ? "failed (no answer)" : "failed");
	pr_warn("evict: pod %s/%s not evicted (%s %ld%s); again in %.0f s",
		vm->flight.ns, vm->flight.name, status < 0 ? "no answer" : "HTTP",
		status, status == 409 ? ": its UID is not the one decided on" : "",
		vm->retry_wait);
}

/*
 * The pods accepted for eviction: a pod whose cgroup is gone is
 * forgotten; while one leaves, younger than evict/stuck_s, none other
 * goes.  One older is counted as stuck once, and no longer holds the
 * others back; it is still never asked for again.
 */
static bool still_leaving(struct moatd *d, struct evict_mod *vm, double now)
{
	bool wait = false;
	size_t i;

	for (i = 0; i < vm->nr_asked;) {
		struct evict_pod *a = &vm->asked[i];
		struct moatd_group *g = pod_by_uid(d, a->uid);

		if (!g) {
			*a = vm->asked[--vm->nr_asked];
			continue;
		}
		if (now - a->at < vm->stuck_s) {
			wait = true;
		} else if (!a->stuck) {
			a->stuck = true;
			vm->stuck++;
			pr_warn("evict: pod %s/%s is still here %.0f s after its eviction was accepted (evict/stuck_s): another may go; it is not asked for again",
				g->meta.ns, g->meta.name, now - a->at);
		}
		i++;
	}
	return wait;
}

/*
 * Whether @g may go at @now: a known BE pod made again by a controller
 * (or bare, where allowed), not leaving, not critical, not in a
 * namespace never touched, not moat's own, not asked for already, not
 * kept by a disruption budget for now.
 */
static bool candidate(const struct evict_mod *vm, const struct moatd_group *g, double now)
{
	const struct group_meta *m = &g->meta;
	const struct evict_pod *s;

	if (g->gid.kind != MOAT_GROUP_POD || g->unit != g || g->class != MOAT_CLASS_BE ||
	    !m->known || m->daemonset || m->mirror || m->terminating ||
	    (!m->controlled && !vm->bare_pods) || m->priority >= CRITICAL_PRIORITY ||
	    moat_names_has(vm->never_ns, m->ns) || !strcmp(g->gid.kube.pod_uid, vm->self_uid))
		return false;
	if (pod_in((struct evict_pod *)vm->asked, vm->nr_asked, g->gid.kube.pod_uid))
		return false;
	s = pod_in((struct evict_pod *)vm->skip, vm->nr_skip, g->gid.kube.pod_uid);
	return !s || now >= s->at;
}

static int cmp_cand(const void *a, const void *b)
{
	const struct moatd_group *x = *(struct moatd_group *const *)a;
	const struct moatd_group *y = *(struct moatd_group *const *)b;
	struct moat_evict_cand cx = { x->meta.priority, x->win.memory_bytes };
	struct moat_evict_cand cy = { y->meta.priority, y->win.memory_bytes };

	return moat_evict_cmp(&cx, &cy);
}

/*
 * Why BE pods' memory.high can do no more, or NULL: at its floor on each
 * (or no lever for it), or an LC unit's memory pressure over its target
 * with BE held; or the node has no swap, where memory.high frees no
 * anonymous memory (the working set already leaves inactive file pages
 * out) and the OOM killer comes before any pressure to step it by.
 */
static const char *memory_exhausted(const struct moatd *d, struct moatd_group **c, size_t n)
{
	const struct period *p = &d->period;
	bool held = false;
	size_t i;

	if (p->node.swap_total == 0)
		return "no swap: memory.high frees no anonymous memory";
	for (i = 0; i < n; i++)
		held |= !isinf(enforce_limit(c[i], MOAT_RES_MEMORY));
	for (i = 0; held && i < p->nr_units; i++) {
		const struct moat_ctl_lc *lc = &p->units[i].lc;

		if (p->units[i].class == MOAT_CLASS_LC &&
		    lc->target[MOAT_SIG_MEMORY_PRESSURE] > 0 &&
		    lc->value[MOAT_SIG_MEMORY_PRESSURE] > lc->target[MOAT_SIG_MEMORY_PRESSURE])
			return "LC memory pressure over its target with BE held";
	}
	for (i = 0; i < n; i++)
		if (!enforce_exhausted(d, c[i], MOAT_RES_MEMORY))
			return NULL;
	return "BE memory.high exhausted";
}

void evict_decide(struct moatd *d, const struct period *p, struct plan *plan)
{
	struct evict_mod *vm = V(d);
	struct moatd_group **c, *pick = NULL;
	double now = moatd_period_s(p), avail = NAN;
	size_t i, n = 0, len = 0;
	bool memory, pods = false, leaving;
	const char *cond;

	plan->evict = NULL;
	if (!vm->loaded) {
		vm->loaded = true;
		record_load(d, vm, now);
	}
	take_answer(d, vm, now);
	leaving = still_leaving(d, vm, now);
	if (vm->mode == EVICT_OFF) {
		vm->candidates[0] = '\0';
		return;
	}
	c = calloc(d->nr_groups ? d->nr_groups : 1, sizeof(*c));
	if (!c)
		return;
	for (i = 0; i < d->nr_groups; i++)
		if (candidate(vm, d->groups[i], now))
			c[n++] = d->groups[i];
	qsort(c, n, sizeof(*c), cmp_cand);
	vm->candidates[0] = '\0';
	for (i = 0; i < n && len < sizeof(vm->candidates); i++)
		len += snprintf(vm->candidates + len, sizeof(vm->candidates) - len, "%s%s/%s",
				i ? " " : "", c[i]->meta.ns, c[i]->meta.name);

	/* the node's memory, or the pods' under kubepods' limit: the shorter */
	if (p->node.mem_total > 0 && !isnan(p->node.mem_available))
		avail = p->node.mem_available / p->node.mem_total * 100;
	if (p->node.pods_mem_limit > 0 && !isnan(p->node.pods_mem_available) &&
	    !(p->node.pods_mem_available / p->node.pods_mem_limit * 100 >= avail)) {
		avail = p->node.pods_mem_available / p->node.pods_mem_limit * 100;
		pods = true;
	}
	if (!vm->after_high)
		cond = "evict/memory_after_high 0";
	else if (d->mode == MOATD_OBSERVE)
		cond = "observe mode";	/* shadow: against what it would hold */
	else
		cond = memory_exhausted(d, c, n);
	memory = moat_evict_memory(&vm->mem, avail, vm->mem_pct, vm->release_pct,
				   vm->mem_periods, cond != NULL);
	if (memory && n) {
		pick = c[0];
		plan->evict_reason = EVICT_MEMORY;
		snprintf(plan->evict_why, sizeof(plan->evict_why),
			 "%s memory available %.1f%% < %u%% for %u periods, %s; priority %lld, %.0f MiB in use",
			 pods ? "pods'" : "node", avail, vm->mem_pct, vm->mem_periods,
			 cond ? cond : "releasing", pick->meta.priority,
			 pick->win.memory_bytes / (1 << 20));
	}

	/*
	 * Starved at the CPU quota's floor, using all of it: its usage over
	 * the whole time at the floor, not each window's, which a window out
	 * of phase with the CFS period reads as 0 to 2 quotas.
	 */
	for (i = 0; i < n; i++) {
		struct evict_group *vg = group_mod(c[i], MOD_EVICT);
		double q = enforce_limit(c[i], MOAT_RES_CPU);
		double used = c[i]->win.cpu_usage;

		if (!vm->cpu || isinf(q) || !enforce_exhausted(d, c[i], MOAT_RES_CPU)) {
			vg->starved_s = NAN;
			continue;
		}
		if (isnan(vg->starved_s)) {
			vg->starved_s = now;
			vg->used_s = vg->wall_s = 0;
		}
		if (!isnan(used) && p->secs > 0) {
			vg->used_s += used * p->secs;
			vg->wall_s += p->secs;
		}
		if (!pick && now - vg->starved_s >= vm->cpu_starved_s && vg->wall_s > 0 &&
		    vg->used_s / vg->wall_s >= 0.9 * q) {
			pick = c[i];
			plan->evict_reason = EVICT_CPU;
			snprintf(plan->evict_why, sizeof(plan->evict_why),
				 "held at its CPU floor (%.3f CPUs) for %.0f s, using %.3f",
				 q, now - vg->starved_s, vg->used_s / vg->wall_s);
		}
	}
	free(c);
	if (!pick)
		return;
	/* one at a time, a cooldown between, a rate, a retry's backoff */
	if (vm->in_flight || leaving ||
	    (vm->last_s && now - vm->last_s < vm->cooldown_s) || now < vm->retry_s)
		return;
	if (vm->nr_asked == ASKED_MAX) {
		if (!vm->said_full)
			pr_warn("evict: %d pods accepted for eviction are still here: none other goes until one is gone",
				ASKED_MAX);
		vm->said_full = true;
		return;
	}
	vm->said_full = false;
	if (vm->mode == EVICT_ON && d->mode == MOATD_ENFORCE &&
	    !moat_evict_allowed(vm->recent, MOAT_EVICT_RATE_MAX, vm->max_per_10min, now)) {
		if (!vm->said_rate)
			pr_warn("evict: pod %s/%s would go (%s), but %u evictions in ten minutes is evict/max_per_10min",
				pick->meta.ns, pick->meta.name, plan->evict_why, vm->max_per_10min);
		vm->said_rate = true;
		return;
	}
	vm->said_rate = false;
	plan->evict = pick;
}

void evict_act(struct moatd *d, const struct plan *plan)
{
	struct evict_mod *vm = V(d);
	const struct moatd_group *g = plan->evict;
	struct evict_req r = { .reason = plan->evict_reason };

	if (!g)
		return;
	snprintf(r.uid, sizeof(r.uid), "%s", g->gid.kube.pod_uid);
	snprintf(r.ns, sizeof(r.ns), "%s", g->meta.ns);
	snprintf(r.name, sizeof(r.name), "%s", g->meta.name);
	snprintf(r.why, sizeof(r.why), "moat: %s", plan->evict_why);
	vm->last_s = moatd_period_s(&d->period);
	if (vm->mode != EVICT_ON || d->mode != MOATD_ENFORCE) {
		vm->count[r.reason][1]++;
		remember(vm, &r, "dry-run");
		pr_info("evict: would evict pod %s/%s (%s): evict/mode %s%s", r.ns, r.name,
			plan->evict_why, mode_names[vm->mode],
			d->mode == MOATD_ENFORCE ? "" : d->mode == MOATD_SHADOW ?
			", shadow mode" : ", observe mode");
		return;
	}
	if (vm->api) {
		pr_info("evict: asking for pod %s/%s's eviction (%s)", r.ns, r.name,
			plan->evict_why);
		vm->answer = vm->api(vm->api_ctx, r.ns, r.name, r.uid);
		vm->flight = r;
		vm->in_flight = true;
		return;
	}
	if (!vm->ev) {
		if (!vm->said_unavailable)
			pr_warn("evict: pod %s/%s should go (%s), but eviction needs the API server (in a pod): throttling goes on",
				r.ns, r.name, plan->evict_why);
		vm->said_unavailable = true;
		return;
	}
	pr_info("evict: asking for pod %s/%s's eviction (%s)", r.ns, r.name, plan->evict_why);
	pthread_mutex_lock(&vm->ev->lock);
	vm->ev->req = r;
	vm->ev->pending = true;
	vm->ev->done = false;
	pthread_cond_signal(&vm->ev->cond);
	pthread_mutex_unlock(&vm->ev->lock);
	vm->flight = r;
	vm->in_flight = true;
}

/* ---- what reporters read ---- */

void evict_set_api(struct moatd *d, evict_api_fn api, void *ctx)
{
	V(d)->api = api;
	V(d)->api_ctx = ctx;
}

unsigned long long evict_count(const struct moatd *d, enum evict_reason r, bool dry)
{
	return V(d)->count[r][dry];
}

unsigned long long evict_refused(const struct moatd *d)
{
	return V(d)->refused;
}

unsigned long long evict_stuck(const struct moatd *d)
{
	return V(d)->stuck;
}

unsigned long long evict_errors(const struct moatd *d)
{
	return V(d)->errors;
}

/* ---- knobs ---- */

static int show_candidates(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "%s", V(k->owner)->candidates) >= (int)len ?
	       -EOVERFLOW : 0;
}

/* The last evictions, newest first: "<time> <ns>/<name> <reason> <result>". */
static int show_last(const struct moat_knob *k, char *buf, size_t len)
{
	const struct evict_mod *vm = V(k->owner);
	size_t n = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < LAST && i < vm->next_last && n < len; i++) {
		const struct evict_last *l = &vm->last[(vm->next_last - 1 - i) % LAST];
		char when[32];
		struct tm tm;

		gmtime_r(&l->at, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		n += snprintf(buf + n, len - n, "%s%s %s %s %s", i ? "; " : "", when, l->who,
			      evict_reason_names[l->reason], l->result);
	}
	return n >= len ? -EOVERFLOW : 0;
}

static int show_counter(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;
	unsigned long long v;

	if (!strcmp(k->path, "evict/evictions"))
		v = evict_count(d, EVICT_MEMORY, false) + evict_count(d, EVICT_CPU, false);
	else if (!strcmp(k->path, "evict/refused"))
		v = evict_refused(d);
	else
		v = evict_stuck(d);
	return snprintf(buf, len, "%llu", v) >= (int)len ? -EOVERFLOW : 0;
}

static int evict_init(struct moatd *d)
{
	struct evict_mod *vm = V(d);
#define U32(p, lo, hi, v) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
			    .min = lo, .max = hi, .data = v }
	const struct moat_knob knobs[] = {
		{ .path = "evict/mode", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = mode_names, .data = &vm->mode },
		U32("evict/memory_available_pct", 1, 100, &vm->mem_pct),
		U32("evict/memory_release_pct", 1, 100, &vm->release_pct),
		U32("evict/memory_periods", 1, 1000, &vm->mem_periods),
		U32("evict/memory_after_high", 0, 1, &vm->after_high),
		U32("evict/cooldown_s", 0, 3600, &vm->cooldown_s),
		U32("evict/max_per_10min", 0, MOAT_EVICT_RATE_MAX, &vm->max_per_10min),
		U32("evict/stuck_s", 1, 86400, &vm->stuck_s),
		U32("evict/bare_pods", 0, 1, &vm->bare_pods),
		{ .path = "evict/never_namespaces", .type = MOAT_KNOB_STRING, .writable = true,
		  .data = vm->never_ns, .str_max = sizeof(vm->never_ns),
		  .check = moat_knob_check_names,
		  .expects = "namespaces, one space between (kube-system), or *; '' none" },
		U32("evict/cpu", 0, 1, &vm->cpu),
		U32("evict/cpu_starved_s", 10, 86400, &vm->cpu_starved_s),
		{ .path = "evict/candidates", .type = MOAT_KNOB_SHOW, .show = show_candidates },
		{ .path = "evict/last", .type = MOAT_KNOB_SHOW, .show = show_last },
		{ .path = "evict/evictions", .type = MOAT_KNOB_SHOW, .show = show_counter },
		{ .path = "evict/refused", .type = MOAT_KNOB_SHOW, .show = show_counter },
		{ .path = "evict/stuck", .type = MOAT_KNOB_SHOW, .show = show_counter },
	};
#undef U32

	vm->mode = EVICT_DRY_RUN;
	vm->mem_pct = 10;
	vm->release_pct = 15;
	vm->mem_periods = 3;
	vm->after_high = 1;
	vm->cooldown_s = 10;
	vm->max_per_10min = 3;
	vm->cpu = 0;
	vm->cpu_starved_s = 300;
	vm->stuck_s = 120;
	snprintf(vm->never_ns, sizeof(vm->never_ns), "kube-system");
	/* the downward API's metadata.uid (deploy/daemonset.yaml) */
	snprintf(vm->self_uid, sizeof(vm->self_uid), "%s",
		 getenv("POD_UID") ? getenv("POD_UID") : "");
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]), d);
}

static int evict_group_add(struct moatd *d, struct moatd_group *g)
{
	((struct evict_group *)group_mod(g, MOD_EVICT))->starved_s = NAN;
	return 0;
}

const struct moatd_module evict_module = {
	.name = "evict",
	.size = sizeof(struct evict_mod),
	.group_size = sizeof(struct evict_group),
	.init = evict_init,
	.start = evict_start,
	.stop = evict_stop,
	.close = evict_close,
	.group_add = evict_group_add,
};
