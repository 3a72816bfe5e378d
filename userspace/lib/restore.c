// SPDX-License-Identifier: GPL-2.0-only
/*
 * Putting back what the journal holds: files, threads, directories and
 * mounts, newest first; and finding what someone else wrote since.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/mount.h>
#include "cgroup.h"
#include "journal.h"
#include "log.h"
#include "journal_priv.h"
#include "tasksched.h"

/* Put back the thread of task entry @e: 0, or -errno (gone: -ENOENT). */
static int restore_task(const struct moat_journal_entry *e)
{
	struct moat_sched cur, orig;
	unsigned long long start;
	struct moat_task t;
	pid_t tgid, tid;
	char now[MOAT_JOURNAL_VALUE_MAX];
	int err;

	if (!jnl_task_of(e->path, &tgid, &tid, &start) || moat_sched_parse(e->orig, &orig))
		return -EINVAL;
	err = moat_task_read(tid, &t);
	if (err)
		return err;
	if (t.start != start) {
		pr_info("thread %d: its tid names another thread now: left alone",
			(int)tid);
		return -ENOENT;
	}
	err = moat_sched_get(tid, &cur);
	if (err)
		return err == -ESRCH ? -ENOENT : err;
	moat_sched_format(now, sizeof(now), &cur);
	if (!jnl_task_moats(e, &cur)) {
		pr_info("thread %d (process %d): scheduling changed since moatd set it (%s), to %s: left as it is",
			(int)tid, (int)tgid, e->last, now);
		return 0;
	}
	orig.nice = cur.nice;	/* the thread's own, moat's never */
	if (!moat_sched_equal(&cur, &orig)) {
		err = moat_sched_set(tid, &orig);
		if (err)
			return err == -ESRCH ? -ENOENT : err;
	}
	pr_debug("thread %d (process %d): restored %s policy, nice %d, slice %llu ns",
		 (int)tid, (int)tgid, moat_sched_policy_name(orig.policy),
		 orig.nice, orig.slice_ns);
	return 0;
}

/*
 * The threads forked from threads moat changed, under the cgroup @dir and
 * its children: each that holds the value moat set on its process or its
 * parent process gets that thread's original (@e: the @n entries the
 * restore just put back).  Return: how many.
 */
static size_t sweep_dir(const struct moat_journal_entry *e, size_t n,
			const char *top, const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	size_t swept = 0;
	__u32 *tids;
	long nt, i;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cgroup.threads", dir);
	if (access(path, F_OK))
		snprintf(path, sizeof(path), "%s/tasks", dir);
	nt = moat_read_tids(path, &tids);
	for (i = 0; i < nt; i++) {
		const struct moat_journal_entry *from;
		struct moat_sched cur, orig;
		struct moat_task t;

		if (moat_task_read(tids[i], &t) || t.kthread ||
		    moat_sched_get(t.tid, &cur))
			continue;
		from = jnl_inherited_from(e, n, top, &t, &cur);
		if (!from || moat_sched_parse(from->orig, &orig))
			continue;
		orig.nice = cur.nice;
		if (!moat_sched_set(t.tid, &orig))
			swept++;
	}
	if (nt > 0)
		free(tids);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		swept += sweep_dir(e, n, top, path);
	}
	if (d)
		closedir(d);
	return swept;
}

static void sweep(const struct moat_journal_entry *e, size_t n)
{
	unsigned long long start;
	pid_t tgid, tid;
	size_t i, k, dl;

	for (i = 0; i < n; i++) {
		char dir[PATH_MAX];
		size_t swept;

		dl = jnl_task_of(e[i].path, &tgid, &tid, &start);
		for (k = 0; k < i; k++)		/* each directory once */
			if (jnl_task_of(e[k].path, &tgid, &tid, &start) == dl &&
			    !strncmp(e[k].path, e[i].path, dl))
				break;
		if (k < i || dl >= sizeof(dir))
			continue;
		memcpy(dir, e[i].path, dl);
		dir[dl] = '\0';
		swept = sweep_dir(e, n, dir, dir);
		if (swept)
			pr_info("%s: %zu threads forked from threads moatd changed: restored",
				dir, swept);
	}
}

