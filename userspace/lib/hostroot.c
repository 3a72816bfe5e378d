// SPDX-License-Identifier: GPL-2.0-only
/* The host root: where the host's /sys and /proc are (hostroot.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "hostroot.h"

static char host_root[PATH_MAX];

int moat_host_root_set(const char *dir)
{
	char copy[PATH_MAX];
	struct stat st;
	size_t n = strlen(dir);

	if (n >= sizeof(copy))
		return -ENAMETOOLONG;
	if (n && (dir[0] != '/' || strstr(dir, "/../") ||
		  (n >= 3 && !strcmp(dir + n - 3, "/.."))))
		return -EINVAL;
	strcpy(copy, dir);
	while (n && copy[n - 1] == '/')
		copy[--n] = '\0';
	if (n) {
		if (stat(copy, &st))
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
	}
	strcpy(host_root, copy);
	return 0;
}

const char *moat_host_root(void)
{
	return host_root;
}

int moat_host_path(char *buf, size_t len, const char *path)
{
	if ((size_t)snprintf(buf, len, "%s%s", host_root, path) >= len) {
		if (len)
			buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

FILE *moat_host_fopen(const char *path)
{
	char full[PATH_MAX];

	if (moat_host_path(full, sizeof(full), path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return fopen(full, "re");
}

const char *moat_path_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strncmp(path, dir, n) || (path[n] && path[n] != '/'))
		return NULL;
	return path + n;
}

int moat_in_host_pid_ns(void)
{
	char self[PATH_MAX], pid[32];
	ssize_t n;

	/*
	 * The host's /proc names this process by its pid in the host's PID
	 * namespace: its own pid only if that is its namespace.  (Comparing
	 * /proc/1/ns/pid needs ptrace access to the host's init, which a pod
	 * may not have.)
	 */
	if (moat_host_path(self, sizeof(self), "/proc/self"))
		return -ENAMETOOLONG;
	n = readlink(self, pid, sizeof(pid) - 1);
	if (n < 0)
		return -errno;
	pid[n] = '\0';
	return strtol(pid, NULL, 10) == (long)getpid();
}
