// SPDX-License-Identifier: GPL-2.0-only
/* The client side of moatd's control protocol (see ctl.h). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include "ctl.h"

static const struct {
	int err;
	const char *name;
} errnames[] = {
	{ ENOENT, "ENOENT" }, { EPERM, "EPERM" }, { EINVAL, "EINVAL" },
	{ EACCES, "EACCES" }, { E2BIG, "E2BIG" }, { ENOTDIR, "ENOTDIR" },
	{ EEXIST, "EEXIST" }, { ENOMEM, "ENOMEM" }, { ENODATA, "ENODATA" },
	{ EBUSY, "EBUSY" }, { EIO, "EIO" },
};

const char *moat_ctl_errname(int err)
{
	size_t i;

	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].err == err)
			return errnames[i].name;
	return "EIO";
}

int moat_ctl_errno(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (!strcmp(errnames[i].name, name))
			return errnames[i].err;
	return EIO;
}

static const struct {
	const char *name;
	enum moat_ctl_verb verb;
	int path;		/* 1: needed, 0: optional, -1: none */
} verbs[] = {
	{ "get", MOAT_REQ_GET, 1 }, { "set", MOAT_REQ_SET, 1 },
	{ "rset", MOAT_REQ_RSET, 1 }, { "ls", MOAT_REQ_LS, 0 },
	{ "tree", MOAT_REQ_TREE, 0 }, { "config", MOAT_REQ_CONFIG, 0 },
	{ "restore", MOAT_REQ_RESTORE, -1 }, { "reset", MOAT_REQ_RESET, -1 },
};

int moat_ctl_parse(const char *line, struct moat_ctl_req *req,
		   const char **why)
{
	size_t n = strcspn(line, " "), i;
	const char *rest;

	memset(req, 0, sizeof(*req));
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strlen(verbs[i].name) == n && !strncmp(line, verbs[i].name, n))
			break;
	if (i == sizeof(verbs) / sizeof(verbs[0])) {
		*why = "unknown request";
		return -EINVAL;
	}
	req->verb = verbs[i].verb;
	rest = line + n + (line[n] == ' ');
	n = strcspn(rest, " ");
	if (n >= sizeof(req->path)) {
		*why = "path too long";
		return -EINVAL;
	}
	memcpy(req->path, rest, n);
	req->path[n] = '\0';
	rest += n;
	if (verbs[i].path > 0 && !n) {
		*why = req->verb == MOAT_REQ_GET ? "get takes a PATH" :
						  "set takes a PATH and a VALUE";
		return -EINVAL;
	}
	if (verbs[i].path < 0 && n) {
		*why = req->verb == MOAT_REQ_RESET ? "reset takes no arguments" :
						    "restore takes no arguments";
		return -EINVAL;
	}
	if (n && !moat_knob_path_valid(req->path)) {
		*why = "invalid path";
		return -EINVAL;
	}
	if (req->verb == MOAT_REQ_SET || req->verb == MOAT_REQ_RSET) {
		if (*rest != ' ') {
			*why = "set takes a PATH and a VALUE ('' for none)";
			return -EINVAL;
		}
		req->value = rest + 1;
	} else if (*rest) {
		*why = req->verb == MOAT_REQ_RESTORE ? "restore takes no arguments" :
		       req->verb == MOAT_REQ_RESET ? "reset takes no arguments" :
		       req->verb == MOAT_REQ_GET ? "get takes one PATH a request" :
		       "ls, tree and config take at most one PATH";
		return -EINVAL;
	}
	return 0;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * Wait for @fd to be readable, at most @timeout_ms (0: however long):
 * 0, or -ETIMEDOUT when moatd said nothing for that long.
 */
static int wait_readable(int fd, unsigned int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do
		n = poll(&p, 1, timeout_ms ? (int)timeout_ms : -1);
	while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : n < 0 ? -errno : -ETIMEDOUT;
}

int moat_ctl_request(const char *socket_path, const char *request, FILE *out,
		     char *msg, size_t msglen, unsigned int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	char buf[8192], status[MOAT_CTL_REQUEST_MAX];
	size_t slen = 0;
	bool body = false;
	ssize_t n;
	int fd, err;

	msg[0] = '\0';
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* connect() and send() wait at most that long (socket(7)) */
	if (timeout_ms && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv))) {
		err = -errno;
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		goto out;
	}
	err = send_all(fd, request, strlen(request));
	if (!err)
		err = send_all(fd, "\n", 1);
	if (err == -EAGAIN)
		err = -ETIMEDOUT;
	if (err)
		goto out;

	/* The status line, then the body straight to @out. */
	for (;;) {
		char *p = buf;

		err = wait_readable(fd, timeout_ms);
		if (err)
			goto out;
		n = recv(fd, buf, sizeof(buf), 0);
		if (!n)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (!body) {
			char *nl = memchr(buf, '\n', n);
			size_t take = nl ? (size_t)(nl - buf) : (size_t)n;

			if (slen + take >= sizeof(status)) {
				err = -EPROTO;
				goto out;
			}
			memcpy(status + slen, buf, take);
			slen += take;
			if (!nl)
				continue;
			status[slen] = '\0';
			body = true;
			p = nl + 1;
			n -= p - buf;
			if (strcmp(status, "ok"))
				break;
		}
		fwrite(p, 1, n, out);
	}
	if (!body) {
		err = -EPROTO;
	} else if (strcmp(status, "ok")) {
		char name[32] = "";
		int off = 0;

		if (sscanf(status, "error %31s %n", name, &off) < 1) {
			err = -EPROTO;
			goto out;
		}
		snprintf(msg, msglen, "%s", status + off);
		err = -moat_ctl_errno(name);
	}
out:
	close(fd);
	return err;
}
