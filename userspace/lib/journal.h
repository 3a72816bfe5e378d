/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_JOURNAL_H
#define MOAT_JOURNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include "tasksched.h"

/*
 * The journal: the original content of every kernel file moat changed,
 * and every directory and mount it made, kept in a file in the state
 * directory, so that each can be put back when moatd stops, when it is
 * told to, or at its next start after a crash.  The functions here are
 * the one place in moat that writes to the kernel: moat_kfile_write()
 * (a value, its original recorded before the first write),
 * moat_kdir_make() and moat_kdir_remove() (a directory: resctrl's groups),
 * moat_kfile_put() (a file inside a directory moat made, undone with it)
 * and moat_kmount().  The actuators of cgroup files (actuator.h) and of
 * resctrl (resctrl.h) are built on them.
 *
 * The file is replaced atomically (write a temporary, fsync, rename,
 * fsync the directory): after a crash or power loss it holds either the
 * old or the new set of entries, never a mix.  Its format, one entry per
 * line, fields separated by one space, bytes outside '!'..'~' and '%'
 * itself written as %XX, an empty field as %00:
 *
 *   moat-journal 2
 *   root <host root>				(only where there is one)
 *   file <path> <original> <last> <pending>
 *   side <path> <original> <last> <pending>
 *   mkdir <path> %00 %00 %00
 *   mount <path> <file system type> %00 %00
 *   task <cgroup dir>/task:<tgid>:<tid>:<start> <orig> <last> <pending>
 *   ...
 *   end <entries> <crc32 of every line above, newlines included, in hex>
 *
 * <last> is what the file held after moat's last write (the original
 * until moat writes), <pending> what moat is about to write: the journal
 * is saved before every write, so after a crash the file holds one of
 * the three unless someone else changed it since.  Then a restore leaves
 * it as it is: putting back the original would undo their change.  A
 * "side" file is one the kernel changes when moat writes another (the
 * weight, when cpu.idle changes, even as a restore puts cpu.idle back):
 * where the same restore just wrote a file of its cgroup, its original is
 * put back whatever it holds.  A "mkdir" is a directory
 * moat made (a restore removes it), a "mount" a file system it mounted (a
 * restore unmounts it, unless it holds directories moat did not make).
 * The root line is the host root moatd ran under (hostroot.h; a pod's
 * view of the host): paths below it are read as the host's paths below
 * the reader's host root, so a journal a pod kept is put back by the
 * node's own moatd, and the other way.
 * A "task" is a thread whose scheduling attributes moat changed
 * (tasksched.h; values "<policy>/<nice>/<slice ns>"), kept under the
 * cgroup directory of the unit it was changed for: a restore of that
 * directory puts it back.  <start> (its start time, /proc/<tid>/stat)
 * names the thread for good: a thread with the same tid and another start
 * time is another thread, and is never touched.  A thread forked from one
 * moat changed carries the change (the kernel copies policy and slice on
 * fork): a restore also sweeps the directory's threads, and puts the
 * original back on each of them that has moat's value and whose process,
 * or parent process, is a recorded thread's.
 * Version 1 (no <last>, no <pending>) is still read; its entries are put
 * back whatever the file holds.
 *
 * A journal that does not decode is an error the caller must report: its
 * entries are originals that only it remembers.  One that cannot be
 * saved is said (with the file and the reason), counted, and marked
 * stale; no write is made that it could not record first.
 */

#define MOAT_JOURNAL_VALUE_MAX	256

enum moat_journal_kind {
	MOAT_J_FILE,		/* a value moat changed */
	MOAT_J_SIDE,		/* a value the kernel changes with another */
	MOAT_J_DIR,		/* a directory moat made */
	MOAT_J_MOUNT,		/* a file system moat mounted; orig: its type */
	MOAT_J_TASK,		/* a thread's scheduling attributes */
};

/* Kinds, as a mask, for moat_journal_restore_some(). */
#define MOAT_J_VALUES	(1u << MOAT_J_FILE | 1u << MOAT_J_SIDE | 1u << MOAT_J_TASK)
#define MOAT_J_TREES	(1u << MOAT_J_DIR | 1u << MOAT_J_MOUNT)

