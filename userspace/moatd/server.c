// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control socket (protocol in userspace/lib/ctl.h).  Every socket is
 * non-blocking and every connection has a deadline, a bounded request and
 * a bounded response, so no client, slow or hostile, can stall the
 * control loop or grow moatd's memory without bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "config.h"
#include "ctl.h"
#include "enforce.h"
#include "groups.h"
#include "log.h"
#include "server.h"
#include "settings.h"

#define MAX_CONNS		16
#define CONN_TIMEOUT_MS		2000
#define MAX_RESPONSE		(8 << 20)

struct conn {
	int fd;
	bool may_write;
	char in[MOAT_CTL_REQUEST_MAX];
	size_t inlen;
	char *out;		/* the response, once the request is in */
	size_t outlen, outoff;
	long long deadline_ms;
};

struct server {
	int lfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct conn conns[MAX_CONNS];
	unsigned int nr;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Refuse to take over a socket another moatd still listens on. */
static int claim_path(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, err = 0;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		pr_err("socket %s: exists and is not a socket", path);
		return -EEXIST;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		pr_err("socket %s: another moatd is listening on it", path);
		err = -EADDRINUSE;
	} else if (unlink(path)) {
		err = -errno;
	}
	close(fd);
	return err;
}

int server_open(struct server **out, const char *path, const char *group)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct server *s;
	struct group *gr = NULL;
	char dir[sizeof(sa.sun_path)], *slash;
	mode_t old;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		pr_err("socket %s: path too long", path);
		return -ENAMETOOLONG;
	}
	if (group) {
		gr = getgrnam(group);
		if (!gr) {
			pr_err("socket group %s: no such group", group);
			return -ENOENT;
		}
	}
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			err = -errno;
			pr_err("socket directory %s: %s", dir, strerror(errno));
			return err;
		}
	}
	err = claim_path(path);
	if (err)
		return err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	strcpy(s->path, path);
	strcpy(sa.sun_path, path);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0)
		goto err_errno;
	/* Never visible with wider permissions than it will have. */
	old = umask(0177);
	err = bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (err || listen(s->lfd, MAX_CONNS))
		goto err_errno;
	if (gr && (chown(path, -1, gr->gr_gid) || chmod(path, 0660)))
		goto err_errno;
	*out = s;
	return 0;

err_errno:
	err = -errno;
	pr_err("socket %s: %s", path, strerror(errno));
	if (s->lfd >= 0)
		close(s->lfd);
	free(s);
	return err;
}

static void conn_close(struct server *s, unsigned int i)
{
	close(s->conns[i].fd);
	free(s->conns[i].out);
	s->conns[i] = s->conns[--s->nr];
}

void server_close(struct server *s)
{
	if (!s)
		return;
	while (s->nr)
		conn_close(s, s->nr - 1);
	close(s->lfd);
	unlink(s->path);
	free(s);
}

void server_poll_fds(struct server *s, struct pollfd *pfd, unsigned int *n,
		     unsigned int max)
{
	unsigned int i;

	if (*n < max)
		pfd[(*n)++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
	for (i = 0; i < s->nr && *n < max; i++)
		pfd[(*n)++] = (struct pollfd){
			.fd = s->conns[i].fd,
			.events = s->conns[i].out ? POLLOUT : POLLIN,
		};
}

/*
 * The connection that has waited longest for its request, or -1 when
 * every one has its request in and is being answered.
 */
static int oldest_waiting(const struct server *s)
{
	unsigned int i;
	int old = -1;

	for (i = 0; i < s->nr; i++)
		if (!s->conns[i].out &&
		    (old < 0 || s->conns[i].deadline_ms < s->conns[old].deadline_ms))
			old = i;
	return old;
}

static void accept_all(struct server *s)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	while ((fd = accept4(s->lfd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct conn *c;

		/*
		 * Full: as an HTTP server does, the connection idle longest
		 * makes room, so that clients which connect and say nothing
		 * never keep the operator out; a new one waits only where
		 * every connection is being answered.
		 */
		if (s->nr == MAX_CONNS) {
			int old = oldest_waiting(s);

			if (old < 0) {
				close(fd);
				continue;
			}
			pr_debug("control socket: %d connections open: the one idle longest closed for a new one",
				 MAX_CONNS);
			conn_close(s, old);
		}
		c = &s->conns[s->nr++];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->deadline_ms = now_ms() + CONN_TIMEOUT_MS;
		/* Who may change things: root, or moatd's own user. */
		c->may_write = !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) &&
			       (cred.uid == 0 || cred.uid == geteuid());
	}
}

/* What a client sent may hold any byte but '\n' and NUL: print it tame. */
static void put_printable(FILE *out, const char *s)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++)
		fputc(*p < 0x20 || *p >= 0x7f ? '?' : *p, out);
}

