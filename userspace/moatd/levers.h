/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_LEVERS_H
#define MOATD_LEVERS_H

/*
 * The per-task wake-up levers: what the enforce module does to a kubelet
 * pod's threads where a rule's cgroup gets cpu.weight and cpu.idle
 * (Documentation/enforce.rst).  The kernel keeps them per task, so
 * nothing kubelet owns is written.  Which lever this kernel honours is
 * decided once, at start:
 *
 *   slice  EEVDF custom slices (v6.12+): the LC pod's threads get a short
 *          slice, the BE pod's a long one.  A waking task with a shorter
 *          slice than the running one preempts it (PREEMPT_SHORT, across
 *          cgroups: a group entity takes the shortest slice of its queue).
 *   idle   SCHED_IDLE on the BE pod's threads, on kernels without custom
 *          slices: there check_preempt_wakeup() lets any non-idle task
 *          that wakes preempt a running SCHED_IDLE task, whatever their
 *          cgroups.  faa42d29419d removed that check in 6.12, and 6.6.y
 *          took the removal as a backport: where it does not help, the
 *          controller's judgement undoes it.
 *
 * Every change goes through the journal (journal.h, task entries), each
 * thread named by its tid and start time.
 */
#include <stdbool.h>
#include "moatd.h"

enum lever_kind {
	LEVER_NONE,
	LEVER_SLICE,
	LEVER_IDLE,
};

struct levers {
	enum lever_kind kind;
	bool denied;				/* EPERM said once */
};

/* What a unit's threads get: the slices in us (0: leave it). */
struct lever_want {
	bool be;			/* BE threads, else LC threads */
	unsigned int lc_slice_us, be_slice_us;
};

/* Decide the lever this kernel honours, and say it in one line. */
void levers_probe(struct levers *lv);

/**
 * levers_apply() - the lever on every thread of @unit's cgroups not in
 * @seen (sorted; replaced by the threads found, to be freed), each
 * recorded first.  Kernel threads and threads with a policy or slice of
 * their own are left alone.
 *
 * Return: how many threads were changed, or the first error that is not a
 * thread that went away (-EPERM: no CAP_SYS_NICE; the journal's).
 */
int levers_apply(struct moatd *d, struct levers *lv, struct moatd_group *unit,
		 const struct lever_want *w, __u32 **seen, size_t *nseen);

/** levers_restore() - put back every thread changed for @unit. */
int levers_restore(struct moatd *d, struct moatd_group *unit);

#endif /* MOATD_LEVERS_H */
