// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-eevdf-probe: what EEVDF saw while one task waited for a CPU
 * (tools/bench/eevdf.bpf.c), for issue 44's long waits.  A benchmark
 * tool, not installed.
 *
 *   moat-eevdf-probe [--min-us N] TID
 *
 * Until SIGINT or SIGTERM, it follows the task's waits: from each
 * wake-up (or preemption) to its switch-in.  Each wait of N us or more
 * (default 500) is printed with the kernel's view at its wake-up and at
 * every pick of another task on its CPU meanwhile, at the level where
 * the two tasks' hierarchies meet: the waiting entity's lag (real us:
 * the queue's weighted average vruntime less its own, times its weight;
 * eligible when not negative), both entities' virtual deadlines from
 * that average, the running entity's protection left (RUN_TO_PARITY),
 * their weights and slices, and the running task's thread_info.flags
 * after the wake-up's check (TIF_NEED_RESCHED: the kernel asked it to
 * go).  At the end, a count of the long waits by the reason at their
 * wake-up, and every wait under 100 us and of N us or more by that reason
 * and those flags.  Prints "attached" on stderr once it is.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "eevdf.h"
#include "eevdf.skel.h"

#define MAX_EVENTS 4096

static struct eevdf_event evs[MAX_EVENTS];
static unsigned int nev;
static bool truncated;
static unsigned long long min_ns = 500000;
static unsigned long waits, long_waits;
/* the long waits by what the wake-up found (reason()) */
enum why { W_INELIGIBLE, W_CURR_EARLIER, W_QUEUED_EARLIER, W_PROTECTED, W_PICKED, W_UNSEEN, W_NR };
static const char *const whys[W_NR] = {
	[W_INELIGIBLE] = "not eligible (negative lag)",
	[W_CURR_EARLIER] = "eligible; the running entity eligible with an earlier deadline",
	[W_QUEUED_EARLIER] = "eligible; a queued entity eligible with an earlier deadline",
	[W_PROTECTED] = "eligible, the earliest deadline; the running entity protected",
	[W_PICKED] = "eligible, the earliest deadline: pick_eevdf() would take it",
	[W_UNSEEN] = "no wake-up seen (a preemption, the CPU idle, no common level)",
};
static unsigned long reasons[W_NR];
/*
 * Every wait by its reason at the wake-up and the running task's flags
 * then (a reschedule asked for or not: which bit, the kernel's headers
 * say), under 100 us and of min_ns or more.
 */
#define TALLY 64
static struct {
	enum why why;
	unsigned long long flags;
	unsigned long quick, slow;
} tally[TALLY];
static unsigned int ntally;
static bool no_vprot;		/* the kernel keeps no vprot: protection unread */
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static long long down(__u64 w)	/* scale_load_down() on 64-bit */
{
	long long d = (long long)(w >> 10);

	return w ? (d > 2 ? d : 2) : 0;
}

/* avg_vruntime(), relative to zero: the queue's weighted average */
static long double avg_key(const struct eevdf_event *e)
{
	long double avg = e->sum_w, load = e->sum_weight;

	if (e->has_curr && e->curr.on_rq) {
		avg += (long double)(long long)(e->curr.vruntime - e->zero) * down(e->curr.weight);
		load += down(e->curr.weight);
	}
	return load ? avg / load : 0;
}

/* an entity's lag in real ns: (V - v) * w / 1024 */
static double lag_ns(const struct eevdf_event *e, const struct eevdf_se *se)
{
	long double v = (long double)(long long)(se->vruntime - e->zero);

	return (double)((avg_key(e) - v) * down(se->weight) / 1024);
}

/* a virtual time from the average, in virtual us */
static double vfrom_us(const struct eevdf_event *e, __u64 t)
{
	return (double)(((long double)(long long)(t - e->zero) - avg_key(e)) / 1000);
}

static bool eligible(const struct eevdf_event *e, const struct eevdf_se *se)
{
	return lag_ns(e, se) >= 0;
}