/* One line: "error ENAME path: why". */
static void respond_error(FILE *out, int err, const char *path, const char *why)
{
	fprintf(out, "error %s ", moat_ctl_errname(-err));
	put_printable(out, path);
	fputs(*path ? ": " : "", out);
	put_printable(out, why);
	fputc('\n', out);
}

static const char *knob_error(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such knob";
	case -EPERM:
		return "read-only";
	case -ENOTDIR:
		return "not a directory";
	case -ENODATA:
		return "no data yet";
	}
	return strerror(-err);
}

struct ls_ctx {
	FILE *out;
};

static int ls_one(const char *name, bool dir, void *arg)
{
	fprintf(((struct ls_ctx *)arg)->out, "%s%s\n", name, dir ? "/" : "");
	return 0;
}

/*
 * Set @path; with @keep, also record it in the state file, and if that
 * fails put the old value back: a set either lasts or did not happen.
 */
static int set_and_keep(struct moatd *d, const char *path, const char *val,
			bool keep)
{
	const struct moat_knob *k = moat_knob_find(d->tree, path);
	char old[MOAT_KNOB_VALUE_MAX] = "";
	bool existed = k != NULL;
	int err;

	if (k && moat_knob_get(d->tree, path, old, sizeof(old)))
		old[0] = '\0';
	keep = keep && !(k && k->transient);
	err = settings_set(d, path, val);
	if (err || !keep)
		return err;
	err = settings_persist(d, path, val);
	if (err) {
		settings_set(d, path, existed ? old : "");
		return -EIO;
	}
	return 0;
}

void server_handle(struct moatd *d, const char *line, bool may_write,
		   FILE *out)
{
	char val[MOAT_KNOB_VALUE_MAX], bad[256];
	struct moat_ctl_req req;
	const char *why, *path, *rule;
	struct ls_ctx ls;
	char *body = NULL;
	size_t bodylen = 0;
	FILE *mem;
	int err;

	err = moat_ctl_parse(line, &req, &why);
	if (err) {
		respond_error(out, err, req.path, why);
		return;
	}
	path = req.path;
	if ((req.verb == MOAT_REQ_SET || req.verb == MOAT_REQ_RSET ||
	     req.verb == MOAT_REQ_RESTORE || req.verb == MOAT_REQ_RESET) && !may_write) {
		respond_error(out, -EACCES, path,
			      "permission denied: only root may change moatd");
		return;
	}

	/* The body first, so that an error replaces it whole. */
	mem = open_memstream(&body, &bodylen);
	if (!mem) {
		respond_error(out, -ENOMEM, path, "out of memory");
		return;
	}
	switch (req.verb) {
	case MOAT_REQ_GET:
		err = moat_knob_get(d->tree, path, val, sizeof(val));
		if (!err)
			fprintf(mem, "%s\n", val);
		break;
	case MOAT_REQ_SET:
	case MOAT_REQ_RSET:
		err = set_and_keep(d, path, req.value, req.verb == MOAT_REQ_SET);
		break;
	case MOAT_REQ_LS:
		ls.out = mem;
		err = moat_knob_ls(d->tree, path, ls_one, &ls);
		break;
	case MOAT_REQ_TREE:
	case MOAT_REQ_CONFIG:
		err = moat_config_print(mem, d->tree, path,
					req.verb == MOAT_REQ_CONFIG);
		break;
	case MOAT_REQ_RESET: {
		size_t dropped;

		err = settings_reset(d, &dropped);
		if (err) {
			fclose(mem);
			free(body);
			respond_error(out, err, "", "not reset: the config file without moatctl set's values does not apply, or the state file cannot be written: moatd's log says which");
			return;
		}
		fprintf(mem, "dropped = %zu\n", dropped);
		break;
	}
	case MOAT_REQ_RESTORE: {
		size_t before = enforce_journal_entries(d), left;
		char stale[PATH_MAX + 128];

		err = moatd_restore(d, "moatctl restore");
		left = enforce_journal_entries(d);
		fprintf(mem, "restored = %zu\nleft = %zu\n", before - left, left);
		if (err || enforce_journal_stale(d, stale, sizeof(stale))) {
			fclose(mem);
			free(body);
			if (err)
				respond_error(out, err, "", "some values could not be put back: moatd's log says which");
			else
				respond_error(out, -EIO, "", stale);
			return;
		}
		break;
	}
	}
	fclose(mem);
	rule = rules_name(path, NULL);
	if (err == -EIO) {
		respond_error(out, err, path, "cannot write the state file: not set");
	} else if (err == -EINVAL && req.value && rule && !moat_knob_find(d->tree, path) &&
		   rules_check(path, req.value, bad, sizeof(bad)) == -EINVAL) {
		/* a new rule: the words a rule there would have */
		char msg[MOAT_KNOB_VALUE_MAX + 640];

		snprintf(msg, sizeof(msg), "invalid value '%s': expected %s", req.value, bad);
		respond_error(out, err, path, msg);
	} else if (err == -EINVAL && req.value && moat_knob_find(d->tree, path)) {
		char msg[MOAT_KNOB_VALUE_MAX + 640], expects[256];

		moat_knob_expects(moat_knob_find(d->tree, path), expects,
				  sizeof(expects));
		/* the check again, pure, for what it found wrong */
		moat_knob_check_why(d->tree, path, req.value, bad, sizeof(bad));
		snprintf(msg, sizeof(msg), "invalid value '%s': expected %s%s%s",
			 req.value, expects, *bad ? ": " : "", bad);
		respond_error(out, err, path, msg);
	} else if (err) {
		respond_error(out, err, path, knob_error(err));
	} else {
		fprintf(out, "ok\n%.*s", (int)bodylen, body);
	}
	free(body);
}

