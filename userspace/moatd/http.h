/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_HTTP_H
#define MOATD_HTTP_H

/*
 * The http module: /metrics, /hints and /healthz over HTTP, served from
 * moatd's loop; its knob http/listen says where.
 */
#include <poll.h>
#include "moatd.h"

extern const struct moatd_module http_module;

/* Append the fds to poll to @pfd; lower *@timeout_ms to what it needs. */
void http_poll_fds(struct moatd *d, struct pollfd *pfd, unsigned int *n,
		   unsigned int max, int *timeout_ms);
/* Serve what there is to serve; move to a new http/listen first. */
void http_work(struct moatd *d);

#endif /* MOATD_HTTP_H */
