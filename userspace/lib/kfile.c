// SPDX-License-Identifier: GPL-2.0-only
/*
 * The one set of functions that write to kernel files, cgroup and
 * resctrl files and directories, mounts and threads' scheduling, each
 * change recorded in the journal (journal.c) before it is made.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include "hostroot.h"
#include "journal.h"
#include "log.h"
#include "journal_priv.h"
#include "tasksched.h"

/*
 * The sysctls moat may put back, by path on the host: a journal is a
 * file in the state directory, and one that names another file must not
 * make moatd write it.  moat sets none now: its run-queue fallback once
 * read taskstats with kernel.task_delayacct turned on, and a journal a
 * crash left then still names it.
 */
static const char *const sysctls[] = { "/proc/sys/kernel/task_delayacct" };

/*
 * Open @path for @flags, refusing anything not on a cgroup file system
 * but the sysctls above.
 */
static int open_kfile(const char *path, int flags)
{
	struct statfs sf;
	int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
	bool sysctl = false;
	size_t i;

	if (fd < 0)
		return -errno;
	for (i = 0; i < sizeof(sysctls) / sizeof(sysctls[0]); i++) {
		const char *rest = moat_path_below(path, moat_host_root());

		sysctl |= rest && !strcmp(rest, sysctls[i]);
	}
	if (fstatfs(fd, &sf) ||
	    (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC &&
	     !(sysctl && sf.f_type == PROC_SUPER_MAGIC))) {
		close(fd);
		return -EXDEV;
	}
	return fd;
}

static const struct moat_kfile_ops *ops;

void moat_kfile_set_ops(const struct moat_kfile_ops *o)
{
	ops = o;
}

int moat_kfile_access(const char *path, int mode)
{
	if (ops)
		return ops->access(path, mode);
	/*
	 * AT_EACCESS: as moatd's effective uid and capabilities; access()
	 * asks for the real uid's, and a uid other than root loses its
	 * CAP_DAC_OVERRIDE there.
	 */
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS) ? -errno : 0;
}

int moat_kfile_read(const char *path, char *buf, size_t len)
{
	int fd;
	ssize_t n;

	if (ops)
		return ops->read(path, buf, len);
	fd = open_kfile(path, O_RDONLY);
	if (fd < 0)
		return fd;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	if ((size_t)n == len - 1)
		return -EOVERFLOW;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return 0;
}

int moat_state_save(const char *file, const char *buf, size_t len)
{
	if (ops && ops->save)
		return ops->save(file, buf, len);
	return moat_file_replace(file, buf, len);
}

int moat_state_load(const char *file, char *buf, size_t len)
{
	struct stat st = { 0 };
	ssize_t n;
	size_t off = 0;
	int fd, err = 0;

	if (ops && ops->load)
		return ops->load(file, buf, len);
	/* a FIFO would block moatd here, the control loop with it */
	fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = S_ISREG(st.st_mode) ? -errno : -EINVAL;
		close(fd);
		return err;
	}
	while (off < len) {
		n = read(fd, buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		off += n;
	}
	close(fd);
	if (!err && off == len)
		err = -EOVERFLOW;
	if (!err)
		buf[off] = '\0';
	return err;
}

int jnl_put(const char *path, const char *value)
{
	size_t len = strlen(value);
	ssize_t n;
	int fd;

	if (ops)
		return ops->put(path, value);
	fd = open_kfile(path, O_WRONLY);
	if (fd < 0)
		return fd;
	n = write(fd, value, len);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* resctrl's magic (include/uapi/linux/magic.h has it since v4.20) */
#ifndef RDTGROUP_SUPER_MAGIC
#define RDTGROUP_SUPER_MAGIC	0x7655821
#endif

int moat_journal_allow(struct moat_journal *j, const char *root)
{
	size_t i;

	for (i = 0; i < sizeof(j->allow) / sizeof(j->allow[0]); i++) {
		if (!j->allow[i][0] || !strcmp(j->allow[i], root)) {
			snprintf(j->allow[i], sizeof(j->allow[i]), "%s", root);
			return 0;
		}
	}
	return -ENOSPC;
}

static bool path_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return n && !strncmp(path, prefix, n) && path[n] == '/';
}

