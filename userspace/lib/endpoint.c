// SPDX-License-Identifier: GPL-2.0-only
/* moatd's HTTP address and routes (see endpoint.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "endpoint.h"

int moat_listen_parse(const char *s, struct sockaddr_storage *ss,
		      socklen_t *len, const char **why)
{
	char host[INET6_ADDRSTRLEN + 2], *end;
	const char *colon;
	unsigned long port;
	size_t n;

	*why = "expected ADDR:PORT, e.g. 127.0.0.1:9590 or [::1]:9590";
	if (*s == '[') {
		colon = strstr(s, "]:");
		if (!colon)
			return -EINVAL;
		n = colon - s - 1;
		s++;
		colon++;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		n = colon - s;
	}
	if (!n || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || errno || port > 65535) {
		*why = "the port must be a number from 0 to 65535";
		return -EINVAL;
	}
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons(port);
		*len = sizeof(struct sockaddr_in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
		*len = sizeof(struct sockaddr_in6);
		return 0;
	}
	*why = "the address must be a numeric IPv4 or IPv6 address";
	return -EINVAL;
}

enum moat_endpoint moat_endpoint_route(const char *method, const char *url)
{
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MOAT_EP_BAD_METHOD;
	if (!strcmp(url, "/metrics"))
		return MOAT_EP_METRICS;
	if (!strcmp(url, "/hints"))
		return MOAT_EP_HINTS;
	if (!strcmp(url, "/healthz"))
		return MOAT_EP_HEALTHZ;
	return MOAT_EP_NOT_FOUND;
}

/*
 * RFC 9110 12.5.3: a list of codings, each with optional parameters, of
 * which a weight "q" of 0 refuses it.  Only "gzip" (and its alias
 * "x-gzip") is looked for; "*" does not count, so that a client that
 * named nothing gets the identity.
 */
bool moat_accepts_gzip(const char *accept_encoding)
{
	const char *p = accept_encoding, *q, *end;
	char w[8];
	size_t n;

	while (p && *p) {
		p += strspn(p, " \t,");
		n = strcspn(p, " \t;,");
		end = p + strcspn(p, ",");
		if ((n == 4 && !strncasecmp(p, "gzip", 4)) ||
		    (n == 6 && !strncasecmp(p, "x-gzip", 6))) {
			double weight = 1;

			/* its parameters: a weight of 0 (0, 0.0, 0.000) refuses it */
			for (q = p + n; q < end && (q = memchr(q, ';', (size_t)(end - q)));) {
				q++;
				q += strspn(q, " \t");
				if ((*q == 'q' || *q == 'Q') && q[1] == '=') {
					n = strcspn(q + 2, " \t;,");
					snprintf(w, sizeof(w), "%.*s", (int)(n < 7 ? n : 7), q + 2);
					weight = strtod(w, NULL);
				}
			}
			if (weight > 0)
				return true;
		}
		p = end;
	}
	return false;
}