/* Whether @cur is a value moat put in @e's file, or its original. */
static bool moats(const struct moat_journal_entry *e, const char *cur)
{
	return !e->last[0] ||	/* version 1: not known */
	       !strcmp(cur, e->orig) || !strcmp(cur, e->last) ||
	       (e->pending[0] && !strcmp(cur, e->pending));
}

/* Whether @a and @b are files of the same directory (one cgroup). */
static bool same_dir(const char *a, const char *b)
{
	const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');

	return sa && sb && sa - a == sb - b && !strncmp(a, b, sa - a);
}

/*
 * A file system moat mounted goes unless it holds directories moat did
 * not make since (resctrl: someone's groups, which an unmount destroys).
 */
static int unmount_one(const struct moat_journal *j,
		       const struct moat_journal_entry *e)
{
	static const char *const own[] = { "info", "mon_groups", "mon_data" };
	struct dirent *de;
	DIR *dir = opendir(e->path);
	bool foreign = false;
	size_t i;

	while (dir && (de = readdir(dir)) && !foreign) {
		char path[PATH_MAX * 2];
		bool ours = de->d_name[0] == '.';

		for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			ours |= !strcmp(de->d_name, own[i]);
		snprintf(path, sizeof(path), "%s/%s", e->path, de->d_name);
		if (!ours && de->d_type == DT_DIR && !moat_journal_find(
			    (struct moat_journal *)j, path))
			foreign = true;
	}
	if (dir)
		closedir(dir);
	if (foreign) {
		pr_info("%s: groups moat did not make are there: it stays mounted",
			e->path);
		return 0;
	}
	if (umount2(e->path, 0))
		return errno == EINVAL ? -ENOENT : -errno;	/* not mounted */
	pr_info("%s: unmounted", e->path);
	return 0;
}

/*
 * Put back one entry: 0, or -errno (vanished: -ENOENT, -ENODEV).
 * @wrote: a file of this pass was written back, the last one in @dir: a
 * side entry of that cgroup holds what the kernel made of that write, and
 * is put back whatever it holds.
 */
static int restore_one(struct moat_journal *j, struct moat_journal_entry *e,
		       const char *dir, bool *wrote)
{
	char cur[MOAT_JOURNAL_VALUE_MAX];
	int err;

	switch (e->kind) {
	case MOAT_J_DIR:
		if (!jnl_allowed_dir(j, e->path))
			return -EXDEV;
		if (rmdir(e->path))
			return -errno;
		pr_info("%s: removed", e->path);
		return 0;
	case MOAT_J_MOUNT:
		return unmount_one(j, e);
	case MOAT_J_TASK:
		return restore_task(e);
	default:
		break;
	}
	err = moat_kfile_read(e->path, cur, sizeof(cur));
	if (!err && !moats(e, cur) &&
	    !(e->kind == MOAT_J_SIDE && *wrote && same_dir(dir, e->path))) {
		pr_info("%s: changed since moatd last wrote it ('%s'), to '%s': left as it is",
			e->path, e->last, cur);
	} else if (!err) {
		if (strcmp(cur, e->orig)) {
			err = jnl_put(e->path, e->orig);
			*wrote = !err;
		}
		if (!err)
			pr_info("%s: restored '%s'", e->path, e->orig);
	}
	return err;
}

/* Which entries a restore puts back. */
struct restore_sel {
	const char *prefix;		/* under this path ("" for all) */
	unsigned int kinds;		/* of these kinds (mask) */
	const char *const *names;	/* else: these files of @prefix */
};