/* Whether moat may make or remove the directory @path: in resctrl, or
   under a tree allowed; never with ".." in it. */
bool jnl_allowed_dir(const struct moat_journal *j, const char *path)
{
	char parent[PATH_MAX];
	struct statfs sf;
	size_t i;

	if (!jnl_path_normal(path))
		return false;
	for (i = 0; i < sizeof(j->allow) / sizeof(j->allow[0]); i++)
		if (path_under(path, j->allow[i]))
			return true;
	snprintf(parent, sizeof(parent), "%s", path);
	return !statfs(dirname(parent), &sf) && sf.f_type == RDTGROUP_SUPER_MAGIC;
}

int moat_kdir_make(struct moat_journal *j, const char *path)
{
	int err;

	if (!jnl_allowed_dir(j, path))
		return -EXDEV;
	if (!access(path, F_OK))
		return -EEXIST;		/* someone else's: not recorded */
	err = jnl_add_entry(j, MOAT_J_DIR, path, "", "", "");
	if (!err)
		err = jnl_save(j);
	if (err) {
		if (moat_journal_find(j, path))
			jnl_drop_entry(j, j->n - 1);
		return err;		/* no record, no mkdir */
	}
	if (!mkdir(path, 0755))
		return 0;
	err = -errno;
	jnl_drop_entry(j, j->n - 1);	/* EEXIST too: not ours to remove */
	jnl_save(j);
	return err;
}

int moat_kdir_remove(struct moat_journal *j, const char *path)
{
	struct moat_journal_entry *e = moat_journal_find(j, path);

	if (!e || e->kind != MOAT_J_DIR)
		return -ENOENT;
	if (rmdir(path) && errno != ENOENT)
		return -errno;
	jnl_drop_entry(j, e - j->e);
	jnl_save(j);
	return 0;
}

/* Whether @path is in a directory moat made, or beside one. */
static bool in_made_dir(const struct moat_journal *j, const char *path)
{
	char dir[PATH_MAX], up[PATH_MAX];
	size_t i;

	snprintf(dir, sizeof(dir), "%s", path);
	dirname(dir);
	for (i = 0; i < j->n; i++) {
		if (j->e[i].kind != MOAT_J_DIR)
			continue;
		snprintf(up, sizeof(up), "%s", j->e[i].path);
		if (!strcmp(j->e[i].path, dir) || !strcmp(dirname(up), dir))
			return true;
	}
	return false;
}