static bool before(const struct eevdf_se *a, const struct eevdf_se *b)
{
	return (long long)(a->deadline - b->deadline) < 0;
}

/*
 * RUN_TO_PARITY's protection of a running entity: from 6.18 vprot, in
 * vlag's place, an end in its virtual time; before, vlag held a copy of
 * its deadline, which the probe does not read as one (never protected).
 */
static bool protected(const struct eevdf_event *e, const struct eevdf_se *se)
{
	return e->has_vprot && (long long)(se->vlag - se->vruntime) > 0;
}

static bool same(const struct eevdf_se *a, const struct eevdf_se *b)
{
	return a->vruntime == b->vruntime && a->weight == b->weight && !strcmp(a->name, b->name);
}

/* pick_eevdf() on the recorded queue: the curr, a tree entry, or NULL */
static const struct eevdf_se *pick(const struct eevdf_event *e)
{
	const struct eevdf_se *best = NULL, *curr = NULL;
	unsigned int i;

	if (e->has_curr && e->curr.on_rq && eligible(e, &e->curr))
		curr = &e->curr;
	if (curr && protected(e, curr))
		return curr;
	for (i = 0; i < e->nr_tree && i < EEVDF_QUEUED; i++)
		if (eligible(e, &e->tree[i]) && (!best || before(&e->tree[i], best)))
			best = &e->tree[i];
	if (curr && (!best || before(curr, best)))
		best = curr;
	return best;
}

static enum why reason(const struct eevdf_event *e)
{
	const struct eevdf_se *p;

	if (e->type != EEVDF_WAKE || e->depth < 0)
		return W_UNSEEN;
	if (!eligible(e, &e->lc))
		return W_INELIGIBLE;
	p = pick(e);
	if (!p || same(p, &e->lc))
		return W_PICKED;
	if (p == &e->curr)
		return before(&e->curr, &e->lc) ? W_CURR_EARLIER : W_PROTECTED;
	return W_QUEUED_EARLIER;
}

static void print_se(const struct eevdf_event *e, const struct eevdf_se *se,
		     const char *mark)
{
	printf("    %-3s %-20s w %-4lld slice %5.0f us%s, lag %+9.1f us, deadline V%+.1f vus%s\n",
	       mark, se->name, down(se->weight), se->slice / 1000.0,
	       se->delayed ? " delayed" : "", lag_ns(e, se) / 1000,
	       vfrom_us(e, se->deadline),
	       se == &e->curr && protected(e, se) ? ", protected" : "");
}

static void print_wait(unsigned long long len)
{
	const char *const names[] = { "wake", "pick", "run" };
	unsigned int i, j;

	printf("wait %.0f us (cpu %u)%s\n", len / 1000.0, evs[0].cpu,
	       truncated ? ", events left out" : "");
	for (i = 0; i < nev; i++) {
		const struct eevdf_event *e = &evs[i];
		const struct eevdf_se *p;

		printf("  +%.0f us %s: %s/%u", (e->ts - e->since) / 1000.0,
		       names[e->type], e->other_comm, e->other_pid);
		if (e->type != EEVDF_WAKE)
			printf(" after %u (%s)", e->prev_pid,
			       e->prev_state ? "slept" : "preempted");
		if (e->depth < 0) {
			printf(", no common level\n");
			continue;
		}
		if (e->type == EEVDF_WAKE)
			printf(": %s; its flags %#llx", whys[reason(e)],
			       (unsigned long long)e->other_flags);
		printf("\n");
		/* lc: the waiting task's entity; cur: the running one; >: the pick */
		p = pick(e);
		if (e->has_curr)
			print_se(e, &e->curr, p == &e->curr ? ">cur" : "cur");
		for (j = 0; j < e->nr_tree && j < EEVDF_QUEUED; j++)
			print_se(e, &e->tree[j], same(&e->tree[j], &e->lc) ?
				 (p == &e->tree[j] ? ">lc" : "lc") : (p == &e->tree[j] ? ">" : ""));
	}
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct eevdf_event *e = data;
	unsigned long long len;

	(void)ctx;
	if (size < sizeof(*e))
		return 0;
	if (e->type == EEVDF_WAKE || (nev && evs[0].since != e->since)) {
		nev = 0;
		truncated = false;
	}
	no_vprot |= !e->has_vprot;
	if (nev < MAX_EVENTS)
		evs[nev++] = *e;
	else
		truncated = true;
	if (e->type != EEVDF_RUN)
		return 0;
	waits++;
	len = e->ts - e->since;
	if (evs[0].type == EEVDF_WAKE && (len < 100000 || len >= min_ns)) {
		enum why w = reason(&evs[0]);
		unsigned int t;

		for (t = 0; t < ntally; t++)
			if (tally[t].why == w && tally[t].flags == evs[0].other_flags)
				break;
		if (t == ntally && ntally < TALLY)
			tally[ntally++] = (typeof(tally[0])){ .why = w, .flags = evs[0].other_flags };
		if (t < ntally) {
			tally[t].quick += len < 100000;
			tally[t].slow += len >= min_ns;
		}
	}
	if (len >= min_ns) {
		long_waits++;
		reasons[reason(&evs[0])]++;
		print_wait(len);
	}
	nev = 0;
	return 0;
}

