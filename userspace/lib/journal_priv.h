/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What journal.c (the entries and their file), kfile.c (the writers) and
 * restore.c (putting back) share: libmoat's own, not its API.
 */
#ifndef MOAT_JOURNAL_PRIV_H
#define MOAT_JOURNAL_PRIV_H

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>
#include "journal.h"
#include "tasksched.h"

/* journal.c: an entry more, or one fewer (in order: a restore goes from
   the newest back, last in first out); -ENAMETOOLONG, -ENOMEM. */
int jnl_add_entry(struct moat_journal *j, enum moat_journal_kind kind,
		  const char *path, const char *orig, const char *last,
		  const char *pending);
void jnl_drop_entry(struct moat_journal *j, size_t i);
/* Replace the file with what @j holds (its comment in journal.c). */
int jnl_save(struct moat_journal *j);
/* Whether @path is @prefix or below it ("": everything). */
bool jnl_under(const char *path, const char *prefix);
/* Absolute, and no ".." component that could climb out of a mount. */
bool jnl_path_normal(const char *path);
/* A task entry's thread, from its path "<dir>/task:<tgid>:<tid>:<start>":
   the length of <dir>, or 0 when it is not one. */
size_t jnl_task_of(const char *path, pid_t *tgid, pid_t *tid,
		   unsigned long long *start);

/* kfile.c: write @value to @path, a cgroup file or a sysctl moat may set. */
int jnl_put(const char *path, const char *value);
/* Whether moat may make or remove the directory @path. */
bool jnl_allowed_dir(const struct moat_journal *j, const char *path);
/* Of the @n entries @e, the one thread @t inherited @cur from. */
const struct moat_journal_entry *
jnl_inherited_from(const struct moat_journal_entry *e, size_t n, const char *dir,
		   const struct moat_task *t, const struct moat_sched *cur);
/* Whether @cur is @e's original, moat's last value or the one pending. */
bool jnl_task_moats(const struct moat_journal_entry *e,
		    const struct moat_sched *cur);

/* A file or directory gone with its cgroup or thread. */
static inline bool jnl_vanished(int err)
{
	return err == -ENOENT || err == -ENODEV;
}

#endif /* MOAT_JOURNAL_PRIV_H */