int moat_kfile_open_put(struct moat_journal *j, const char *path)
{
	int fd;

	if (j && (!jnl_path_normal(path) || !in_made_dir(j, path)))
		return -EXDEV;
	/* O_APPEND: the kernel ignores it; a test's fake file keeps each */
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int moat_kfile_put(struct moat_journal *j, const char *path, const char *buf,
		   size_t len)
{
	int fd = moat_kfile_open_put(j, path);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = write(fd, buf, len);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int moat_kmount(struct moat_journal *j, const char *target, const char *fstype)
{
	int err;

	if (!jnl_path_normal(target))
		return -EINVAL;
	err = jnl_add_entry(j, MOAT_J_MOUNT, target, fstype, "", "");
	if (!err)
		err = jnl_save(j);
	if (!err && mount(fstype, target, fstype, 0, NULL))
		err = -errno;
	if (err && moat_journal_find(j, target)) {
		jnl_drop_entry(j, j->n - 1);
		jnl_save(j);
	}
	return err;
}

/*
 * A new entry of @kind for @path, holding @orig and @cur, saved before
 * anything is written: 0 and the entry in *@out, or the error and no
 * entry.
 */
static int record(struct moat_journal *j, enum moat_journal_kind kind,
		  const char *path, const char *orig, const char *cur,
		  struct moat_journal_entry **out)
{
	int err = jnl_add_entry(j, kind, path, orig, cur, "");

	if (!err)
		err = jnl_save(j);
	if (err) {
		if (moat_journal_find(j, path))
			jnl_drop_entry(j, j->n - 1);
		return err;
	}
	*out = &j->e[j->n - 1];
	return 0;
}

/* Someone else set @e's value to @cur: that is what a restore puts back. */
static int adopt(struct moat_journal *j, struct moat_journal_entry *e,
		 const char *cur)
{
	strcpy(e->orig, cur);
	strcpy(e->last, cur);
	e->pending[0] = '\0';
	return jnl_save(j);
}

int moat_kfile_write(struct moat_journal *j, const char *path,
		     const char *value)
{
	struct moat_journal_entry *e = moat_journal_find(j, path);
	char cur[MOAT_JOURNAL_VALUE_MAX], now[MOAT_JOURNAL_VALUE_MAX];
	int err;

	if (strlen(value) >= sizeof(e->pending))
		return -ENAMETOOLONG;
	err = moat_kfile_read(path, cur, sizeof(cur));
	if (err)
		goto fail;
	if (!e) {
		err = record(j, MOAT_J_FILE, path, cur, cur, &e);
		if (err)
			return err;	/* no record, no write */
	} else if (strcmp(cur, e->orig) && strcmp(cur, e->last) &&
		   strcmp(cur, e->pending)) {
		/*
		 * Someone else's, since the period's moat_journal_check():
		 * not written over.  That check tells the owner next period,
		 * which decides afresh from it (what moat wanted came from a
		 * snapshot older than their value).
		 */
		if (strcmp(cur, value)) {
			pr_info("%s: written by someone else ('%s') since moat's last write: theirs stands",
				path, cur);
			return 0;
		}
		pr_info("%s: changed by someone else to '%s': that is now the value to restore",
			path, cur);
		err = adopt(j, e, cur);
		if (err)
			return err;
	}
	if (!strcmp(cur, value)) {
		strcpy(e->last, cur);
		return 0;
	}
	/* What is about to be written, on disk before it is written. */
	strcpy(e->last, cur);
	strcpy(e->pending, value);
	err = jnl_save(j);
	if (err) {
		e->pending[0] = '\0';
		return err;
	}
	/*
	 * The save is the slow part (two fsyncs), and someone else's write
	 * in it would be lost under moat's: read again just before writing,
	 * so that window is a read's and a write's.  Theirs stands, as
	 * above.
	 */
	err = moat_kfile_read(path, now, sizeof(now));
	if (err) {
		e->pending[0] = '\0';
		goto fail;
	}
	if (strcmp(now, cur)) {
		pr_info("%s: written by someone else ('%s') as moat was to write '%s': theirs stands",
			path, now, value);
		e->pending[0] = '\0';
		jnl_save(j);
		return 0;
	}
	err = jnl_put(path, value);
	if (!err)
		err = moat_kfile_read(path, e->last, sizeof(e->last));
	if (!err) {
		/* read back as written: the saved <pending> names it */
		if (strcmp(e->last, e->pending))
			jnl_save(j);
		return 0;
	}
	e->pending[0] = '\0';
fail:
	if (jnl_vanished(err) && e) {
		jnl_drop_entry(j, e - j->e);
		jnl_save(j);
	}
	return err;
}

int moat_kfile_write_with(struct moat_journal *j, const char *path,
			  const char *value, const char *side)
{
	struct moat_journal_entry *e;
	char cur[MOAT_JOURNAL_VALUE_MAX];
	int err;

	err = moat_kfile_read(side, cur, sizeof(cur));
	if (!err)
		err = moat_kfile_write(j, side, cur);	/* records, no write */
	e = err ? NULL : moat_journal_find(j, side);
	if (e)
		e->kind = MOAT_J_SIDE;	/* saved with @path's write */
	if (!err)
		err = moat_kfile_write(j, path, value);
	if (err)
		return err;
	/* the kernel's change to @side is moat's doing: its last value */
	e = moat_journal_find(j, side);
	if (!e)
		return 0;
	err = moat_kfile_read(side, e->last, sizeof(e->last));
	return err ? err : jnl_save(j);
}

/* ---- threads' scheduling attributes ---- */

static int task_path(char *buf, size_t len, const char *dir,
		     const struct moat_task *t)
{
	return snprintf(buf, len, "%s/task:%d:%d:%llu", dir, (int)t->tgid,
			(int)t->tid, t->start) >= (int)len ? -ENAMETOOLONG : 0;
}

struct moat_journal_entry *moat_ktask_find(struct moat_journal *j,
					   const char *dir,
					   const struct moat_task *t)
{
	char path[PATH_MAX];

	return task_path(path, sizeof(path), dir, t) ? NULL :
	       moat_journal_find(j, path);
}

/* Whether @a and @b are one policy and slice (a thread's nice is its own). */
static bool same_lever(const struct moat_sched *a, const struct moat_sched *b)
{
	return a->policy == b->policy && a->slice_ns == b->slice_ns;
}

/* Of the @n entries @e, the one thread @t inherited @cur from (below). */
const struct moat_journal_entry *
jnl_inherited_from(const struct moat_journal_entry *e, size_t n, const char *dir,
		   const struct moat_task *t, const struct moat_sched *cur)
{
	size_t i, dl = strlen(dir);

	for (i = 0; i < n; i++) {
		unsigned long long start;
		struct moat_sched last;
		pid_t tgid, tid;

		if (e[i].kind != MOAT_J_TASK ||
		    jnl_task_of(e[i].path, &tgid, &tid, &start) != dl ||
		    strncmp(e[i].path, dir, dl) || tid == t->tid ||
		    (tgid != t->tgid && tgid != t->ppid) ||
		    moat_sched_parse(e[i].last, &last) || !same_lever(&last, cur))
			continue;
		return &e[i];
	}
	return NULL;
}

int moat_ktask_forget_gone(struct moat_journal *j, const char *dir)
{
	size_t i, dl = strlen(dir), before = j->n;

	for (i = j->n; i-- > 0;) {
		const struct moat_journal_entry *e = &j->e[i];
		unsigned long long start;
		struct moat_task t;
		pid_t tgid, tid;
		int err;

		if (e->kind != MOAT_J_TASK ||
		    jnl_task_of(e->path, &tgid, &tid, &start) != dl ||
		    strncmp(e->path, dir, dl))
			continue;
		err = moat_task_read(tid, &t);
		if (err == -ENOENT || (!err && (t.tgid != tgid || t.start != start)))
			jnl_drop_entry(j, i);	/* gone, or its tid another's */
	}
	return j->n != before ? jnl_save(j) : 0;
}

bool moat_ktask_inherited(const struct moat_journal *j, const char *dir,
			  const struct moat_task *t, const struct moat_sched *cur,
			  struct moat_sched *orig)
{
	const struct moat_journal_entry *e = jnl_inherited_from(j->e, j->n, dir, t, cur);

	if (!e || moat_sched_parse(e->orig, orig))
		return false;
	orig->nice = cur->nice;
	return true;
}

/*
 * Whether @cur's policy and slice are @e's original's, moat's last or
 * the pending one's.  Not its nice, which moat never changes: a thread
 * that renices itself under the lever is still moat's to put back (its
 * nice stays its own), where it was left with SCHED_IDLE for good.
 */
bool jnl_task_moats(const struct moat_journal_entry *e,
		    const struct moat_sched *cur)
{
	const char *v[] = { e->orig, e->last, e->pending };
	struct moat_sched s;
	size_t i;

	for (i = 0; i < 3; i++)
		if (v[i][0] && !moat_sched_parse(v[i], &s) && same_lever(&s, cur))
			return true;
	return false;
}

/* Thread @op failed with @err: gone, its entry goes (*@save: save then). */
static int task_failed(struct moat_journal *j, const char *path, int err, bool *save)
{
	struct moat_journal_entry *e;

	if (err == -ESRCH)
		err = -ENOENT;
	if (err == -ENOENT && (e = moat_journal_find(j, path))) {
		jnl_drop_entry(j, e - j->e);
		*save = true;
	}
	return err;
}

/* 1. Thread @op's value recorded (or adopted), moat's pending; its path. */
static void task_record(struct moat_journal *j, const char *dir,
			struct moat_ktask_op *op, char *path, bool *save)
{
	char now[MOAT_JOURNAL_VALUE_MAX], o[MOAT_JOURNAL_VALUE_MAX];
	struct moat_journal_entry *e;
	int err;

	op->err = task_path(path, PATH_MAX, dir, &op->t);
	if (op->err)
		return;
	e = moat_journal_find(j, path);
	err = moat_sched_get(op->t.tid, &op->cur);
	if (err) {
		op->err = task_failed(j, path, err, save);
		return;
	}
	moat_sched_format(now, sizeof(now), &op->cur);
	if (!e) {
		moat_sched_format(o, sizeof(o), op->inherited ? &op->orig : &op->cur);
		op->err = jnl_add_entry(j, MOAT_J_TASK, path, o, now, "");
		if (op->err)
			return;		/* no record, no change */
		e = &j->e[j->n - 1];
		op->recorded = *save = true;
	} else if (!jnl_task_moats(e, &op->cur)) {
		pr_info("thread %d (process %d): scheduling changed by someone else to %s: that is now the value to restore",
			(int)op->t.tid, (int)op->t.tgid, now);
		strcpy(e->orig, now);
		e->pending[0] = '\0';
		*save = true;
	}
	strcpy(e->last, now);
	if (moat_sched_equal(&op->cur, &op->want))
		return;
	moat_sched_format(e->pending, sizeof(e->pending), &op->want);
	op->write = *save = true;
}

/* 2. Thread @op's change, once the journal holds it. */
static void task_change(struct moat_journal *j, struct moat_ktask_op *op,
			const char *path, bool *save)
{
	struct moat_journal_entry *e = moat_journal_find(j, path);
	char o[MOAT_JOURNAL_VALUE_MAX];
	struct moat_sched again;
	int err;

	/* someone else's change in the save stands, as moat_kfile_write()'s */
	err = moat_sched_get(op->t.tid, &again);
	if (!err && !moat_sched_equal(&again, &op->cur)) {
		moat_sched_format(o, sizeof(o), &again);
		pr_info("thread %d (process %d): scheduling changed by someone else (%s) as moat was to change it: theirs stands",
			(int)op->t.tid, (int)op->t.tgid, o);
		e->pending[0] = '\0';
		*save = true;
		return;
	}
	if (!err)
		err = moat_sched_set(op->t.tid, &op->want);
	if (!err)
		err = moat_sched_get(op->t.tid, &again);
	if (!err) {
		moat_sched_format(e->last, sizeof(e->last), &again);
		*save |= strcmp(e->last, e->pending) != 0;
		op->changed = true;
		return;
	}
	e->pending[0] = '\0';
	op->err = task_failed(j, path, err, save);
}

int moat_ktask_write_all(struct moat_journal *j, const char *dir,
			 struct moat_ktask_op *op, size_t n)
{
	char path[PATH_MAX];
	bool save = false;
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		op[i].err = 0;
		op[i].recorded = op[i].write = op[i].changed = false;
		task_record(j, dir, &op[i], path, &save);
	}
	err = save ? jnl_save(j) : 0;
	if (err) {	/* nothing written: what this call recorded goes */
		for (i = n; i-- > 0;) {
			struct moat_journal_entry *e;

			if (op[i].err || task_path(path, sizeof(path), dir, &op[i].t))
				continue;
			e = moat_journal_find(j, path);
			if (e && op[i].recorded)
				jnl_drop_entry(j, e - j->e);
			else if (e && op[i].write)
				e->pending[0] = '\0';
			op[i].err = err;
		}
		return err;
	}
	save = false;
	for (i = 0; i < n; i++) {
		if (op[i].err || !op[i].write)
			continue;
		task_path(path, sizeof(path), dir, &op[i].t);
		if (err == -EPERM) {	/* not tried: the same answer */
			moat_journal_find(j, path)->pending[0] = '\0';
			op[i].err = err;
			save = true;
			continue;
		}
		task_change(j, &op[i], path, &save);
		if (op[i].err == -EPERM)
			err = -EPERM;
	}
	if (save)
		jnl_save(j);
	return 0;
}

int moat_ktask_write(struct moat_journal *j, const char *dir,
		     const struct moat_task *t, const struct moat_sched *want,
		     const struct moat_sched *orig)
{
	struct moat_ktask_op op = { .t = *t, .want = *want, .inherited = orig != NULL };
	int err;

	if (orig)
		op.orig = *orig;
	err = moat_ktask_write_all(j, dir, &op, 1);
	return err ? err : op.err;
}

const char *moat_kfile_strerror(int err)
{
	if (err == -EXDEV)
		return "not a file on a cgroup file system (nor a sysctl moat may set)";
	return strerror(-err);
}
