/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_HOSTROOT_H
#define MOAT_HOSTROOT_H

#include <stddef.h>
#include <stdio.h>

/*
 * Where the host's kernel interfaces are, as this process sees them.  On
 * the node itself, or in a pod that shares the host's mounts, they are at
 * their own paths: the host root is "".  In a pod with namespaces of its
 * own, /sys/fs/cgroup and /proc show the pod's view (a cgroup namespace
 * hides every cgroup above the pod's), so the DaemonSet mounts the host's
 * under a directory (/host/sys/fs/cgroup, /host/sys/fs/resctrl,
 * /host/proc) and moatd is told where (--host-root /host).  Every kernel
 * path moat reads or writes is made with moat_host_path(); the mounts it
 * looks for in mountinfo are the ones below the host root.
 *
 * One per process: it is where the process's mount namespace put the
 * host, fixed at start.
 */

/**
 * moat_host_root_set() - take @dir as the host root: an absolute path of
 * an existing directory; "/" or "" is the process's own root.
 *
 * Return: 0; -EINVAL (not absolute, or ".." in it), -ENAMETOOLONG, or the
 * -errno of stat() (the caller names @dir).
 */
int moat_host_root_set(const char *dir);

/** moat_host_root() - the host root: "" or a directory without a trailing '/'. */
const char *moat_host_root(void);

/**
 * moat_host_path() - @path (absolute, as on the host) in this process's
 * view: the host root, then @path.
 *
 * Return: 0, or -ENAMETOOLONG (@buf holds "").
 */
int moat_host_path(char *buf, size_t len, const char *path);

/** moat_host_fopen() - fopen(@path as on the host, "re"); NULL with errno. */
FILE *moat_host_fopen(const char *path);

/**
 * moat_path_below() - whether @path is @dir or inside it ("" is above
 * every absolute path).  Return: the rest of @path after @dir ("" or
 * "/..."), or NULL.
 */
const char *moat_path_below(const char *path, const char *dir);

/**
 * moat_in_host_pid_ns() - whether this process is in the PID namespace of
 * the host's /proc (below the host root), where the tids of the host's
 * cgroup files are its own.
 *
 * Return: 1 or 0; -errno when the host's /proc is not there to tell.
 */
int moat_in_host_pid_ns(void);

#endif /* MOAT_HOSTROOT_H */
