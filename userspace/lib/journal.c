// SPDX-License-Identifier: GPL-2.0-only
/*
 * The journal of original values, and the one function that writes to
 * kernel files (format and guarantees in journal.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <zlib.h>
#include "cgroup.h"
#include "hostroot.h"
#include "journal.h"
#include "log.h"
#include "tasksched.h"

#define HEADER "moat-journal 2\n"
#define HEADER_V1 "moat-journal 1\n"

/* Append @s to @out (of @len) with bytes outside '!'..'~' and '%' as %XX. */
static int escape(char *out, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = *s;
		bool plain = c > ' ' && c < 0x7f && c != '%';

		if (n + (plain ? 1 : 3) >= len)
			return -ENAMETOOLONG;
		if (plain)
			out[n++] = c;
		else
			n += sprintf(out + n, "%%%02X", c);
	}
	out[n] = '\0';
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Undo escape() of the @n bytes at @s into @out (of @len). */
static int unescape(char *out, size_t len, const char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (o + 1 >= len)
			return -ENAMETOOLONG;
		if (c == '%') {
			int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < n ? hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0 || !(hi | lo))
				return -EINVAL;	/* short, not hex, or NUL */
			c = hi << 4 | lo;
			i += 2;
		} else if (c <= ' ' || c >= 0x7f) {
			return -EINVAL;
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int add_entry(struct moat_journal *j, enum moat_journal_kind kind,
		     const char *path, const char *orig, const char *last,
		     const char *pending)
{
	struct moat_journal_entry *e;

	if (strlen(path) >= sizeof(e->path) || strlen(orig) >= sizeof(e->orig) ||
	    strlen(last) >= sizeof(e->last) || strlen(pending) >= sizeof(e->pending))
		return -ENAMETOOLONG;
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 16;
		void *v = realloc(j->e, cap * sizeof(*j->e));

		if (!v)
			return -ENOMEM;
		j->e = v;
		j->cap = cap;
	}
	e = &j->e[j->n++];
	e->kind = kind;
	strcpy(e->path, path);
	strcpy(e->orig, orig);
	strcpy(e->last, last);
	strcpy(e->pending, pending);
	return 0;
}

/* (in order: a restore goes from the newest back, last in first out) */
static void drop_entry(struct moat_journal *j, size_t i)
{
	memmove(&j->e[i], &j->e[i + 1], (j->n - i - 1) * sizeof(j->e[0]));
	j->n--;
}

static const char *const kind_names[] = {
	[MOAT_J_FILE] = "file", [MOAT_J_SIDE] = "side",
	[MOAT_J_DIR] = "mkdir", [MOAT_J_MOUNT] = "mount",
	[MOAT_J_TASK] = "task",
};

int moat_journal_encode(const struct moat_journal *j, char **buf, size_t *len)
{
	char path[PATH_MAX * 3], v[3][MOAT_JOURNAL_VALUE_MAX * 3];
	FILE *f = open_memstream(buf, len);
	size_t i;
	int err = 0, k;

	if (!f)
		return -ENOMEM;
	fputs(HEADER, f);
	if (*moat_host_root()) {
		err = escape(path, sizeof(path), moat_host_root());
		if (!err)
			fprintf(f, "root %s\n", path);
	}
	for (i = 0; i < j->n && !err; i++) {
		const char *val[3] = { j->e[i].orig, j->e[i].last, j->e[i].pending };

		err = escape(path, sizeof(path), j->e[i].path);
		for (k = 0; k < 3 && !err; k++)
			err = escape(v[k], sizeof(v[k]), val[k]);
		if (!err)
			fprintf(f, "%s %s %s %s %s\n", kind_names[j->e[i].kind],
				path, *v[0] ? v[0] : "%00", *v[1] ? v[1] : "%00",
				*v[2] ? v[2] : "%00");
	}
	if (!err) {
		fflush(f);
		fprintf(f, "end %zu %08lx\n", j->n,
			crc32(0, (const Bytef *)*buf, *len));
	}
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}

