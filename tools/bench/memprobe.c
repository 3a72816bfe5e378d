// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-memprobe: memory loads and a watch for the eviction benchmark
 * (tools/bench/evict.sh).
 *
 *   moat-memprobe touch MB SECONDS [PAUSE_MS [CHURN_MB]]
 *	An LC service's memory: MB of pages, then, until SECONDS are up (or
 *	SIGTERM), a pass that reads and writes a word of each page, takes
 *	CHURN_MB (default 4) of fresh pages and gives them back (a
 *	request's buffers), and PAUSE_MS (default 20) of rest.  A pass over
 *	pages reclaimed from it faults them back in, and a fresh page
 *	charged at its cgroups' limit reclaims first: the pass's time is
 *	the latency memory pressure costs the service.  At the end:
 *	"passes N p50_ms A p99_ms B max_ms C".
 *   moat-memprobe grow MB_PER_S
 *	A BE job allocating without bound: MB_PER_S/10 MiB every 100 ms,
 *	never freed, until killed.
 *   moat-memprobe watch CGROUP_DIR PCT SECONDS
 *	Every 100 ms, what the working set of the cgroup (memory.current
 *	less memory.stat's inactive_file) leaves under its memory.max, in
 *	%; at the end: "crossed T" (CLOCK_REALTIME seconds of the first
 *	reading under PCT) or "crossed never", and "min_pct M".
 *
 * Pages are filled with pseudo-random words: swap on zram stores a page
 * of one repeated word as a number, which would make swapping free.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#define PAGE	4096UL

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	stopping = 1;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static unsigned long long rnd = 0x9e3779b97f4a7c15ULL;

static unsigned long long next_rnd(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd;
}

/* @mb MiB of pages filled with pseudo-random words; NULL on failure. */
static unsigned long long *fill(size_t mb)
{
	size_t words = mb * (1UL << 20) / sizeof(unsigned long long), i;
	unsigned long long *m = mmap(NULL, mb << 20, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	for (i = 0; i < words; i++)
		m[i] = next_rnd();
	return m;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int touch(size_t mb, double secs, long pause_ms, size_t churn_mb)
{
	size_t pages = mb * (1UL << 20) / PAGE, p, n = 0, cap = 1024;
	unsigned long long *m = fill(mb);
	double *t = malloc(cap * sizeof(*t)), end = mono_ms() + secs * 1e3;

	if (!m || !t) {
		fprintf(stderr, "moat-memprobe: %zu MiB: %s\n", mb, strerror(errno));
		return 1;
	}
	while (!stopping && mono_ms() < end) {
		double start = mono_ms();

		for (p = 0; p < pages; p++)
			m[p * (PAGE / sizeof(*m))] += 1;
		if (churn_mb) {
			unsigned long long *c = fill(churn_mb);

			if (c)
				munmap(c, churn_mb << 20);
		}
		if (n == cap) {
			double *v = realloc(t, 2 * cap * sizeof(*t));

			if (!v)
				break;
			t = v;
			cap *= 2;
		}
		t[n++] = mono_ms() - start;
		nap_ms(pause_ms);
	}
	qsort(t, n, sizeof(*t), cmp_double);
	if (!n) {
		printf("passes 0\n");
		return 1;
	}
	printf("passes %zu p50_ms %.2f p99_ms %.2f max_ms %.2f\n", n, t[n / 2],
	       t[(size_t)ceil(n * 0.99) - 1], t[n - 1]);
	return 0;
}

static int grow(unsigned long mb_per_s)
{
	size_t chunk = mb_per_s / 10 ? mb_per_s / 10 : 1;

	while (!stopping) {
		if (!fill(chunk)) {
			fprintf(stderr, "moat-memprobe: grow: %s\n", strerror(errno));
			return 1;
		}
		nap_ms(100);
	}
	return 0;
}

/* The number of file @name in @dir (its first, or after "@key "); NAN. */
static double number(const char *dir, const char *name, const char *key)
{
	char path[4096], line[256];
	double v = NAN;
	size_t klen = key ? strlen(key) : 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return NAN;
	while (fgets(line, sizeof(line), f)) {
		if (key && (strncmp(line, key, klen) || line[klen] != ' '))
			continue;
		v = !strncmp(line + (key ? klen + 1 : 0), "max", 3) ? INFINITY :
		    strtod(line + (key ? klen + 1 : 0), NULL);
		break;
	}
	fclose(f);
	return v;
}

static int watch(const char *dir, double pct, double secs)
{
	double end = mono_ms() + secs * 1e3, crossed = 0, min = INFINITY;

	while (!stopping && mono_ms() < end) {
		double max = number(dir, "memory.max", NULL);
		double cur = number(dir, "memory.current", NULL);
		double inactive = number(dir, "memory.stat", "inactive_file");
		double avail;

		if (isfinite(max) && max > 0 && !isnan(cur)) {
			avail = (max - fmax(0, cur - (isnan(inactive) ? 0 : inactive))) / max * 100;
			min = fmin(min, avail);
			if (avail < pct && !crossed)
				crossed = real_s();
		}
		nap_ms(100);
	}
	if (crossed)
		printf("crossed %.3f min_pct %.1f\n", crossed, min);
	else
		printf("crossed never min_pct %.1f\n", min);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "touch"))
		return touch(strtoul(argv[2], NULL, 10), strtod(argv[3], NULL),
			     argc > 4 ? strtol(argv[4], NULL, 10) : 20,
			     argc > 5 ? strtoul(argv[5], NULL, 10) : 4);
	if (argc == 3 && !strcmp(argv[1], "grow"))
		return grow(strtoul(argv[2], NULL, 10));
	if (argc == 5 && !strcmp(argv[1], "watch"))
		return watch(argv[2], strtod(argv[3], NULL), strtod(argv[4], NULL));
	fprintf(stderr, "usage: moat-memprobe touch MB SECONDS [PAUSE_MS [CHURN_MB]] | grow MB_PER_S | watch CGROUP_DIR PCT SECONDS\n");
	return 2;
}
