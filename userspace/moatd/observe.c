// SPDX-License-Identifier: GPL-2.0-only
/*
 * Each group's signals, every period: the run-queue latency window from
 * rqlat, and from the cgroup's own files CPU usage, CFS throttling,
 * pressure (PSI) and memory.  Counters become windows by difference.
 *
 * The files are opened once per group and re-read with pread() at offset
 * 0, which makes kernfs generate them afresh: one syscall per file per
 * period.  Formats, from Documentation/admin-guide/cgroup-v2.rst and
 * accounting/psi.rst:
 *
 *   cpu.stat        "usage_usec N" ... "nr_throttled N" "throttled_usec N"
 *                   (v1: "nr_throttled N" "throttled_time <ns>")
 *   cpu.pressure    "some avg10=0.00 avg60=0.00 avg300=0.00 total=<us>"
 *   memory.current  bytes (v1: memory.usage_in_bytes)
 *   cpuacct.usage   ns (v1)
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cgroup.h"
#include "hist.h"
#include "log.h"
#include "moatd.h"

void observe_init(struct moatd_group *g)
{
	unsigned int i;

	for (i = 0; i < GF_NR; i++)
		g->fd[i] = -1;
	g->win = (struct group_window){
		.rqlat_p50_us = NAN, .rqlat_p99_us = NAN, .rqlat_p999_us = NAN,
		.rqlat_wp99_us = NAN,
		.cpu_usage = NAN, .throttled_periods = NAN, .throttled_ms = NAN,
		.cpu_pressure_pct = NAN, .memory_pressure_pct = NAN,
		.memory_bytes = NAN,
	};
	for (i = 0; i < GROUP_HISTORY; i++)
		g->history[i] = g->win;
}

void observe_close(struct moatd_group *g)
{
	unsigned int i;

	for (i = 0; i < GF_NR; i++) {
		if (g->fd[i] >= 0)
			close(g->fd[i]);
		g->fd[i] = -1;
	}
}

static int open_in(const struct moat_cg_hierarchy *h, const char *path,
		   const char *file)
{
	char dir[PATH_MAX], full[PATH_MAX + 64];

	if (!h || moat_cgroup_dir(h, path, dir, sizeof(dir)))
		return -1;
	snprintf(full, sizeof(full), "%s/%s", dir, file);
	return open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

/* (Re)open @g's files; a file this kernel or layout lacks stays -1. */
void observe_reset(struct moatd *d, struct moatd_group *g)
{
	bool v2 = d->cpu->v2;

	observe_close(g);
	memset(&g->last, 0, sizeof(g->last));
	g->fd[GF_CPU_STAT] = open_in(d->cpu, g->path, "cpu.stat");
	if (v2) {
		g->fd[GF_CPU_PRESSURE] = open_in(d->cpu, g->path, "cpu.pressure");
		g->fd[GF_MEMORY_PRESSURE] = open_in(d->cpu, g->path, "memory.pressure");
		g->fd[GF_MEMORY_USAGE] = open_in(d->cpu, g->path, "memory.current");
	} else {
		g->fd[GF_CPUACCT_USAGE] = open_in(d->cpuacct, g->path, "cpuacct.usage");
		g->fd[GF_MEMORY_USAGE] = open_in(d->memory, g->path,
						 "memory.usage_in_bytes");
	}
}

/* The whole file behind @fd, NUL-terminated, in @buf. */
static int reread(int fd, char *buf, size_t len)
{
	ssize_t n;

	if (fd < 0)
		return -ENODATA;
	n = pread(fd, buf, len - 1, 0);
	if (n < 0)
		return -errno;	/* ENODEV: the cgroup went away */
	buf[n] = '\0';
	return 0;
}

/* The number after "@key " (or "@key=") in @buf. */
static int key_u64(const char *buf, const char *key, __u64 *out)
{
	size_t klen = strlen(key);
	const char *p = buf;

	while ((p = strstr(p, key))) {
		if ((p == buf || p[-1] == '\n' || p[-1] == ' ') &&
		    (p[klen] == ' ' || p[klen] == '='))
			return sscanf(p + klen + 1, "%llu",
				      (unsigned long long *)out) == 1 ? 0 : -ENODATA;
		p += klen;
	}
	return -ENODATA;
}

static int read_number(int fd, __u64 *out)
{
	char buf[64];
	int err = reread(fd, buf, sizeof(buf));

	if (err)
		return err;
	return sscanf(buf, "%llu", (unsigned long long *)out) == 1 ? 0 : -ENODATA;
}