/* Absolute, and no ".." component that could climb out of a mount. */
static bool path_normal(const char *path)
{
	size_t n = strlen(path);

	return path[0] == '/' && !strstr(path, "/../") &&
	       !(n >= 3 && !strcmp(path + n - 3, "/.."));
}

static void clear(struct moat_journal *j)
{
	j->n = 0;
}

/* One field of @n bytes at @s: "%00" is empty, else escaped text. */
static int field(char *out, size_t len, const char *s, size_t n)
{
	if (n == 3 && !memcmp(s, "%00", 3)) {
		out[0] = '\0';
		return 0;
	}
	return unescape(out, len, s, n);
}

/*
 * @path, kept under host root @root, as this moatd sees it: a journal a
 * pod kept under /host is read by the node's own moatd, and the other way.
 */
static int host_path(char *path, size_t len, const char *root)
{
	const char *rest = moat_path_below(path, root);
	char moved[PATH_MAX];

	if (!strcmp(root, moat_host_root()) || !rest)
		return 0;
	if (moat_host_path(moved, sizeof(moved), rest) || strlen(moved) >= len)
		return -ENAMETOOLONG;
	strcpy(path, moved);
	return 0;
}

/*
 * A task entry's thread, from its path "<dir>/task:<tgid>:<tid>:<start>":
 * the length of <dir>, or 0 when it is not one.
 */
static size_t task_of(const char *path, pid_t *tgid, pid_t *tid,
		      unsigned long long *start)
{
	const char *slash = strrchr(path, '/');
	int a, b;
	char tail;

	if (!slash || slash == path ||
	    sscanf(slash + 1, "task:%d:%d:%llu%c", &a, &b, start, &tail) != 3 ||
	    a <= 0 || b <= 0)
		return 0;
	*tgid = a;
	*tid = b;
	return slash - path;
}

static bool task_entry_valid(const char *path, char v[3][MOAT_JOURNAL_VALUE_MAX])
{
	unsigned long long start;
	struct moat_sched s;
	pid_t tgid, tid;

	return task_of(path, &tgid, &tid, &start) &&
	       !moat_sched_parse(v[0], &s) && !moat_sched_parse(v[1], &s) &&
	       (!v[2][0] || !moat_sched_parse(v[2], &s));
}

