/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_SERVER_H
#define MOATD_SERVER_H

/* The control socket (protocol in userspace/lib/ctl.h). */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include "moatd.h"

struct server;

int server_open(struct server **out, const char *path, const char *group);
void server_close(struct server *s);
/* Append the fds to poll to @pfd, which has room for @max, from *@n. */
void server_poll_fds(struct server *s, struct pollfd *pfd, unsigned int *n,
		     unsigned int max);
/* Serve what poll() reported; @timeout_ms: how soon to come back. */
void server_work(struct server *s, struct moatd *d, int *timeout_ms);
/* Handle one request line; the response goes to @out. */
void server_handle(struct moatd *d, const char *line, bool may_write,
		   FILE *out);

#endif /* MOATD_SERVER_H */