struct moat_journal_entry {
	enum moat_journal_kind kind;
	char path[PATH_MAX];
	char orig[MOAT_JOURNAL_VALUE_MAX];	/* as read, trailing newline cut */
	char last[MOAT_JOURNAL_VALUE_MAX];	/* after moat's last write; ""
						   in a version 1 journal */
	char pending[MOAT_JOURNAL_VALUE_MAX];	/* being written; "" if none */
};

struct moat_journal {
	char file[PATH_MAX];		/* "" : in memory only (tests) */
	struct moat_journal_entry *e;
	size_t n, cap;
	/* saves that failed, and whether the file lags what is here */
	unsigned long long save_errors;
	int save_err;			/* the last failed save's -errno */
	bool stale;
	/* trees where directories may be made beside resctrl's (a FAKE) */
	char allow[2][PATH_MAX];
};

/**
 * moat_journal_decode() - parse journal text @buf of @len bytes into @j,
 * whose entries it replaces.
 *
 * Return: 0, or -EBADMSG with the line and reason in @why (bad header,
 * bad entry, missing end line: truncated, count or checksum mismatch),
 * -ENOMEM.  On error @j is left empty.
 */
int moat_journal_decode(struct moat_journal *j, const char *buf, size_t len,
			char *why, size_t whylen);

/**
 * moat_journal_encode() - the text of @j, malloc()ed in *@buf (caller
 * frees), its length in *@len.
 */
int moat_journal_encode(const struct moat_journal *j, char **buf, size_t *len);

/**
 * moat_journal_open() - load the journal at @file into a new *@out; a
 * missing file is an empty journal.  @file "" keeps it in memory only.
 *
 * Return: 0; -EBADMSG when the file does not decode (logged with the
 * file, the line and the reason); -errno when it cannot be read.
 */
int moat_journal_open(const char *file, struct moat_journal **out);

/**
 * moat_file_replace() - replace @file with @len bytes of @buf, crash-safe:
 * write a temporary file, fsync it, rename it over @file, fsync the
 * directory.  Return: 0 or -errno (@file as it was).
 */
int moat_file_replace(const char *file, const char *buf, size_t len);
void moat_journal_free(struct moat_journal *j);

/**
 * moat_journal_find() - the entry for @path, or NULL.
 */
struct moat_journal_entry *moat_journal_find(struct moat_journal *j,
					     const char *path);

/**
 * moat_kfile_write() - write @value to the kernel file @path, recording
 * its original content in @j (and saving the journal) first.  Writes only
 * when the content differs.  When the content is neither the original nor
 * what moat last wrote, someone else (kubelet, an admin) changed it since:
 * theirs stands, not written over (0 is returned, as if theirs came just
 * after moat's write), and the next moat_journal_check() tells its owner.
 * So does a write of theirs while the journal is saved.  Where the
 * content is already @value, it becomes the original: what a restore
 * puts back.
 *
 * @path must be on a cgroup file system: a journal edited by hand cannot
 * make moat write anywhere else.
 *
 * Return: 0; -ENOENT or -ENODEV when the file or its cgroup vanished
 * (its entry is dropped); -EXDEV when @path is not on a cgroup file
 * system; the save's -errno, nothing written, when the journal could
 * not be saved (@j->stale says which); the write's -errno otherwise.
 */
int moat_kfile_write(struct moat_journal *j, const char *path,
		     const char *value);

/**
 * moat_kfile_write_with() - moat_kfile_write() of @value to @path, where
 * the kernel also changes @side (cpu.idle resets the group's weight):
 * @side's original is recorded first, so that a restore, last in first
 * out, puts back both, and its content after the write is taken as moat's
 * own, not as a change by someone else.
 *
 * Return: as moat_kfile_write().
 */
int moat_kfile_write_with(struct moat_journal *j, const char *path,
			  const char *value, const char *side);

/**
 * moat_kfile_read() - the content of @path, trailing newline cut.
 */
int moat_kfile_read(const char *path, char *buf, size_t len);

/**
 * moat_kfile_access() - whether @path exists (F_OK) or moatd may write it
 * (W_OK, as its effective uid and capabilities): 0 or -errno.
 */
int moat_kfile_access(const char *path, int mode);