int moat_journal_decode(struct moat_journal *j, const char *buf, size_t len,
			char *why, size_t whylen)
{
	const char *p = buf, *end = buf + len;
	char root[PATH_MAX] = "";	/* the host root the journal was kept under */
	unsigned int line = 1, fields;
	int err = 0;

	clear(j);
	if (len >= strlen(HEADER) && !memcmp(buf, HEADER, strlen(HEADER))) {
		fields = 4;
	} else if (len >= strlen(HEADER_V1) &&
		   !memcmp(buf, HEADER_V1, strlen(HEADER_V1))) {
		fields = 2;
	} else {
		snprintf(why, whylen, "line 1: not a moat journal (expected '%.*s')",
			 (int)strlen(HEADER) - 1, HEADER);
		return -EBADMSG;
	}
	p += strlen(HEADER);
	line = 2;
	if (fields == 4 && end - p > 5 && !memcmp(p, "root ", 5)) {
		const char *nl = memchr(p, '\n', end - p);

		if (!nl || field(root, sizeof(root), p + 5, nl - p - 5) ||
		    !path_normal(root)) {
			snprintf(why, whylen, "line 2: bad root line");
			goto bad;
		}
		p = nl + 1;
		line++;
	}
	for (; p < end; line++) {
		const char *nl = memchr(p, '\n', end - p), *f[6];
		char path[PATH_MAX], v[3][MOAT_JOURNAL_VALUE_MAX];
		unsigned long crc, count;
		enum moat_journal_kind kind = MOAT_J_FILE;
		unsigned int k, n;
		size_t kl = 0;
		char tail;

		if (!nl) {
			snprintf(why, whylen, "line %u: no newline: truncated", line);
			goto bad;
		}
		/*
		 * memcmp() within the line, not strncmp(): @buf need not end
		 * in NUL, and a line shorter than the word may be the last
		 * bytes of it (a fuzzer found strncmp() read past them).
		 */
		if (nl - p >= 4 && !memcmp(p, "end ", 4)) {
			size_t ll = nl + 1 - p;
			char endl[64];

			/* a string for sscanf(): @buf need not end in NUL */
			if (ll < sizeof(endl)) {
				memcpy(endl, p, ll);
				endl[ll] = '\0';
			}
			if (ll >= sizeof(endl) ||
			    sscanf(endl + 4, "%lu %lx%c", &count, &crc, &tail) != 3 ||
			    tail != '\n') {
				snprintf(why, whylen, "line %u: bad end line", line);
				goto bad;
			}
			if (count != j->n) {
				snprintf(why, whylen, "line %u: %lu entries promised, %zu found",
					 line, count, j->n);
				goto bad;
			}
			if (crc != crc32(0, (const Bytef *)buf, p - buf)) {
				snprintf(why, whylen, "line %u: checksum mismatch: the file was changed or damaged",
					 line);
				goto bad;
			}
			if (nl + 1 != end) {
				snprintf(why, whylen, "line %u: text after the end line",
					 line + 1);
				goto bad;
			}
			return 0;
		}
		/* its kind and fields: f[k] starts field k, ends at f[k+1]-1 */
		n = 0;
		for (k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++) {
			size_t l = strlen(kind_names[k]);

			if ((k == MOAT_J_FILE || fields == 4) &&
			    (size_t)(nl - p) > l && !memcmp(p, kind_names[k], l) &&
			    p[l] == ' ') {
				kind = k;
				kl = l + 1;
			}
		}
		if (kl) {
			const char *q = p + kl;

			for (n = 0; n <= fields && q <= nl; n++) {
				f[n] = q;
				q = memchr(q, ' ', nl - q);
				q = q ? q + 1 : nl + 1;
			}
			f[n] = nl + 1;
		}
		memset(v, 0, sizeof(v));
		if (n != fields || field(path, sizeof(path), f[0], f[1] - f[0] - 1)) {
			snprintf(why, whylen, "line %u: bad entry", line);
			goto bad;
		}
		for (k = 1; k < n; k++)
			if (f[k + 1] - f[k] < 2 ||
			    field(v[k - 1], sizeof(v[k - 1]), f[k], f[k + 1] - f[k] - 1)) {
				snprintf(why, whylen, "line %u: bad entry", line);
				goto bad;
			}
		if (!path_normal(path)) {
			snprintf(why, whylen, "line %u: path '%s' is not absolute and normal",
				 line, path);
			goto bad;
		}
		if (kind == MOAT_J_TASK && !task_entry_valid(path, v)) {
			snprintf(why, whylen, "line %u: bad task entry", line);
			goto bad;
		}
		if (host_path(path, sizeof(path), root)) {
			snprintf(why, whylen, "line %u: path '%s' too long under host root '%s'",
				 line, path, moat_host_root());
			goto bad;
		}
		err = add_entry(j, kind, path, v[0], v[1], v[2]);
		if (err) {
			snprintf(why, whylen, "line %u: %s", line, strerror(-err));
			goto bad;
		}
		p = nl + 1;
	}
	snprintf(why, whylen, "line %u: no end line: truncated", line);
bad:
	clear(j);
	return err == -ENOMEM ? -ENOMEM : -EBADMSG;
}

int moat_file_replace(const char *file, const char *buf, size_t len)
{
	char tmp[PATH_MAX + 8], dir[PATH_MAX];
	size_t off = 0;
	int fd, dfd, err = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (off < len && !err) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0 && errno != EINTR)
			err = -errno;
		else if (n > 0)
			off += n;
	}
	if (!err && fsync(fd))
		err = -errno;
	close(fd);
	if (!err && rename(tmp, file))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	snprintf(dir, sizeof(dir), "%s", file);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

