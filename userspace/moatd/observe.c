// SPDX-License-Identifier: GPL-2.0-only
/*
 * Each group's signals from its cgroup's own files, a source: CPU usage,
 * CFS throttling, pressure (PSI) and memory, into the group's sample
 * (cumulative) and window (by difference).  The run-queue waits are the
 * delay module's.
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
 *
 * Where the kernel has a cgroup iterator (v6.1), bpf/cgstat.bpf.c reads
 * cpu.stat's counters and (v2) memory.current of every group in one
 * read() a period (lib/cgstat_bpf.c): the same numbers, without a
 * pread() and a parse per file per group.  The pressure files (v2) are
 * still read per group, but only where the walk says their totals may
 * have moved since the last read (pressure()); on v1, cpuacct.usage and
 * memory.usage_in_bytes are read per group (cgstat.bpf.c says why).
 * observe/source: auto (the iterator where it loads) or files.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cgroup.h"
#include "cgstat_bpf.h"
#include "log.h"
#include "observe.h"

/* The cgroup files a group is observed through, kept open. */
enum group_file {
	GF_CPU_STAT,		/* v2: usage and throttling; v1: throttling */
	GF_CPUACCT_USAGE,	/* v1 */
	GF_CPU_PRESSURE,	/* v2 */
	GF_MEMORY_PRESSURE,	/* v2 */
	GF_MEMORY_USAGE,	/* v2 memory.current, v1 memory.usage_in_bytes */
	GF_NR,
};

/*
 * A cumulative counter at its last read, and whether that read worked:
 * each its own, for a window is the growth since the last read of that
 * counter, and one not read this period (a failed iterator read, a file
 * gone for a moment) has no window now and none the next period either:
 * its last good value is a period or more older than the others'.
 */
/* A counter's last read, and when it was read (CLOCK_MONOTONIC, s). */
struct counter {
	__u64 v;
	double at;
	bool valid;
};

struct counters {
	struct counter cpu_ns, nr_throttled, throttled_ns;
	struct counter cpu_some_us, memory_some_us;
};

enum { SRC_AUTO, SRC_FILES };
static const char *const sources[] = { "auto", "files", NULL };

struct observe {
	struct moatd *d;
	unsigned int source;		/* observe/source */
	struct moat_cgstat_prog *prog;	/* NULL: the files */
	struct moat_cgstat_walk *walk;	/* of the scan root */
	double walk_at;			/* when the walk was read */
	unsigned int replaced;		/* 1 << GF_*: files the walk stands in
					   for, not opened */
	bool opened;			/* after the start's open */
	bool walked;			/* this period's read worked */
	bool failing;			/* said that reads fail */
	unsigned long long pressure_reads;	/* observe/pressure_reads */
};

/* Its state of a group. */
struct observe_group {
	int fd[GF_NR];		/* -1: not available; 0 (never ours): not open */
	struct counters last;
	/*
	 * Per pressure file (cpu, memory): the walk's sum before its last
	 * read (cgstat.bpf.c: "Pressure"), where that read gave a total.
	 */
	__u64 psi_sig[2];
	bool psi_known[2];
};