/* "some ... total=<us>" of a pressure file. */
static int read_psi_some(int fd, __u64 *us)
{
	char buf[256];
	int err = reread(fd, buf, sizeof(buf));

	if (err)
		return err;
	if (strncmp(buf, "some ", 5))
		return -ENODATA;
	return key_u64(buf, "total", us);	/* the first line's: some */
}

static double percentile_us(const struct moat_rqlat_hist *h, double q)
{
	double ns;

	return moat_hist_percentile(h, q, &ns) ? NAN : ns / 1000;
}

/* (now - before) * scale, or NAN when either is unknown. */
static double rate(bool ok, bool had, __u64 now, __u64 before, double scale)
{
	if (!ok || !had || now < before)
		return NAN;
	return (now - before) * scale;
}

/* Every cgroup's histogram, read once a cycle, sorted by id. */
struct hist_snap {
	__u64 id;
	struct moat_rqlat_hist h;
};

static struct hist_snap *snap;
static size_t snap_nr, snap_cap;

static int snap_add(__u64 id, const struct moat_rqlat_hist *h, void *ctx)
{
	if (snap_nr == snap_cap) {
		size_t cap = snap_cap ? snap_cap * 2 : 256;
		void *v = realloc(snap, cap * sizeof(*snap));

		if (!v)
			return -ENOMEM;
		snap = v;
		snap_cap = cap;
	}
	snap[snap_nr].id = id;
	snap[snap_nr++].h = *h;
	return 0;
}

static int cmp_snap(const void *a, const void *b)
{
	const struct hist_snap *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void snap_hist(__u64 id, struct moat_rqlat_hist *out)
{
	struct hist_snap key = { .id = id }, *found;

	found = snap_nr ? bsearch(&key, snap, snap_nr, sizeof(*snap), cmp_snap) :
			  NULL;
	if (found)
		*out = found->h;
	else
		memset(out, 0, sizeof(*out));
}

/* The file and the clock are read moments apart: a share over 100% is 100%. */
static double pct(double v)
{
	return v > 100 ? 100 : v;	/* NAN stays NAN */
}

static void observe_group(struct moatd *d, struct moatd_group *g, double secs)
{
	struct group_counters c = { .valid = true };
	struct group_window *w = &g->win;
	struct moat_rqlat_hist win;
	char buf[1024];
	bool cpu_ok, thr_ok, cpsi_ok, mpsi_ok;
	bool had = g->last.valid && secs > 0;
	double ns;
	__u64 v;

	if (d->ts)		/* no BPF: delay accounting */
		delay_read_group(d, g, &c.rqlat);
	else
		snap_hist(g->cgid, &c.rqlat);
	moat_hist_delta(&win, &c.rqlat, &g->last.rqlat);
	g->win_hist = win;
	w->rqlat_count = win.count;
	w->cpi = w->llc_mpki = NAN;	/* cpi.c's, after this */
	w->rqlat_p50_us = percentile_us(&win, 0.5);
	w->rqlat_p99_us = percentile_us(&win, 0.99);
	w->rqlat_p999_us = percentile_us(&win, 0.999);
	w->rqlat_wp99_us = moat_hist_time_percentile(&win, 0.99, &ns) ? NAN :
			   ns / 1000;

	/* cpu.stat: usage (v2) and throttling (v1 and v2). */
	thr_ok = cpu_ok = false;
	if (!reread(g->fd[GF_CPU_STAT], buf, sizeof(buf))) {
		if (d->cpu->v2) {
			cpu_ok = !key_u64(buf, "usage_usec", &v);
			c.cpu_ns = v * 1000;
			thr_ok = !key_u64(buf, "throttled_usec", &v);
			c.throttled_ns = v * 1000;
		} else {
			thr_ok = !key_u64(buf, "throttled_time", &c.throttled_ns);
		}
		thr_ok = thr_ok && !key_u64(buf, "nr_throttled", &c.nr_throttled);
	}
	if (!d->cpu->v2)
		cpu_ok = !read_number(g->fd[GF_CPUACCT_USAGE], &c.cpu_ns);
	cpsi_ok = !read_psi_some(g->fd[GF_CPU_PRESSURE], &c.cpu_some_us);
	mpsi_ok = !read_psi_some(g->fd[GF_MEMORY_PRESSURE], &c.memory_some_us);

	w->cpu_usage = rate(cpu_ok, had, c.cpu_ns, g->last.cpu_ns, 1e-9 / secs);
	w->throttled_periods = rate(thr_ok, had, c.nr_throttled,
				    g->last.nr_throttled, 1);
	w->throttled_ms = rate(thr_ok, had, c.throttled_ns, g->last.throttled_ns,
			       1e-6);
	w->cpu_pressure_pct = pct(rate(cpsi_ok, had, c.cpu_some_us,
				       g->last.cpu_some_us, 1e-4 / secs));
	w->memory_pressure_pct = pct(rate(mpsi_ok, had, c.memory_some_us,
					  g->last.memory_some_us, 1e-4 / secs));
	w->memory_bytes = read_number(g->fd[GF_MEMORY_USAGE], &v) ? NAN : v;

	g->last = c;
	g->history[g->history_next++ % GROUP_HISTORY] = *w;
}

void groups_observe(struct moatd *d)
{
	struct timespec now;
	double secs;
	size_t i;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &now);
	secs = d->last_observe.tv_sec ?
	       (now.tv_sec - d->last_observe.tv_sec) +
	       (now.tv_nsec - d->last_observe.tv_nsec) / 1e9 : 0;
	d->last_observe = now;

	/* A few batched syscalls for all groups' histograms, not one each. */
	snap_nr = 0;
	err = d->rqlat ? moat_rqlat_for_each_hist(d->rqlat, snap_add, NULL) : 0;
	if (err)
		pr_warn("read rqlat histograms: %s", strerror(-err));
	if (snap_nr)	/* (qsort() of NULL is undefined, even of nothing) */
		qsort(snap, snap_nr, sizeof(*snap), cmp_snap);
	for (i = 0; i < d->nr_groups; i++)
		observe_group(d, d->groups[i], secs);
}

