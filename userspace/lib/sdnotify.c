// SPDX-License-Identifier: GPL-2.0-only
/* sd_notify(3)'s protocol, for Type=notify units (sdnotify.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sdnotify.h"

int moat_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len, slen = strlen(state);
	ssize_t n;
	int fd;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	/* a path or an abstract name; systemd's vsock: form is not ours */
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EAFNOSUPPORT;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, state, slen, MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   offsetof(struct sockaddr_un, sun_path) + len);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	return (size_t)n == slen ? 1 : -EMSGSIZE;
}

unsigned long long moat_sd_watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (!usec || !*usec)
		return 0;
	if (pid && *pid && strtol(pid, NULL, 10) != getpid())
		return 0;
	errno = 0;
	v = strtoull(usec, &end, 10);
	return errno || *end ? 0 : v;
}
