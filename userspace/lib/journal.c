// SPDX-License-Identifier: GPL-2.0-only
/*
 * The journal of original values: its entries, its text (format and
 * guarantees in journal.h), and its file.  kfile.c has the writers that
 * record in it, restore.c what puts back from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "hostroot.h"
#include "journal.h"
#include "log.h"
#include "journal_priv.h"
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

int jnl_add_entry(struct moat_journal *j, enum moat_journal_kind kind,
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
void jnl_drop_entry(struct moat_journal *j, size_t i)
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

/* Whether @path is @prefix or below it ("" : everything). */
bool jnl_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return !n || (!strncmp(path, prefix, n) &&
		      (prefix[n - 1] == '/' || path[n] == '/' || !path[n]));
}

/* Absolute, and no ".." component that could climb out of a mount. */
bool jnl_path_normal(const char *path)
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
size_t jnl_task_of(const char *path, pid_t *tgid, pid_t *tid,
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

	return jnl_task_of(path, &tgid, &tid, &start) &&
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
		    !jnl_path_normal(root)) {
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
		if (!jnl_path_normal(path)) {
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
		err = jnl_add_entry(j, kind, path, v[0], v[1], v[2]);
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
int jnl_save(struct moat_journal *j)
{
	char *buf = NULL;
	size_t len = 0;
	int err;

	if (!j->file[0])
		return 0;
	err = moat_journal_encode(j, &buf, &len);
	if (!err)
		err = moat_state_save(j->file, buf, len);
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

int moat_journal_forget(struct moat_journal *j, const char *prefix)
{
	size_t i, before = j->n;

	for (i = j->n; i-- > 0;)
		if (jnl_under(j->e[i].path, prefix))
			jnl_drop_entry(j, i);
	return j->n != before ? jnl_save(j) : 0;
}