/*
 * Where the cgroup files moat reads, writes and asks about live: the
 * kernel's, unless a closed-loop simulator (selftests/sim_kernel.c) puts
 * an in-memory cgroup tree that follows the kernel's rules in their
 * place, to drive the real policies and actuators, journal included,
 * through thousands of periods.  Each returns 0 or -errno, as the
 * kernel's file would.  NULL: the kernel's again.  @save and @load,
 * where set, take the place of the disk for moat_state_save() and
 * moat_state_load(): the simulator keeps what a crash would leave, and
 * fails saves on cue.
 */
struct moat_kfile_ops {
	int (*read)(const char *path, char *buf, size_t len);
	int (*put)(const char *path, const char *value);
	int (*access)(const char *path, int mode);
	int (*save)(const char *file, const char *buf, size_t len);
	int (*load)(const char *file, char *buf, size_t len);
};
void moat_kfile_set_ops(const struct moat_kfile_ops *ops);

/*
 * moat's own files in its state directory (the journal, the record of
 * evictions): moat_state_save() replaces @file with @len bytes of @buf,
 * crash-safe (moat_file_replace()); moat_state_load() reads it whole
 * into @buf, NUL-terminated, a regular file only.  Return: 0; -ENOENT
 * where there is none; -EINVAL where it is not a regular file (a FIFO
 * would block the reader); -EOVERFLOW for a file of @len bytes or more;
 * -errno.
 */
int moat_state_save(const char *file, const char *buf, size_t len);
int moat_state_load(const char *file, char *buf, size_t len);

/**
 * moat_journal_restore() - put back the original of every entry whose
 * path starts with @prefix ("" for all), and drop it from the journal.
 * Files that vanished are dropped quietly; a file someone changed since
 * moat's last write is left as it is (logged); a file whose write fails
 * stays in the journal and is logged.
 *
 * Return: 0 when every matching entry was restored, left or had vanished
 * (even when the journal could not then be saved: @j->stale says so),
 * else the first error.
 */
int moat_journal_restore(struct moat_journal *j, const char *prefix);

/*
 * Told of a file moat holds that someone else changed: its entry, and
 * what the file holds now.
 */
typedef void (*moat_journal_outside_fn)(void *ctx,
					const struct moat_journal_entry *e,
					const char *now);

/**
 * moat_journal_check() - compare each value moat holds under @prefix (its
 * file and side entries) with its file.  A file that holds neither what
 * moat last wrote there nor what it is writing was changed by someone
 * else (kubelet resizing a pod, systemd's daemon-reload, an admin): its
 * content is its original now, and nothing of moat's is left in it to
 * put back, so its entry is dropped, after @fn (may be NULL) is told.  A
 * file gone with its cgroup is dropped quietly.
 *
 * Return: how many files someone else changed, or the save's -errno.
 */
int moat_journal_check(struct moat_journal *j, const char *prefix,
		       moat_journal_outside_fn fn, void *ctx);

/**
 * moat_journal_forget() - drop the entries under @prefix without writing:
 * for a cgroup that is gone.
 */
int moat_journal_forget(struct moat_journal *j, const char *prefix);

/**
 * moat_journal_restore_some() - moat_journal_restore() of the entries of
 * the kinds in the mask @kinds (MOAT_J_VALUES, MOAT_J_TREES) only.
 */
int moat_journal_restore_some(struct moat_journal *j, const char *prefix,
			      unsigned int kinds);

/**
 * moat_journal_restore_files() - moat_journal_restore() of the entries of
 * the files @names (NULL-terminated) of the directory @dir, in one pass:
 * a side file of @dir is put back after a write of one of the others.
 */
int moat_journal_restore_files(struct moat_journal *j, const char *dir,
			       const char *const *names);

/**
 * moat_kfile_strerror() - @err of a moat_kfile_*() call in words: -EXDEV
 * is "not a file on a cgroup file system", not a cross-device link.
 */
const char *moat_kfile_strerror(int err);

/**
 * moat_journal_allow() - let directories be made under @root, on
 * whatever file system it is (a FAKE resctrl for tests, a FUSE file
 * system); without it only on resctrl.  At most two.
 */
int moat_journal_allow(struct moat_journal *j, const char *root);

/**
 * moat_kdir_make() - make the directory @path (0755), recorded first: a
 * restore removes it.  Only on resctrl or under a tree allowed.
 *
 * Return: 0; -EEXIST, someone else's (nothing recorded); -EXDEV, not a
 * place moat may make directories; the save's or mkdir's -errno.
 */
