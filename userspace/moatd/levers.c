// SPDX-License-Identifier: GPL-2.0-only
/*
 * The per-task wake-up levers (levers.h).  A pass over a unit's threads
 * each period takes the threads that entered it since the last: threads
 * forked by a changed thread carry the change already (the kernel copies
 * policy and slice), and are recorded with their parent's original so
 * that a restore puts it back; threads attached from outside (a new
 * container's) get the lever at the next pass.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "cgroup.h"
#include "hostroot.h"
#include "journal.h"
#include "levers.h"
#include "log.h"
#include "tasksched.h"

#ifndef SCHED_IDLE
#define SCHED_IDLE	5
#endif

void levers_probe(struct levers *lv)
{
	const struct moat_sched_caps *c = moat_sched_caps();
	int ns = moat_in_host_pid_ns();

	*lv = (struct levers){ .kind = LEVER_NONE };
	if (ns < 0) {
		pr_info("levers: cannot tell whether moatd is in the host's PID namespace (%s): no per-task lever on kubelet pods, only the CPU quota",
			strerror(-ns));
		return;
	}
	if (!ns) {
		pr_info("levers: moatd is not in the host's PID namespace: no per-task lever on kubelet pods, only the CPU quota");
		return;
	}
	if (c->slice) {
		lv->kind = LEVER_SLICE;
		pr_info("levers: this kernel keeps custom slices (default %.2f ms): kubelet pods' LC threads get a short slice, BE threads a long one; SCHED_IDLE is not used (a waking task no longer preempts it across cgroups since 6.12)",
			c->base_slice_ns / 1e6);
		return;
	}
	lv->kind = LEVER_IDLE;
	pr_info("levers: no custom slices on this kernel (before 6.12%s%s): kubelet pods' BE threads get SCHED_IDLE, which a waking task preempts across cgroups there (not on a 6.6.y with faa42d29419d backported: the controller undoes what does not help)",
		c->err ? ": " : "", c->err ? strerror(-c->err) : "");
}

/* Whether @cur is the kernel's, not the thread's own choice. */
static bool plain(const struct moat_sched *cur)
{
	unsigned int p = cur->policy & ~MOAT_SCHED_RESET_ON_FORK;

	return (p == SCHED_OTHER || p == SCHED_BATCH) && !cur->slice_ns;
}

/* What the lever makes of a thread with @cur; false: nothing. */
static bool lever_value(const struct levers *lv, const struct lever_want *w,
			const struct moat_sched *cur, struct moat_sched *want)
{
	*want = *cur;
	if (lv->kind == LEVER_IDLE && w->be) {
		want->policy = SCHED_IDLE | (cur->policy & MOAT_SCHED_RESET_ON_FORK);
		return true;
	}
	if (lv->kind != LEVER_SLICE)
		return false;
	want->slice_ns = 1000ULL * (w->be ? w->be_slice_us : w->lc_slice_us);
	return want->slice_ns > 0;
}

/* Thread @tid's change into @op: 1, 0 for none, or -errno. */
static int plan_one(struct moatd *d, struct levers *lv,
		    const struct moatd_group *u, const struct lever_want *w,
		    pid_t tid, struct moat_ktask_op *op)
{
	struct moat_sched cur;
	struct moat_task t;
	int err;

	err = moat_task_read(tid, &t);
	if (err || t.kthread || moat_ktask_find(d->journal, u->dir, &t))
		return err == -ENOENT ? 0 : err;
	err = moat_sched_get(tid, &cur);
	if (err)
		return err == -ESRCH ? 0 : err;
	*op = (struct moat_ktask_op){ .t = t, .want = cur };
	/* forked from a thread moat changed: its parent's original */
	op->inherited = moat_ktask_inherited(d->journal, u->dir, &t, &cur, &op->orig);
	if (op->inherited)
		return 1;
	if (!plain(&cur) || !lever_value(lv, w, &cur, &op->want))
		return 0;	/* a policy or slice of its own */
	return 1;
}

static int cmp_tid(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

int levers_apply(struct moatd *d, struct levers *lv, struct moatd_group *unit,
		 const struct lever_want *w, __u32 **seen, size_t *nseen)
{
	struct moat_ktask_op *ops = NULL;
	__u32 *all = NULL, *tids, *v;
	size_t n = 0, i, nops = 0;
	int changed = 0, err = 0, first = 0;
	long nt;

	if (lv->kind == LEVER_NONE)
		return -EOPNOTSUPP;
	for (i = 0; i < d->nr_groups; i++) {
		const struct moatd_group *g = d->groups[i];
		char path[PATH_MAX + 16];

		if (g->unit != unit)
			continue;
		snprintf(path, sizeof(path), "%s/%s", g->dir,
			 d->cpu->v2 ? "cgroup.threads" : "tasks");
		nt = moat_read_tids(path, &tids);
		if (nt <= 0)
			continue;	/* gone, or empty */
		v = realloc(all, (n + nt) * sizeof(*all));
		if (!v) {
			free(tids);
			first = -ENOMEM;
			break;
		}
		all = v;
		memcpy(all + n, tids, nt * sizeof(*tids));
		n += nt;
		free(tids);
	}
	if (n)
		qsort(all, n, sizeof(*all), cmp_tid);
	ops = calloc(n ? n : 1, sizeof(*ops));
	if (!ops && !first)
		first = -ENOMEM;
	for (i = 0; ops && i < n; i++) {
		if (*seen && bsearch(&all[i], *seen, *nseen, sizeof(**seen), cmp_tid))
			continue;	/* seen at an earlier pass */
		err = plan_one(d, lv, unit, w, all[i], &ops[nops]);
		if (err > 0)
			nops++;
		else if (err < 0 && !first)
			first = err;
	}
	/* one journal save for the pass's threads, not one each */
	err = nops ? moat_ktask_write_all(d->journal, unit->dir, ops, nops) : 0;
	if (err && !first)
		first = err;
	for (i = 0; i < nops; i++) {
		changed += ops[i].changed && !ops[i].inherited;
		if (ops[i].err && ops[i].err != -ENOENT && !first)
			first = ops[i].err;
	}
	free(ops);
	if (first == -EPERM && !lv->denied) {
		pr_warn("levers: group %s: sched_setattr: %s: moatd lacks CAP_SYS_NICE, which another user's threads need, and threads with a capability moatd lacks (a container's); pods get only the CPU quota from now on",
			unit->gid.id, strerror(EPERM));
		lv->denied = true;
	}
	if (first) {
		free(all);	/* what failed is tried again at the next pass */
		return first;
	}
	/* a thread of the last pass gone: the entries of those that exited */
	for (i = 0; *seen && i < *nseen; i++)
		if (!n || !bsearch(&(*seen)[i], all, n, sizeof(*all), cmp_tid)) {
			moat_ktask_forget_gone(d->journal, unit->dir);
			break;
		}
	free(*seen);
	*seen = all;
	*nseen = n;
	return changed;
}

int levers_restore(struct moatd *d, struct moatd_group *unit)
{
	return moat_journal_restore_some(d->journal, unit->dir, 1u << MOAT_J_TASK);
}
