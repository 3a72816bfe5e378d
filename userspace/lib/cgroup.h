/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CGROUP_H
#define MOAT_CGROUP_H

#include <stdio.h>
#include <linux/types.h>
#include "mountinfo.h"

/*
 * Cgroups are named two ways: by path inside their hierarchy ("/a/b", as
 * /proc/PID/cgroup shows it; "/" is the root) and by id, the 64-bit kernfs
 * id the BPF programs see, which is the directory's file handle.
 */

/** moat_cgroup_id() - the cgroup id of the cgroup directory @dir. */
int moat_cgroup_id(const char *dir, __u64 *id);

/**
 * moat_read_tids() - the ids in @path, one a line (cgroup.threads,
 * tasks, resctrl's tasks), sorted ascending, into *@out (to free).
 * Return: how many, or -errno.
 */
long moat_read_tids(const char *path, __u32 **out);

/**
 * moat_cgroup_dir() - the directory of hierarchy path @path in @h.
 *
 * Return: 0, -ENOENT when @path is outside the part of the hierarchy @h's
 * mount shows, -ENAMETOOLONG.
 */
int moat_cgroup_dir(const struct moat_cg_hierarchy *h, const char *path,
		    char *dir, size_t len);

/**
 * moat_cgroup_resolve() - turn what a user typed into a hierarchy path
 * and id.  @arg is either a directory under @h's mount point
 * ("/sys/fs/cgroup/cpu/a") or a hierarchy path ("/a", "a").
 *
 * Return: 0, -ENOENT when no such cgroup exists (a file in one is none),
 * -ENAMETOOLONG.
 */
int moat_cgroup_resolve(const struct moat_cg_hierarchy *h, const char *arg,
			char *path, size_t len, __u64 *id);

/**
 * moat_proc_cgroup_parse() - the path of a task's cgroup in the hierarchy
 * that has @controller, from /proc/PID/cgroup text; a NULL @controller
 * asks for the cgroup2 line ("0::/path").
 *
 * Return: 0, -ENOENT when no line matches, -EINVAL for a malformed line.
 */
int moat_proc_cgroup_parse(FILE *f, const char *controller, char *path,
			   size_t len);

/**
 * moat_cgroup_set_fingerprint() - a fingerprint of the set of cgroups in
 * the @n elements of @size bytes at @base, each with its __u64 cgroup id
 * at @off: a sum of each id mixed, whatever the order they come in.  A
 * cgroup id (kernfs: inode number and generation) is never reused, so a
 * cgroup made or removed changes it, but for a chance of 2^-64.
 */
__u64 moat_cgroup_set_fingerprint(const void *base, size_t n, size_t size,
				  size_t off);

/* An id -> path table of one hierarchy, refreshed by walking it. */
struct moat_cgroup_names;

struct moat_cgroup_names *moat_cgroup_names_new(const struct moat_cg_hierarchy *h);
void moat_cgroup_names_free(struct moat_cgroup_names *names);

/**
 * moat_cgroup_names_refresh() - walk the hierarchy and rebuild the table.
 * Cgroups that vanish during the walk are left out.
 */
int moat_cgroup_names_refresh(struct moat_cgroup_names *names);

/**
 * moat_cgroup_names_lookup() - the hierarchy path of cgroup @id as of the
 * last refresh, or NULL when it was not there.
 */
const char *moat_cgroup_names_lookup(const struct moat_cgroup_names *names,
				     __u64 id);

/**
 * moat_cgroup_names_fingerprint() - the fingerprint of the set of cgroups
 * the last refresh found (moat_cgroup_set_fingerprint()).
 */
__u64 moat_cgroup_names_fingerprint(const struct moat_cgroup_names *names);

typedef int (*moat_cgroup_names_fn)(__u64 id, const char *path, void *ctx);

/**
 * moat_cgroup_names_for_each() - call @fn for each cgroup of the last
 * refresh, in id order; a non-zero return stops the walk and is returned.
 */
int moat_cgroup_names_for_each(const struct moat_cgroup_names *names,
			       moat_cgroup_names_fn fn, void *ctx);

#endif /* MOAT_CGROUP_H */