int moat_kdir_make(struct moat_journal *j, const char *path);

/**
 * moat_kdir_remove() - remove @path, a directory moat_kdir_make() made,
 * and its record.  Return: 0 (also when it was gone), -ENOENT when moat
 * did not make it, or rmdir's -errno (the record stays).
 */
int moat_kdir_remove(struct moat_journal *j, const char *path);

/**
 * moat_kfile_put() - write @len bytes of @buf to @path in one write, a
 * file in a directory moat made, or beside one (resctrl's default group,
 * whose tasks file takes tasks back): nothing to record, the directory's
 * removal undoes it.  @j NULL: no check (tests on fake trees).
 *
 * Return: 0; -EXDEV, not such a file; the write's -errno.
 */
int moat_kfile_put(struct moat_journal *j, const char *path, const char *buf,
		   size_t len);

/**
 * moat_kfile_open_put() - what moat_kfile_put() checks, then @path open
 * for writes, for a file written many times (resctrl's tasks, a tid a
 * write).  Return: the fd, or -errno.
 */
int moat_kfile_open_put(struct moat_journal *j, const char *path);

/**
 * moat_kmount() - mount a @fstype file system at @target, recorded first:
 * a restore unmounts it.  Return: 0 or -errno.
 */
int moat_kmount(struct moat_journal *j, const char *target, const char *fstype);


/**
 * moat_ktask_write() - set thread @t's scheduling attributes to @want,
 * for the unit whose cgroup directory is @dir, recording first what the
 * thread has now, or @orig where it is not NULL (a thread that inherited
 * moat's change: moat_ktask_inherited()).  Nothing is written when the
 * thread has @want already.
 *
 * Return: 0; -ENOENT when the thread is gone (or its tid names another
 * thread now); the save's -errno, nothing written; sched_setattr's.
 */
int moat_ktask_write(struct moat_journal *j, const char *dir,
		     const struct moat_task *t, const struct moat_sched *want,
		     const struct moat_sched *orig);

/**
 * struct moat_ktask_op - one thread's change in moat_ktask_write_all():
 * @t, @want and, where @inherited, @orig in; the rest out.
 * @err: 0, or what moat_ktask_write() would return for it.
 * @changed: moat changed the thread's attributes.
 */
struct moat_ktask_op {
	struct moat_task t;
	struct moat_sched want, orig, cur;
	bool inherited, recorded, write, changed;
	int err;
};

/**
 * moat_ktask_write_all() - moat_ktask_write() for @n threads of @dir,
 * with one journal save before the first change and at most one after
 * the last (not three each: a pod that forks hundreds of threads a
 * second would cost moatd hundreds of fsyncs a second).  Each thread is
 * recorded first and written only once the journal holds it; after a
 * thread refused with -EPERM the rest are not tried and get -EPERM too.
 *
 * Return: 0 (each thread's result in its @err); the first save's -errno,
 * nothing written and nothing this call recorded kept.
 */
int moat_ktask_write_all(struct moat_journal *j, const char *dir,
			 struct moat_ktask_op *op, size_t n);

/**
 * moat_ktask_find() - the entry of thread @t under @dir, or NULL.
 */
struct moat_journal_entry *moat_ktask_find(struct moat_journal *j,
					   const char *dir,
					   const struct moat_task *t);

/**
 * moat_ktask_forget_gone() - drop the entries under @dir of threads that
 * exited (or whose tid is another thread's now): nothing of moat's is
 * left in them to put back.  Without it a pod that forks (a shell loop,
 * kubelet's exec probes) grows the journal by a thread a fork while its
 * lever is held, and every save writes them all.
 *
 * Return: 0, or the save's -errno.
 */
int moat_ktask_forget_gone(struct moat_journal *j, const char *dir);

/**
 * moat_ktask_inherited() - whether thread @t, not recorded, holding @cur,
 * got it from a thread moat changed for @dir: its process or its parent
 * process is a recorded thread's, and @cur is what moat set there.  Then
 * that thread's original is in *@orig, with @cur's nice.
 */
bool moat_ktask_inherited(const struct moat_journal *j, const char *dir,
			  const struct moat_task *t, const struct moat_sched *cur,
			  struct moat_sched *orig);

#endif /* MOAT_JOURNAL_H */
