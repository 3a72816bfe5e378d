/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CTL_H
#define MOAT_CTL_H

#include <stdio.h>
#include "knob.h"

/*
 * The control protocol between moatd and moatctl, on a Unix stream
 * socket.  One request per connection:
 *
 *   request:  one line, at most MOAT_CTL_REQUEST_MAX bytes with its '\n':
 *               get PATH | set PATH VALUE | rset PATH VALUE | ls [PATH] |
 *               tree [PATH] | config [PATH] | restore | reset
 *             (set persists in moatd's state file; rset, the runtime
 *             set, does not)
 *             (VALUE is the rest of the line and may hold spaces)
 *   response: "ok\n" and the body, or "error ENAME message\n";
 *             then moatd closes the connection.
 *             get: the value; ls: one name a line, "/" after
 *             directories; tree: "path = value" lines; config: the
 *             same for the knobs a config file sets; set: nothing;
 *             restore (put back every value moatd changed):
 *             "restored = N" and "left = N" (values it could not);
 *             reset (drop every value set kept in the state file, and
 *             load the settings without them): "dropped = N".
 */

#define MOAT_CTL_SOCKET		"/run/moat/moatd.sock"
#define MOAT_CTL_REQUEST_MAX	4096

enum moat_ctl_verb {
	MOAT_REQ_GET,
	MOAT_REQ_SET,		/* and keep it in the state file */
	MOAT_REQ_RSET,		/* for this run only */
	MOAT_REQ_LS,
	MOAT_REQ_TREE,
	MOAT_REQ_CONFIG,
	MOAT_REQ_RESTORE,
	MOAT_REQ_RESET,
};

/* A request line, parsed; it points into the line it came from. */
struct moat_ctl_req {
	enum moat_ctl_verb verb;
	char path[MOAT_KNOB_PATH_MAX];	/* "" where the verb allows none */
	const char *value;		/* set, rset: the rest of the line */
};

/**
 * moat_ctl_parse() - parse the request @line (its '\n' cut) into @req:
 * a known verb, a valid path where it takes one, and nothing more than
 * its arguments ("get a b" is refused, not read as "get a").
 *
 * Return: 0, or -EINVAL with what was wrong in *@why.
 */
int moat_ctl_parse(const char *line, struct moat_ctl_req *req,
		   const char **why);

/**
 * moat_ctl_request() - send @request (without '\n') to the moatd at
 * @socket_path and copy the body of an "ok" response to @out.  moatd
 * may be silent for at most @timeout_ms at a time (0: however long): in
 * connect(), in send() and between two reads of its answer.
 *
 * Return: 0; -errno of the connection (moatd not reachable); -ETIMEDOUT
 * where moatd said nothing for that long; or, for an "error" response,
 * the error as -errno with moatd's message in @msg.
 */
int moat_ctl_request(const char *socket_path, const char *request, FILE *out,
		     char *msg, size_t msglen, unsigned int timeout_ms);

/* "ENOENT" for ENOENT, and back; unknown names are EIO. */
const char *moat_ctl_errname(int err);
int moat_ctl_errno(const char *name);

#endif /* MOAT_CTL_H */