/*
 * Replace the file with what @j holds.  A failure is said once per
 * error (each write would say it again), counted, and leaves @j stale
 * until a save succeeds.
 */
static int save(struct moat_journal *j)
{
	char *buf = NULL;
	size_t len = 0;
	int err;

	if (!j->file[0])
		return 0;
	err = moat_journal_encode(j, &buf, &len);
	if (!err)
		err = moat_file_replace(j->file, buf, len);
	free(buf);
	if (!err) {
		if (j->stale)
			pr_info("journal %s: saved again", j->file);
		j->stale = false;
		j->save_err = 0;
		return 0;
	}
	j->save_errors++;
	if (!j->stale || j->save_err != err)
		pr_err("journal %s: save: %s: moatd changes nothing it could not put back after a crash until it can save again",
		       j->file, strerror(-err));
	j->stale = true;
	j->save_err = err;
	return err;
}

int moat_journal_open(const char *file, struct moat_journal **out)
{
	struct moat_journal *j = calloc(1, sizeof(*j));
	char why[PATH_MAX + 128];
	char *buf = NULL;
	size_t len = 0;
	FILE *f, *mem;
	int c, err = 0;

	if (!j)
		return -ENOMEM;
	if (strlen(file) >= sizeof(j->file)) {
		free(j);
		return -ENAMETOOLONG;
	}
	strcpy(j->file, file);
	f = *file ? fopen(file, "re") : NULL;
	if (!f) {
		if (*file && errno != ENOENT) {
			err = -errno;
			pr_err("journal %s: %s", file, strerror(errno));
			free(j);
			return err;
		}
		*out = j;
		return 0;
	}
	mem = open_memstream(&buf, &len);
	while (mem && (c = getc(f)) != EOF)
		putc(c, mem);
	if (ferror(f))
		err = -EIO;
	fclose(f);
	if (!mem || fclose(mem))
		err = -ENOMEM;
	if (!err)
		err = moat_journal_decode(j, buf, len, why, sizeof(why));
	free(buf);
	if (err == -EBADMSG)
		pr_err("journal %s: %s", file, why);
	else if (err)
		pr_err("journal %s: %s", file, strerror(-err));
	if (err) {
		moat_journal_free(j);
		return err;
	}
	*out = j;
	return 0;
}

void moat_journal_free(struct moat_journal *j)
{
	if (!j)
		return;
	free(j->e);
	free(j);
}

struct moat_journal_entry *moat_journal_find(struct moat_journal *j,
					     const char *path)
{
	size_t i;

	for (i = 0; i < j->n; i++)
		if (!strcmp(j->e[i].path, path))
			return &j->e[i];
	return NULL;
}

/*
 * The sysctls moat may change (taskstats.c), by path on the host: a journal is a file
 * in the state directory, and one that names another file must not make
 * moatd write it.
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

int moat_kfile_read(const char *path, char *buf, size_t len)
{
	int fd = open_kfile(path, O_RDONLY);
	ssize_t n;

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

static int put(const char *path, const char *value)
{
	int fd = open_kfile(path, O_WRONLY);
	size_t len = strlen(value);
	ssize_t n;

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
static bool allowed_dir(const struct moat_journal *j, const char *path)
{
	char parent[PATH_MAX];
	struct statfs sf;
	size_t i;

	if (!path_normal(path))
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

	if (!allowed_dir(j, path))
		return -EXDEV;
	if (!access(path, F_OK))
		return -EEXIST;		/* someone else's: not recorded */
	err = add_entry(j, MOAT_J_DIR, path, "", "", "");
	if (!err)
		err = save(j);
	if (err) {
		if (moat_journal_find(j, path))
			drop_entry(j, j->n - 1);
		return err;		/* no record, no mkdir */
	}
	if (!mkdir(path, 0755))
		return 0;
	err = -errno;
	drop_entry(j, j->n - 1);	/* EEXIST too: not ours to remove */
	save(j);
	return err;
}

