// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-floor-attach: attach the empty programs of tools/bench/floor.bpf.c until
 * SIGTERM or SIGINT, so that tools/bench/overhead.sh can measure the
 * floor under moat's own programs in the same run.  A benchmark tool,
 * not installed.  Prints "attached" on stderr once it is.
 */
#include <signal.h>
#include <stdio.h>
#include "floor.skel.h"

int main(void)
{
	struct floor *skel;
	sigset_t set;
	int sig, err;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	skel = floor__open_and_load();
	if (!skel) {
		perror("moat-floor-attach: load tools/bench/floor.bpf.c");
		return 1;
	}
	err = floor__attach(skel);
	if (err) {
		fprintf(stderr, "moat-floor-attach: attach: %d\n", err);
		floor__destroy(skel);
		return 1;
	}
	fprintf(stderr, "attached\n");
	sigwait(&set, &sig);
	floor__destroy(skel);
	return 0;
}
