// SPDX-License-Identifier: GPL-2.0-only
/* Cgroup names: hierarchy paths, directories and ids, and the maps between. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cgroup.h"
#include "log.h"

static int handle_id(int dirfd, const char *name, __u64 *id)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = { .fh.handle_bytes = sizeof(__u64) };
	int mount_id;

	if (name_to_handle_at(dirfd, name, &h.fh, &mount_id, 0))
		return -errno;
	*id = h.id;
	return 0;
}

int moat_cgroup_id(const char *dir, __u64 *id)
{
	return handle_id(AT_FDCWD, dir, id);
}

/* Strip trailing slashes, keep a lone "/". */
static void trim_slashes(char *p)
{
	size_t n = strlen(p);

	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
}

int moat_cgroup_dir(const struct moat_cg_hierarchy *h, const char *path,
		    char *dir, size_t len)
{
	size_t rootlen = strlen(h->root);
	const char *rest = path;

	if (strcmp(h->root, "/")) {
		if (strncmp(path, h->root, rootlen) ||
		    (path[rootlen] && path[rootlen] != '/'))
			return -ENOENT;
		rest = path + rootlen;
	}
	while (*rest == '/')
		rest++;
	if ((size_t)snprintf(dir, len, "%s%s%s", h->mnt, *rest ? "/" : "",
			     rest) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int moat_cgroup_resolve(const struct moat_cg_hierarchy *h, const char *arg,
			char *path, size_t len, __u64 *id)
{
	size_t mntlen = strlen(h->mnt);
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *rel = arg;
	struct stat st;
	int n, err;

	/* A directory under the mount point: make it a hierarchy path. */
	if (!strncmp(arg, h->mnt, mntlen) &&
	    (arg[mntlen] == '/' || !arg[mntlen]))
		rel = arg + mntlen;
	while (*rel == '/')
		rel++;
	if (!strcmp(h->root, "/"))
		n = snprintf(tmp, sizeof(tmp), "/%s", rel);
	else
		n = snprintf(tmp, sizeof(tmp), "%s%s%s", h->root,
			     *rel ? "/" : "", rel);
	if (n < 0 || (size_t)n >= sizeof(tmp) || (size_t)n >= len)
		return -ENAMETOOLONG;
	trim_slashes(tmp);
	/* ".." would escape the hierarchy and name a directory elsewhere. */
	n = strlen(tmp);
	if (strstr(tmp, "/../") || (n >= 3 && !strcmp(tmp + n - 3, "/..")))
		return -ENOENT;

	err = moat_cgroup_dir(h, tmp, dir, sizeof(dir));
	if (err)
		return err;
	/* a file in a cgroup has a kernfs id too, but is no cgroup */
	if (stat(dir, &st))
		return errno == ENOTDIR ? -ENOENT : -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOENT;
	err = moat_cgroup_id(dir, id);
	if (err)
		return err == -ENOTDIR ? -ENOENT : err;
	strcpy(path, tmp);
	return 0;
}

int moat_proc_cgroup_parse(FILE *f, const char *controller, char *path,
			   size_t len)
{
	char *line = NULL, *ctrls, *p, *save, *tok;
	size_t cap = 0;
	ssize_t n;
	int err = -ENOENT;

	/* hierarchy-ID:controller-list:cgroup-path, from cgroups(7) */
	while ((n = getline(&line, &cap, f)) > 0) {
		bool match = false;

		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		ctrls = strchr(line, ':');
		p = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!p) {
			err = -EINVAL;
			break;
		}
		*ctrls++ = '\0';
		*p++ = '\0';
		if (!controller) {
			match = !strcmp(line, "0") && !*ctrls;
		} else {
			for (tok = strtok_r(ctrls, ",", &save); tok && !match;
			     tok = strtok_r(NULL, ",", &save))
				match = !strcmp(tok, controller);
		}
		if (!match)
			continue;
		if (strlen(p) >= len) {
			err = -ENAMETOOLONG;
			break;
		}
		strcpy(path, p);
		err = 0;
		break;
	}
	free(line);
	return err;
}

struct cgroup_name {
	__u64 id;
	char *path;
};

struct moat_cgroup_names {
	const struct moat_cg_hierarchy *h;
	struct cgroup_name *v;
	size_t nr, cap;
};

struct moat_cgroup_names *moat_cgroup_names_new(const struct moat_cg_hierarchy *h)
{
	struct moat_cgroup_names *names = calloc(1, sizeof(*names));

	if (names)
		names->h = h;
	return names;
}

static void names_clear(struct moat_cgroup_names *names)
{
	size_t i;

	for (i = 0; i < names->nr; i++)
		free(names->v[i].path);
	names->nr = 0;
}

void moat_cgroup_names_free(struct moat_cgroup_names *names)
{
	if (!names)
		return;
	names_clear(names);
	free(names->v);
	free(names);
}

static int names_add(struct moat_cgroup_names *names, __u64 id,
		     const char *path)
{
	if (names->nr == names->cap) {
		size_t cap = names->cap ? names->cap * 2 : 64;
		void *v = realloc(names->v, cap * sizeof(*names->v));

		if (!v)
			return -ENOMEM;
		names->v = v;
		names->cap = cap;
	}
	names->v[names->nr].path = strdup(path);
	if (!names->v[names->nr].path)
		return -ENOMEM;
	names->v[names->nr++].id = id;
	return 0;
}

/* Add every cgroup below the open directory @fd, whose path is @path. */
static int walk(struct moat_cgroup_names *names, int fd, char *path,
		size_t len)
{
	size_t plen = strlen(path);
	struct dirent *de;
	DIR *d = fdopendir(fd);
	int err = 0;

	if (!d) {
		close(fd);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		__u64 id = 0;
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(path + plen, len - plen, "%s%s",
			     plen > 1 ? "/" : "", de->d_name) >= (int)(len - plen))
			continue;	/* deeper than PATH_MAX: not nameable */
		/* A cgroup removed mid-walk is simply not there. */
		if (handle_id(dirfd(d), de->d_name, &id))
			continue;
		err = names_add(names, id, path);
		if (err)
			break;
		sub = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub >= 0)
			err = walk(names, sub, path, len);
		path[plen] = '\0';
	}
	closedir(d);
	return err;
}