/* A complete request is in: build the whole response. */
static void conn_respond(struct moatd *d, struct conn *c)
{
	FILE *mem = open_memstream(&c->out, &c->outlen);

	if (!mem)
		return;
	server_handle(d, c->in, c->may_write, mem);
	fclose(mem);
	if (c->outlen > MAX_RESPONSE) {
		free(c->out);
		c->out = strdup("error E2BIG response too large: ask for less\n");
		c->outlen = c->out ? strlen(c->out) : 0;
	}
}

/* Read what there is; false when the connection is done with. */
static bool conn_read(struct moatd *d, struct conn *c)
{
	char *nl;
	ssize_t n;

	n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen, 0);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return false;
	if (n > 0)
		c->inlen += n;
	c->in[c->inlen] = '\0';
	nl = memchr(c->in, '\n', c->inlen);
	if (nl) {
		*nl = '\0';
		if (strlen(c->in) != (size_t)(nl - c->in)) {
			c->out = strdup("error EINVAL NUL byte in request\n");
			c->outlen = c->out ? strlen(c->out) : 0;
		} else if (c->inlen > (size_t)(nl - c->in) + 1) {
			/* one request a connection: a second line is refused
			   with the first, never dropped after it is answered */
			c->out = strdup("error EINVAL a request is one line: more came after it\n");
			c->outlen = c->out ? strlen(c->out) : 0;
		} else {
			conn_respond(d, c);
		}
	} else if (c->inlen == sizeof(c->in) - 1) {
		c->out = strdup("error E2BIG request too long\n");
		c->outlen = c->out ? strlen(c->out) : 0;
	}
	return true;
}

/* Write what the socket takes; false when done or failed. */
static bool conn_write(struct conn *c)
{
	ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
			 MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	c->outoff += n;
	return c->outoff < c->outlen;
}

/*
 * Each connection's I/O first, and only then its deadline: a client is
 * dropped for its own slowness (its request not in CONN_TIMEOUT_MS after
 * it connected, or no byte of the response taken for as long), never
 * because moatd's cycle kept it from looking.
 */
void server_work(struct server *s, struct moatd *d, int *timeout_ms)
{
	unsigned int i;

	accept_all(s);
	for (i = s->nr; i-- > 0;) {
		struct conn *c = &s->conns[i];
		size_t sent = c->outoff;
		long long now, left;
		bool open;

		open = c->out ? conn_write(c) : conn_read(d, c);
		if (open && c->out && !c->outoff)
			open = conn_write(c);
		if (!open) {
			conn_close(s, i);
			continue;
		}
		now = now_ms();
		if (c->outoff != sent)
			c->deadline_ms = now + CONN_TIMEOUT_MS;
		left = c->deadline_ms - now;
		if (left <= 0) {
			pr_debug("control socket: a client too slow, dropped");
			conn_close(s, i);
			continue;
		}
		if (*timeout_ms < 0 || left < *timeout_ms)
			*timeout_ms = left;
	}
}