static int open_in(const struct moat_cg_hierarchy *h, const char *path,
		   const char *file)
{
	char dir[PATH_MAX], full[PATH_MAX + 64];

	if (!h || moat_cgroup_dir(h, path, dir, sizeof(dir)))
		return -1;
	snprintf(full, sizeof(full), "%s/%s", dir, file);
	return open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

static void close_files(struct observe_group *og)
{
	unsigned int i;

	for (i = 0; i < GF_NR; i++) {
		if (og->fd[i] > 0)
			close(og->fd[i]);
		og->fd[i] = -1;
	}
}

static struct observe *O(const struct moatd *d)
{
	return moatd_mod(d, MOD_OBSERVE);
}

/*
 * (Re)open @g's files, but those the cgroup iterator stands in for (at
 * 500 groups on v2 they were 2000 fds); a file this kernel or layout
 * lacks stays -1.
 */
static void open_files(struct moatd *d, struct moatd_group *g)
{
	struct observe_group *og = group_mod(g, MOD_OBSERVE);
	unsigned int replaced = O(d)->replaced;
	bool v2 = d->cpu->v2;

	close_files(og);
	memset(&og->last, 0, sizeof(og->last));
	og->psi_known[0] = og->psi_known[1] = false;
	if (!(replaced & 1u << GF_CPU_STAT))
		og->fd[GF_CPU_STAT] = open_in(d->cpu, g->path, "cpu.stat");
	if (v2) {
		og->fd[GF_CPU_PRESSURE] = open_in(d->cpu, g->path, "cpu.pressure");
		og->fd[GF_MEMORY_PRESSURE] = open_in(d->cpu, g->path, "memory.pressure");
		if (!(replaced & 1u << GF_MEMORY_USAGE))
			og->fd[GF_MEMORY_USAGE] = open_in(d->cpu, g->path, "memory.current");
	} else {
		og->fd[GF_CPUACCT_USAGE] = open_in(d->cpuacct, g->path, "cpuacct.usage");
		og->fd[GF_MEMORY_USAGE] = open_in(d->memory, g->path,
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

/*
 * The "some total=" of @g's cpu.pressure (@mem false) or memory.pressure,
 * in @us: read where this period's walk @r says it may have moved since
 * the last read, else the last read's (cgstat.bpf.c: "Pressure").  False
 * where not known.
 */
static bool pressure(struct observe *o, struct observe_group *og,
		     const struct moat_cgstat *r, bool mem, __u64 *us)
{
	int fd = og->fd[mem ? GF_MEMORY_PRESSURE : GF_CPU_PRESSURE];
	bool sums = r && (r->has & MOAT_CGSTAT_PSI);
	__u64 sig = !sums ? 0 : mem ? r->memory_psi_sig : r->cpu_psi_sig;
	__u32 stalling = mem ? MOAT_CGSTAT_MEMORY_STALLING : MOAT_CGSTAT_CPU_STALLING;
	bool ok;

	if (sums && og->psi_known[mem] && og->psi_sig[mem] == sig &&
	    !(r->has & stalling)) {
		*us = mem ? og->last.memory_some_us.v : og->last.cpu_some_us.v;
		return true;
	}
	if (fd >= 0)
		o->pressure_reads++;
	ok = !read_psi_some(fd, us);
	og->psi_known[mem] = ok && sums;
	og->psi_sig[mem] = sig;
	return ok;
}

/*
 * The counter read @now at @at (@ok: the read worked) over its last read:
 * (now - last) * @scale, divided by the seconds between the two reads
 * where @per_s, or NAN unless both reads worked; @last becomes this read.
 *
 * The seconds are those between the reads themselves, not the period's:
 * the period's clock is read before the other sources, and a stall
 * between it and these reads (a VM's ~100 ms) in one period but not the
 * next made a window's usage up to a third too high (a hog under a 0.1
 * CPU quota seen at 0.295).
 */
static double rate(struct counter *last, bool ok, __u64 now, double at,
		   double scale, bool per_s)
{
	double secs = at - last->at;
	double r = ok && last->valid && secs > 0 && now >= last->v ?
		   (now - last->v) * scale / (per_s ? secs : 1) : NAN;

	*last = (struct counter){ .v = now, .at = at, .valid = ok };
	return r;
}

/* The file and the clock are read moments apart: a share over 100% is 100%. */
static double pct(double v)
{
	return v > 100 ? 100 : v;	/* NAN stays NAN */
}

static void observe_group(struct moatd *d, struct moatd_group *g)
{
	struct observe_group *og = group_mod(g, MOD_OBSERVE);
	struct observe *o = O(d);
	const struct moat_cgstat *r = o->walked ?
		moat_cgstat_walk_find(o->walk, g->cgid) : NULL;
	struct group_sample *s = &g->sample;
	struct group_window *w = &g->win;
	struct counters *last = &og->last;
	bool cpu_ok, thr_ok, cpsi_ok, mpsi_ok, mem_ok;
	__u64 cpu_ns = 0, nr_thr = 0, thr_ns = 0, cpu_us = 0, mem_us = 0, v = 0;
	double cpu_at, psi_at;
	char buf[1024];

	/* cpu.stat: usage (v2) and throttling (v1 and v2). */
	thr_ok = cpu_ok = false;
	if (r && (r->has & MOAT_CGSTAT_THROTTLE) &&
	    (!d->cpu->v2 || (r->has & MOAT_CGSTAT_USAGE))) {
		cpu_ns = r->usage_ns / 1000 * 1000;	/* cpu.stat's usec */
		cpu_ok = d->cpu->v2;
		nr_thr = r->nr_throttled;
		thr_ns = d->cpu->v2 ? r->throttled_ns / 1000 * 1000 : r->throttled_ns;
		thr_ok = true;
	} else if (!reread(og->fd[GF_CPU_STAT], buf, sizeof(buf))) {
		if (d->cpu->v2) {
			cpu_ok = !key_u64(buf, "usage_usec", &v);
			cpu_ns = v * 1000;
			thr_ok = !key_u64(buf, "throttled_usec", &v);
			thr_ns = v * 1000;
		} else {
			thr_ok = !key_u64(buf, "throttled_time", &thr_ns);
		}
		thr_ok = thr_ok && !key_u64(buf, "nr_throttled", &nr_thr);
	}
	if (!d->cpu->v2)
		cpu_ok = !read_number(og->fd[GF_CPUACCT_USAGE], &cpu_ns);
	/* when they were read: the walk's, or just now (v1's cpuacct: now) */
	cpu_at = r && d->cpu->v2 && cpu_ok ? o->walk_at : moatd_mono_s();
	cpsi_ok = pressure(o, og, r, false, &cpu_us);
	mpsi_ok = pressure(o, og, r, true, &mem_us);
	psi_at = moatd_mono_s();

	s->cpu_s = cpu_ok ? cpu_ns / 1e9 : NAN;
	s->nr_throttled = thr_ok ? nr_thr : NAN;
	s->throttled_s = thr_ok ? thr_ns / 1e9 : NAN;
	s->cpu_stall_s = cpsi_ok ? cpu_us / 1e6 : NAN;
	s->memory_stall_s = mpsi_ok ? mem_us / 1e6 : NAN;

	w->cpu_usage = rate(&last->cpu_ns, cpu_ok, cpu_ns, cpu_at, 1e-9, true);
	w->throttled_periods = rate(&last->nr_throttled, thr_ok, nr_thr, cpu_at,
				    1, false);
	w->throttled_ms = rate(&last->throttled_ns, thr_ok, thr_ns, cpu_at,
			       1e-6, false);
	w->cpu_pressure_pct = pct(rate(&last->cpu_some_us, cpsi_ok, cpu_us, psi_at,
				       1e-4, true));
	w->memory_pressure_pct = pct(rate(&last->memory_some_us, mpsi_ok, mem_us,
					  psi_at, 1e-4, true));
	if (r && (r->has & MOAT_CGSTAT_MEMORY)) {
		v = r->memory_bytes;
		mem_ok = true;
	} else {
		mem_ok = !read_number(og->fd[GF_MEMORY_USAGE], &v);
	}
	w->memory_bytes = mem_ok ? v : NAN;
}

static void iterator_off(struct observe *o)
{
	moat_cgstat_walk_free(o->walk);
	moat_cgstat_unload(o->prog);
	o->walk = NULL;
	o->prog = NULL;
	o->replaced = 0;
	/*
	 * The period's read is gone with the walk: observe/source set to
	 * files between two cycles must not leave the next one's groups
	 * stage a fingerprint to read (observe_cgroups_fingerprint()).
	 */
	o->walked = false;
}

/* The iterator on the scan root, where observe/source and the kernel allow. */
static void iterator_on(struct moatd *d)
{
	struct observe *o = O(d);
	char why[PATH_MAX + 128];
	int err;

	if (o->source == SRC_FILES) {
		pr_info("observe: each group's cgroup files (observe/source = files)");
		return;
	}
	err = moat_cgstat_load(d->cpu->v2, 0, &o->prog, why, sizeof(why));
	if (!err) {
		err = moat_cgstat_walk_new(o->prog, d->scan.mnt, &o->walk);
		if (err)
			snprintf(why, sizeof(why), "a walk of %s: %s", d->scan.mnt,
				 strerror(-err));
	} else if (err != -EOPNOTSUPP) {
		/* the kernel has the iterator and refused it: say why, loudly */
		pr_warn("observe: %s; the verifier's last words follow", why);
		moat_log_libbpf_tail();
	}
	if (err) {
		iterator_off(o);
		pr_info("observe: each group's cgroup files: no cgroup iterator (%s)", why);
		return;
	}
	/* v1's cpu.stat has throttling only; v2's usage needs the flush */
	if (!d->cpu->v2 || moat_cgstat_has_usage(o->prog))
		o->replaced |= 1u << GF_CPU_STAT;
	if (d->cpu->v2)
		o->replaced |= 1u << GF_MEMORY_USAGE;
	pr_info("observe: one read a period for every group below %s: a cgroup iterator (cpu.stat%s); %s per group%s",
		d->scan.root, d->cpu->v2 ? ", memory.current" : "",
		d->cpu->v2 ? "cpu.pressure and memory.pressure" :
			     "cpuacct.usage and memory.usage_in_bytes",
		!d->cpu->v2 ? "" : moat_cgstat_has_psi(o->prog) ?
		", where a stall may have moved them" :
		", each period (no per-CPU data for the iterator: CONFIG_KALLSYMS_ALL?)");
}

static int show_pressure_reads(const struct moat_knob *k, char *buf, size_t len)
{
	const struct observe *o = k->owner;

	return snprintf(buf, len, "%llu", o->pressure_reads) >= (int)len ? -EOVERFLOW : 0;
}

static int show_active(const struct moat_knob *k, char *buf, size_t len)
{
	const struct observe *o = k->owner;

	return snprintf(buf, len, "%s", o->walk ? "iterator" : "files") >=
	       (int)len ? -EOVERFLOW : 0;
}

/* The files of every group known, as the source now in use needs them. */
static void reopen_all(struct moatd *d)
{
	size_t i;

	for (i = 0; i < d->nr_groups; i++)
		open_files(d, d->groups[i]);
}

void observe_sample(struct moatd *d, struct period *p)
{
	struct observe *o = O(d);
	size_t i;
	int n;

	o->walked = false;
	n = o->walk ? moat_cgstat_walk_read(o->walk) : 0;
	o->walk_at = moatd_mono_s();
	if (n == -E2BIG) {
		pr_warn("observe: %zu cgroups below %s, more than the cgroup iterator has room for (%zu): each group's cgroup files from now on",
			moat_cgstat_walk_found(o->walk), d->scan.root,
			moat_cgstat_room(o->prog));
		iterator_off(o);
		reopen_all(d);
	} else if (o->walk) {
		if (n < 0 && !o->failing)
			pr_warn("observe: the cgroup iterator's read failed (%s): no usage, throttling or memory until it works again",
				strerror(-n));
		else if (n >= 0 && o->failing)
			pr_info("observe: the cgroup iterator reads again");
		o->failing = n < 0;
		o->walked = n > 0;
	}
	for (i = 0; i < d->nr_groups; i++)
		observe_group(d, d->groups[i]);
}

bool observe_cgroups_fingerprint(const struct moatd *d, __u64 *fp)
{
	const struct observe *o = O(d);

	if (!o->walked)
		return false;
	*fp = moat_cgstat_walk_fingerprint(o->walk);
	return true;
}

/* Taken at once: a benchmark compares both in one run (scale.sh). */
static void store_source(const struct moat_knob *k, unsigned int u,
			 const char *val)
{
	struct observe *o = k->owner;

	if (o->source == u)
		return;
	o->source = u;
	if (!o->opened)		/* the start's open reads the knob */
		return;
	iterator_off(o);
	iterator_on(o->d);
	reopen_all(o->d);
}

static int observe_init(struct moatd *d)
{
	struct observe *o = O(d);
	const struct moat_knob knobs[] = {
		{ .path = "observe/source", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = sources, .data = &o->source, .store = store_source },
		{ .path = "observe/active_source", .type = MOAT_KNOB_SHOW,
		  .show = show_active },
		{ .path = "observe/pressure_reads", .type = MOAT_KNOB_SHOW,
		  .show = show_pressure_reads },
	};

	o->d = d;
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]), o);
}

static int observe_open(struct moatd *d)
{
	iterator_on(d);
	O(d)->opened = true;
	reopen_all(d);
	return 0;
}

static void observe_close(struct moatd *d)
{
	iterator_off(O(d));
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
	{ "rqlat_ap99_us", offsetof(struct group_window, rqlat_ap99_us), 1 },
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

/*
 * A window field over the last GROUP_HISTORY committed windows, oldest
 * first; "-": not known in that one.  Which field: the knob's name,
 * <field>_history.
 */
static int show_history(const struct moat_knob *k, char *buf, size_t len)
{
	static const struct {
		const char *name;
		size_t off;
		int decimals;
	} kept[] = {
		{ "rqlat_p99_us_history", offsetof(struct group_past, rqlat_p99_us), 1 },
		{ "rqlat_wp99_us_history", offsetof(struct group_past, rqlat_wp99_us), 1 },
		{ "rqlat_ap99_us_history", offsetof(struct group_past, rqlat_ap99_us), 1 },
		{ "cpi_history", offsetof(struct group_past, cpi), 3 },
	};
	const struct moatd_group *g = k->owner;
	const char *name = strrchr(k->path, '/') + 1;
	size_t n = 0, f;
	unsigned int i;

	for (f = 0; f < sizeof(kept) / sizeof(kept[0]); f++)
		if (!strcmp(name, kept[f].name))
			break;
	if (f == sizeof(kept) / sizeof(kept[0]))
		return -ENOENT;
	buf[0] = '\0';
	for (i = 0; i < GROUP_HISTORY && n < len; i++) {
		const struct group_past *w =
			&g->history[(g->history_next + i) % GROUP_HISTORY];
		double v = *(const double *)((const char *)w + kept[f].off);

		n += isnan(v) ? snprintf(buf + n, len - n, "%s-", i ? " " : "") :
				snprintf(buf + n, len - n, "%s%.*f", i ? " " : "",
					 kept[f].decimals, v);
	}
	return n >= len ? -EOVERFLOW : 0;
}

static int observe_group_add(struct moatd *d, struct moatd_group *g)
{
	struct observe_group *og = group_mod(g, MOD_OBSERVE);
	struct moat_knob k = { .type = MOAT_KNOB_SHOW, .owner = g };
	size_t i;
	int err;

	for (i = 0; i < GF_NR; i++)
		og->fd[i] = -1;
	open_files(d, g);
	snprintf(k.path, sizeof(k.path), "groups/%s/rqlat_count", g->gid.id);
	k.show = show_count;
	err = moat_knob_add(d->tree, &k);
	k.show = show_history;
	snprintf(k.path, sizeof(k.path), "groups/%s/rqlat_p99_us_history", g->gid.id);
	if (!err)
		err = moat_knob_add(d->tree, &k);
	snprintf(k.path, sizeof(k.path), "groups/%s/cpi_history", g->gid.id);
	if (!err)
		err = moat_knob_add(d->tree, &k);
	snprintf(k.path, sizeof(k.path), "groups/%s/rqlat_wp99_us_history", g->gid.id);
	if (!err)
		err = moat_knob_add(d->tree, &k);
	snprintf(k.path, sizeof(k.path), "groups/%s/rqlat_ap99_us_history", g->gid.id);
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

static void observe_group_reset(struct moatd *d, struct moatd_group *g)
{
	open_files(d, g);
}

static void observe_group_del(struct moatd *d, struct moatd_group *g)
{
	close_files(group_mod(g, MOD_OBSERVE));
}

const struct moatd_module observe_module = {
	.name = "observe",
	.size = sizeof(struct observe),
	.group_size = sizeof(struct observe_group),
	.init = observe_init,
	.open = observe_open,
	.close = observe_close,
	.group_add = observe_group_add,
	.group_reset = observe_group_reset,
	.group_del = observe_group_del,
};