static int cmp_name(const void *a, const void *b)
{
	const struct cgroup_name *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int moat_cgroup_names_refresh(struct moat_cgroup_names *names)
{
	char path[PATH_MAX];
	__u64 id = 0;
	int fd, err;

	names_clear(names);
	fd = open(names->h->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		pr_err("cgroup hierarchy %s: open: %s", names->h->mnt,
		       strerror(errno));
		return err;
	}
	err = handle_id(fd, ".", &id);
	snprintf(path, sizeof(path), "%s", names->h->root);
	if (!err)
		err = names_add(names, id, path);
	if (err) {
		close(fd);
		return err;
	}
	err = walk(names, fd, path, sizeof(path));
	qsort(names->v, names->nr, sizeof(*names->v), cmp_name);
	return err;
}

const char *moat_cgroup_names_lookup(const struct moat_cgroup_names *names,
				     __u64 id)
{
	struct cgroup_name key = { .id = id }, *found;

	if (!names->nr)
		return NULL;
	found = bsearch(&key, names->v, names->nr, sizeof(*names->v), cmp_name);
	return found ? found->path : NULL;
}

/* splitmix64's finalizer: every bit of the id moves about half of the sum's */
static __u64 mix(__u64 id)
{
	id = (id ^ (id >> 30)) * 0xbf58476d1ce4e5b9ULL;
	id = (id ^ (id >> 27)) * 0x94d049bb133111ebULL;
	return id ^ (id >> 31);
}

__u64 moat_cgroup_set_fingerprint(const void *base, size_t n, size_t size,
				  size_t off)
{
	__u64 fp = 0, id;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&id, (const char *)base + i * size + off, sizeof(id));
		fp += mix(id);
	}
	return fp;
}

__u64 moat_cgroup_names_fingerprint(const struct moat_cgroup_names *names)
{
	return moat_cgroup_set_fingerprint(names->v, names->nr, sizeof(*names->v),
					   offsetof(struct cgroup_name, id));
}

int moat_cgroup_names_for_each(const struct moat_cgroup_names *names,
			       moat_cgroup_names_fn fn, void *ctx)
{
	size_t i;
	int err;

	for (i = 0; i < names->nr; i++) {
		err = fn(names->v[i].id, names->v[i].path, ctx);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

long moat_read_tids(const char *path, __u32 **out)
{
	__u32 *v = NULL, *m;
	size_t n = 0, cap = 0;
	unsigned long tid;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%lu", &tid) == 1) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			m = realloc(v, cap * sizeof(*v));
			if (!m) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = m;
		}
		v[n++] = tid;
	}
	fclose(f);
	if (n)
		qsort(v, n, sizeof(*v), cmp_u32);
	*out = v;
	return n;
}