/* Each window field as a knob: offset into struct group_window. */
static const struct {
	const char *name;
	size_t off;
	int decimals;
} fields[] = {
	{ "rqlat_p50_us", offsetof(struct group_window, rqlat_p50_us), 1 },
	{ "rqlat_p99_us", offsetof(struct group_window, rqlat_p99_us), 1 },
	{ "rqlat_p999_us", offsetof(struct group_window, rqlat_p999_us), 1 },
	{ "rqlat_wp99_us", offsetof(struct group_window, rqlat_wp99_us), 1 },
	{ "cpu_usage", offsetof(struct group_window, cpu_usage), 3 },
	{ "throttled_periods", offsetof(struct group_window, throttled_periods), 0 },
	{ "throttled_ms", offsetof(struct group_window, throttled_ms), 3 },
	{ "cpu_pressure_pct", offsetof(struct group_window, cpu_pressure_pct), 2 },
	{ "memory_pressure_pct", offsetof(struct group_window, memory_pressure_pct), 2 },
	{ "memory_bytes", offsetof(struct group_window, memory_bytes), 0 },
	{ "cpi", offsetof(struct group_window, cpi), 3 },
	{ "llc_mpki", offsetof(struct group_window, llc_mpki), 3 },
};

static int field_of(const struct moat_knob *k)
{
	const char *name = strrchr(k->path, '/') + 1;
	size_t i;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(name, fields[i].name))
			return i;
	return -1;
}

static int show_field(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;
	int f = field_of(k);
	double v;

	if (f < 0)
		return -ENOENT;
	v = *(const double *)((const char *)&g->win + fields[f].off);
	if (isnan(v))
		return -ENODATA;
	return snprintf(buf, len, "%.*f", fields[f].decimals, v) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int show_count(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	return snprintf(buf, len, "%llu", (unsigned long long)g->win.rqlat_count) >=
	       (int)len ? -EOVERFLOW : 0;
}

/* The p99 of the last GROUP_HISTORY windows, oldest first; "-": none. */
static int show_history(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;
	size_t n = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < GROUP_HISTORY && n < len; i++) {
		double v = g->history[(g->history_next + i) % GROUP_HISTORY].rqlat_p99_us;

		n += isnan(v) ? snprintf(buf + n, len - n, "%s-", i ? " " : "") :
				snprintf(buf + n, len - n, "%s%.1f", i ? " " : "", v);
	}
	return n >= len ? -EOVERFLOW : 0;
}

int observe_add_knobs(struct moatd *d, struct moatd_group *g)
{
	struct moat_knob k = { .type = MOAT_KNOB_SHOW, .owner = g };
	size_t i;
	int err;

	snprintf(k.path, sizeof(k.path), "groups/%s/rqlat_count", g->gid.id);
	k.show = show_count;
	err = moat_knob_add(d->tree, &k);
	snprintf(k.path, sizeof(k.path), "groups/%s/rqlat_p99_us_history", g->gid.id);
	k.show = show_history;
	if (!err)
		err = moat_knob_add(d->tree, &k);
	k.show = show_field;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]) && !err; i++) {
		snprintf(k.path, sizeof(k.path), "groups/%s/%s", g->gid.id,
			 fields[i].name);
		err = moat_knob_add(d->tree, &k);
	}
	return err;
}
