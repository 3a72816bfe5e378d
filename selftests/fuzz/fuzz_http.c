// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP requests as any local process can send them to moatd: the raw
 * bytes go over a socket pair into libmicrohttpd, configured with
 * moatd's limits, whose handler routes them with moatd's own
 * moat_endpoint_route().  Every request gets a response or a closed
 * connection, never a crash; the first input byte chooses whether the
 * listen-address parser gets the rest instead.
 */
#include <errno.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "endpoint.h"
#include "fuzz.h"

static unsigned int routed[MOAT_EP_BAD_METHOD + 1];

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	static int first;
	static const unsigned int status[] = {
		[MOAT_EP_METRICS] = 200, [MOAT_EP_HINTS] = 200,
		[MOAT_EP_HEALTHZ] = 200, [MOAT_EP_NOT_FOUND] = 404,
		[MOAT_EP_BAD_METHOD] = 405,
	};
	enum moat_endpoint e = moat_endpoint_route(method, url);
	struct MHD_Response *r;
	enum MHD_Result ret;

	fuzz_check(e <= MOAT_EP_BAD_METHOD);
	/* the header as the handler gets it, whatever it holds */
	moat_accepts_gzip(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_ACCEPT_ENCODING));
	if (!*state && e != MOAT_EP_BAD_METHOD) {
		*state = &first;
		return MHD_YES;
	}
	*upload_len = 0;
	routed[e]++;
	r = MHD_create_response_from_buffer(3, (void *)"ok\n", MHD_RESPMEM_PERSISTENT);
	fuzz_check(r);
	ret = MHD_queue_response(c, status[e], r);
	MHD_destroy_response(r);
	return ret;
}

static struct MHD_Daemon *daemon_once(void)
{
	static struct MHD_Daemon *mhd;

	if (!mhd)
		mhd = MHD_start_daemon(MHD_USE_NO_LISTEN_SOCKET | MHD_USE_EPOLL,
				       0, NULL, NULL, handle, NULL,
				       MHD_OPTION_CONNECTION_LIMIT, 32,
				       MHD_OPTION_CONNECTION_TIMEOUT, 10,
				       MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				       (size_t)(32 * 1024), MHD_OPTION_END);
	fuzz_check(mhd);
	return mhd;
}

static void listen_address(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size, 256);
	struct sockaddr_storage ss;
	const char *why = NULL;
	socklen_t len;

	if (!s)
		return;
	if (moat_listen_parse(s, &ss, &len, &why))
		fuzz_check(why && *why);
	else
		fuzz_check(ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct MHD_Daemon *mhd = daemon_once();
	char reply[4096];
	int sv[2], i;
	ssize_t n;

	if (size && data[0] == 'L') {
		listen_address(data + 1, size - 1);
		return 0;
	}
	if (size > 64 * 1024)
		return 0;
	fuzz_check(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
	if (size)
		fuzz_check(write(sv[0], data, size) == (ssize_t)size);
	shutdown(sv[0], SHUT_WR);
	fuzz_check(MHD_add_connection(mhd, sv[1], NULL, 0) == MHD_YES);
	/* Until libmicrohttpd answers and closes, or gives up. */
	for (i = 0; i < 100; i++) {
		fuzz_check(MHD_run(mhd) == MHD_YES);
		n = read(sv[0], reply, sizeof(reply));
		if (n == 0)
			break;
		if (n < 0 && errno == EAGAIN)
			poll(NULL, 0, 0);
	}
	close(sv[0]);
	for (i = 0; i < 4; i++)	/* let it see the close */
		MHD_run(mhd);
	return 0;
}