static bool selected(const struct restore_sel *sel,
		     const struct moat_journal_entry *e)
{
	const char *const *n;
	size_t len;

	if (!(sel->kinds & 1u << e->kind))
		return false;
	if (!sel->names)
		return jnl_under(e->path, sel->prefix);
	len = strlen(sel->prefix);
	while (len > 1 && sel->prefix[len - 1] == '/')
		len--;
	if (strncmp(e->path, sel->prefix, len) || e->path[len] != '/')
		return false;
	for (n = sel->names; *n; n++)
		if (!strcmp(e->path + len + 1, *n))
			return true;
	return false;
}

/* Newest first: a file's original is under the values moat wrote later. */
static int restore_sel(struct moat_journal *j, const struct restore_sel *sel)
{
	struct moat_journal_entry *tasks = NULL;
	char dir[PATH_MAX] = "";
	size_t i, ntasks = 0, before = j->n;
	int err, first = 0;
	bool wrote = false;

	/* the threads', for the sweep of their children after */
	for (i = 0; i < j->n; i++)
		ntasks += j->e[i].kind == MOAT_J_TASK && selected(sel, &j->e[i]);
	if (ntasks)
		tasks = malloc(ntasks * sizeof(*tasks));
	if (!tasks && ntasks)
		pr_warn("out of memory: threads forked from those moatd changed keep its value");
	for (i = 0, ntasks = 0; tasks && i < j->n; i++)
		if (j->e[i].kind == MOAT_J_TASK && selected(sel, &j->e[i]))
			tasks[ntasks++] = j->e[i];
	for (i = j->n; i-- > 0;) {
		struct moat_journal_entry *e = &j->e[i];

		if (!selected(sel, e))
			continue;
		if (!same_dir(dir, e->path))
			wrote = false;	/* another cgroup */
		snprintf(dir, sizeof(dir), "%s", e->path);
		err = restore_one(j, e, dir, &wrote);
		if (jnl_vanished(err)) {
			pr_debug("%s: gone, ignoring", e->path);
		} else if (err) {
			pr_err("%s: restore%s%s: %s", e->path,
			       e->kind <= MOAT_J_SIDE ? " " : "",
			       e->kind <= MOAT_J_SIDE ? e->orig : "",
			       moat_kfile_strerror(err));
			if (!first)
				first = err;
			continue;
		}
		jnl_drop_entry(j, i);
	}
	if (j->n != before)
		jnl_save(j);
	if (ntasks)
		sweep(tasks, ntasks);
	free(tasks);
	return first;
}

int moat_journal_restore_some(struct moat_journal *j, const char *prefix,
			      unsigned int kinds)
{
	struct restore_sel sel = { .prefix = prefix, .kinds = kinds };

	return restore_sel(j, &sel);
}

int moat_journal_restore_files(struct moat_journal *j, const char *dir,
			       const char *const *names)
{
	struct restore_sel sel = { .prefix = dir, .kinds = ~0u,
				   .names = names };

	return restore_sel(j, &sel);
}

int moat_journal_restore(struct moat_journal *j, const char *prefix)
{
	return moat_journal_restore_some(j, prefix, ~0u);
}

int moat_journal_check(struct moat_journal *j, const char *prefix,
		       moat_journal_outside_fn fn, void *ctx)
{
	char cur[MOAT_JOURNAL_VALUE_MAX];
	size_t i, before = j->n;
	int n = 0, err;

	for (i = j->n; i-- > 0;) {
		struct moat_journal_entry *e = &j->e[i];

		if ((e->kind != MOAT_J_FILE && e->kind != MOAT_J_SIDE) ||
		    !jnl_under(e->path, prefix) || !e->last[0])
			continue;	/* version 1's entries have no <last> */
		err = moat_kfile_read(e->path, cur, sizeof(cur));
		if (jnl_vanished(err)) {
			jnl_drop_entry(j, i);
			continue;
		}
		if (err || !strcmp(cur, e->last) || !strcmp(cur, e->pending))
			continue;
		n++;
		if (fn)
			fn(ctx, e, cur);
		jnl_drop_entry(j, i);
	}
	if (j->n != before) {
		err = jnl_save(j);
		if (err)
			return err;
	}
	return n;
}
