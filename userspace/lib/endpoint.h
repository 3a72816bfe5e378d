/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_ENDPOINT_H
#define MOAT_ENDPOINT_H

#include <stdbool.h>
#include <sys/socket.h>

/*
 * moatd's HTTP endpoint, the parts that take outside input: the address
 * it listens on (--listen, http/listen) and what a request's method and
 * path ask for.  Pure: no socket is opened here.
 */

enum moat_endpoint {
	MOAT_EP_METRICS,	/* GET /metrics */
	MOAT_EP_HINTS,		/* GET /hints */
	MOAT_EP_HEALTHZ,	/* GET /healthz */
	MOAT_EP_NOT_FOUND,	/* 404 */
	MOAT_EP_BAD_METHOD,	/* 405: moatd serves GET and HEAD only */
};

/**
 * moat_listen_parse() - parse "ADDR:PORT" ("[ADDR]:PORT" for IPv6, the
 * address numeric) into @ss.
 *
 * Return: 0, or -EINVAL with the reason in *@why.
 */
int moat_listen_parse(const char *s, struct sockaddr_storage *ss,
		      socklen_t *len, const char **why);

/** moat_endpoint_route() - what a request for @url with @method asks for. */
enum moat_endpoint moat_endpoint_route(const char *method, const char *url);

/**
 * moat_accepts_gzip() - whether a request's Accept-Encoding header (NULL:
 * none) accepts gzip, as Prometheus's scrapes do.
 */
bool moat_accepts_gzip(const char *accept_encoding);

#endif /* MOAT_ENDPOINT_H */