int main(int argc, char **argv)
{
	struct ring_buffer *rb = NULL;
	struct eevdf *skel;
	char *end;
	long tid;
	int i = 1, err;

	if (argc == 4 && !strcmp(argv[1], "--min-us")) {
		errno = 0;
		min_ns = strtoull(argv[2], &end, 10);
		if (*end || !argv[2][0] || argv[2][0] == '-' || errno || min_ns > 60000000) {
			fprintf(stderr, "moat-eevdf-probe: --min-us: '%s' is not a whole number of us up to a minute\n",
				argv[2]);
			return 2;
		}
		min_ns *= 1000;
		i = 3;
	}
	if (argc != i + 1) {
		fprintf(stderr, "usage: moat-eevdf-probe [--min-us N] TID\n");
		return 2;
	}
	tid = strtol(argv[i], &end, 10);
	if (*end || tid <= 0) {
		fprintf(stderr, "moat-eevdf-probe: '%s' is not a thread id\n", argv[i]);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	skel = eevdf__open();
	if (!skel) {
		perror("moat-eevdf-probe: open tools/bench/eevdf.bpf.c");
		return 1;
	}
	skel->rodata->watch_pid = tid;
	err = eevdf__load(skel);
	if (!err)
		err = eevdf__attach(skel);
	if (!err) {
		rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, NULL, NULL);
		if (!rb)
			err = -errno;
	}
	if (err) {
		fprintf(stderr, "moat-eevdf-probe: load and attach: %s\n", strerror(-err));
		eevdf__destroy(skel);
		return 1;
	}
	fprintf(stderr, "attached\n");
	while (!stop) {
		err = ring_buffer__poll(rb, 100);
		if (err < 0 && err != -EINTR)
			break;
	}
	ring_buffer__consume(rb);
	printf("waits %lu, %lu of %.0f us or more; events lost %llu\n", waits, long_waits,
	       min_ns / 1000.0, (unsigned long long)skel->bss->lost);
	if (no_vprot)
		printf("  (this kernel keeps no vprot: RUN_TO_PARITY's protection not read, never shown)\n");
	for (i = 0; i < W_NR; i++)
		if (reasons[i])
			printf("  %lu %s\n", reasons[i], whys[i]);
	printf("by the reason at the wake-up and the running task's flags then: waits under 100 us, of %.0f us or more\n",
	       min_ns / 1000.0);
	for (i = 0; i < (int)ntally; i++)
		printf("  %-62s %#8llx %8lu %6lu\n", whys[tally[i].why], tally[i].flags,
		       tally[i].quick, tally[i].slow);
	ring_buffer__free(rb);
	eevdf__destroy(skel);
	return 0;
}