int moat_kdir_remove(struct moat_journal *j, const char *path)
{
	struct moat_journal_entry *e = moat_journal_find(j, path);

	if (!e || e->kind != MOAT_J_DIR)
		return -ENOENT;
	if (rmdir(path) && errno != ENOENT)
		return -errno;
	drop_entry(j, e - j->e);
	save(j);
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

	if (j && (!path_normal(path) || !in_made_dir(j, path)))
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

	if (!path_normal(target))
		return -EINVAL;
	err = add_entry(j, MOAT_J_MOUNT, target, fstype, "", "");
	if (!err)
		err = save(j);
	if (!err && mount(fstype, target, fstype, 0, NULL))
		err = -errno;
	if (err && moat_journal_find(j, target)) {
		drop_entry(j, j->n - 1);
		save(j);
	}
	return err;
}

static bool vanished(int err)
{
	return err == -ENOENT || err == -ENODEV;
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
	int err = add_entry(j, kind, path, orig, cur, "");

	if (!err)
		err = save(j);
	if (err) {
		if (moat_journal_find(j, path))
			drop_entry(j, j->n - 1);
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
	return save(j);
}

int moat_kfile_write(struct moat_journal *j, const char *path,
		     const char *value)
{
	struct moat_journal_entry *e = moat_journal_find(j, path);
	char cur[MOAT_JOURNAL_VALUE_MAX];
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
	err = save(j);
	if (err) {
		e->pending[0] = '\0';
		return err;
	}
	err = put(path, value);
	if (!err)
		err = moat_kfile_read(path, e->last, sizeof(e->last));
	if (!err) {
		/* read back as written: the saved <pending> names it */
		if (strcmp(e->last, e->pending))
			save(j);
		return 0;
	}
	e->pending[0] = '\0';
fail:
	if (vanished(err) && e) {
		drop_entry(j, e - j->e);
		save(j);
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
	return err ? err : save(j);
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
static const struct moat_journal_entry *
inherited_from(const struct moat_journal_entry *e, size_t n, const char *dir,
	       const struct moat_task *t, const struct moat_sched *cur)
{
	size_t i, dl = strlen(dir);

	for (i = 0; i < n; i++) {
		unsigned long long start;
		struct moat_sched last;
		pid_t tgid, tid;

		if (e[i].kind != MOAT_J_TASK ||
		    task_of(e[i].path, &tgid, &tid, &start) != dl ||
		    strncmp(e[i].path, dir, dl) || tid == t->tid ||
		    (tgid != t->tgid && tgid != t->ppid) ||
		    moat_sched_parse(e[i].last, &last) || !same_lever(&last, cur))
			continue;
		return &e[i];
	}
	return NULL;
}

bool moat_ktask_inherited(const struct moat_journal *j, const char *dir,
			  const struct moat_task *t, const struct moat_sched *cur,
			  struct moat_sched *orig)
{
	const struct moat_journal_entry *e = inherited_from(j->e, j->n, dir, t, cur);

	if (!e || moat_sched_parse(e->orig, orig))
		return false;
	orig->nice = cur->nice;
	return true;
}

/* Whether @cur is @e's original, moat's last value or the one pending. */
static bool task_moats(const struct moat_journal_entry *e,
		       const struct moat_sched *cur)
{
	const char *v[] = { e->orig, e->last, e->pending };
	struct moat_sched s;
	size_t i;

	for (i = 0; i < 3; i++)
		if (v[i][0] && !moat_sched_parse(v[i], &s) && moat_sched_equal(&s, cur))
			return true;
	return false;
}

int moat_ktask_write(struct moat_journal *j, const char *dir,
		     const struct moat_task *t, const struct moat_sched *want,
		     const struct moat_sched *orig)
{
	char path[PATH_MAX], now[MOAT_JOURNAL_VALUE_MAX], o[MOAT_JOURNAL_VALUE_MAX];
	struct moat_journal_entry *e;
	struct moat_sched cur;
	int err;

	err = task_path(path, sizeof(path), dir, t);
	if (err)
		return err;
	e = moat_journal_find(j, path);
	err = moat_sched_get(t->tid, &cur);
	if (err)
		goto fail;
	moat_sched_format(now, sizeof(now), &cur);
	if (!e) {
		moat_sched_format(o, sizeof(o), orig ? orig : &cur);
		err = record(j, MOAT_J_TASK, path, o, now, &e);
		if (err)
			return err;	/* no record, no change */
	} else if (!task_moats(e, &cur)) {
		pr_info("thread %d (process %d): scheduling changed by someone else to %s: that is now the value to restore",
			(int)t->tid, (int)t->tgid, now);
		err = adopt(j, e, now);
		if (err)
			return err;
	}
	strcpy(e->last, now);
	if (moat_sched_equal(&cur, want))
		return 0;
	moat_sched_format(e->pending, sizeof(e->pending), want);
	err = save(j);
	if (err) {
		e->pending[0] = '\0';
		return err;
	}
	err = moat_sched_set(t->tid, want);
	if (!err)
		err = moat_sched_get(t->tid, &cur);
	if (!err) {
		moat_sched_format(e->last, sizeof(e->last), &cur);
		if (strcmp(e->last, e->pending))
			save(j);
		return 0;
	}
	e->pending[0] = '\0';
fail:
	if (err == -ESRCH)
		err = -ENOENT;
	if (err == -ENOENT && e) {
		drop_entry(j, e - j->e);
		save(j);
	}
	return err;
}

/* Put back the thread of task entry @e: 0, or -errno (gone: -ENOENT). */
static int restore_task(const struct moat_journal_entry *e)
{
	struct moat_sched cur, orig;
	unsigned long long start;
	struct moat_task t;
	pid_t tgid, tid;
	char now[MOAT_JOURNAL_VALUE_MAX];
	int err;

	if (!task_of(e->path, &tgid, &tid, &start) || moat_sched_parse(e->orig, &orig))
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
	if (!task_moats(e, &cur)) {
		pr_info("thread %d (process %d): scheduling changed since moatd set it (%s), to %s: left as it is",
			(int)tid, (int)tgid, e->last, now);
		return 0;
	}
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
		from = inherited_from(e, n, top, &t, &cur);
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

		dl = task_of(e[i].path, &tgid, &tid, &start);
		for (k = 0; k < i; k++)		/* each directory once */
			if (task_of(e[k].path, &tgid, &tid, &start) == dl &&
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

static bool under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return !n || (!strncmp(path, prefix, n) &&
		      (prefix[n - 1] == '/' || path[n] == '/' || !path[n]));
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
		if (!allowed_dir(j, e->path))
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
			err = put(e->path, e->orig);
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
		return under(e->path, sel->prefix);
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
		if (vanished(err)) {
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
		drop_entry(j, i);
	}
	if (j->n != before)
		save(j);
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
		    !under(e->path, prefix) || !e->last[0])
			continue;	/* version 1's entries have no <last> */
		err = moat_kfile_read(e->path, cur, sizeof(cur));
		if (vanished(err)) {
			drop_entry(j, i);
			continue;
		}
		if (err || !strcmp(cur, e->last) || !strcmp(cur, e->pending))
			continue;
		n++;
		if (fn)
			fn(ctx, e, cur);
		drop_entry(j, i);
	}
	if (j->n != before) {
		err = save(j);
		if (err)
			return err;
	}
	return n;
}

int moat_journal_forget(struct moat_journal *j, const char *prefix)
{
	size_t i, before = j->n;

	for (i = j->n; i-- > 0;)
		if (under(j->e[i].path, prefix))
			drop_entry(j, i);
	return j->n != before ? save(j) : 0;
}

const char *moat_kfile_strerror(int err)
{
	if (err == -EXDEV)
		return "not a file on a cgroup file system (nor a sysctl moat may set)";
	return strerror(-err);
}
