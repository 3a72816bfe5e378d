// SPDX-License-Identifier: GPL-2.0-only
/*
 * A FAKE of the kernel's cgroup files for the closed-loop simulator
 * (sim.h): an in-memory tree in place of the kernel's
 * (moat_kfile_set_ops()), that holds every write to the kernel's rules as
 * Documentation/admin-guide/cgroup-v2.rst and scheduler/sched-bwc.rst
 * give them, for the files moat reads and writes:
 *
 *  - cpu.weight 1..10000 (v2), cpu.shares 2..262144 (v1); refused
 *    (EINVAL) while cpu.idle is 1, which sets the weight to its least;
 *  - cpu.max "max|QUOTA PERIOD" (v2), cpu.cfs_quota_us -1 or QUOTA and
 *    cpu.cfs_period_us (v1): a quota of 1 ms at least; a burst
 *    (cpu.max.burst, cpu.cfs_burst_us) at most the quota, so a quota
 *    under the burst is refused; on v1 a group's quota at most its
 *    parent's (tg_cfs_schedulable_down()), so a parent's under a child's
 *    is refused;
 *  - memory.high "max" or bytes, kept in whole pages.
 *
 * A file of a cgroup that is gone is ENOENT.  Failures come on cue
 * (sim_fail()), and so do the saves of moat's own files
 * (sim_fail_saves()): its journal and its record of evictions are kept
 * here, in memory, as a crash would leave them.  Each write says who
 * made it, moat or an owner, and moat's are held to the plant's rules
 * of what it may write.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "journal.h"
#include "sim.h"

#define WEIGHT_DEFAULT_V2	"100"
#define SHARES_DEFAULT		"1024"
#define PAGE			4096

struct sim_kernel simk;

static int find_file(const struct sim_cg *c, const char *name)
{
	int i;

	for (i = 0; i < c->nr; i++)
		if (!strcmp(c->f[i].name, name))
			return i;
	return -1;
}

static void add_file(struct sim_cg *c, const char *name, const char *value)
{
	struct sim_file *f = &c->f[c->nr++];

	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->value, sizeof(f->value), "%s", value);
	snprintf(f->owner, sizeof(f->owner), "%s", value);
}

int sim_find(const char *path)
{
	int i;

	for (i = 0; i < simk.nr; i++)
		if (simk.cg[i].alive && !strcmp(simk.cg[i].path, path))
			return i;
	return -1;
}

int sim_mkdir(const char *parent, const char *name)
{
	struct sim_cg *c;

	if (simk.nr == simk.cap) {
		simk.cap = simk.cap ? 2 * simk.cap : 64;
		simk.cg = realloc(simk.cg, simk.cap * sizeof(*simk.cg));
		if (!simk.cg)
			abort();
	}
	c = &simk.cg[simk.nr];
	memset(c, 0, sizeof(*c));
	c->parent = parent ? sim_find(parent) : -1;
	snprintf(c->path, sizeof(c->path), "%s/%s", parent ? parent : SIM_ROOT, name);
	c->alive = true;
	if (simk.v2) {
		add_file(c, "cpu.weight", WEIGHT_DEFAULT_V2);
		add_file(c, "cpu.max", "max 100000");
		add_file(c, "cpu.max.burst", "0");
		add_file(c, "cpu.idle", "0");
		add_file(c, "memory.high", "max");
	} else {
		add_file(c, "cpu.shares", SHARES_DEFAULT);
		add_file(c, "cpu.cfs_quota_us", "-1");
		add_file(c, "cpu.cfs_period_us", "100000");
		add_file(c, "cpu.cfs_burst_us", "0");
		add_file(c, "cpu.idle", "0");
	}
	return simk.nr++;
}

void sim_rmdir(const char *path)
{
	int i = sim_find(path);

	if (i >= 0)
		simk.cg[i].alive = false;
}

const char *sim_path(int i, const char *file, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", simk.cg[i].path, file);
	return buf;
}

const char *sim_get(int i, const char *file)
{
	int f = i >= 0 ? find_file(&simk.cg[i], file) : -1;

	return f >= 0 ? simk.cg[i].f[f].value : "";
}

/* The cgroup and file of @path, or -ENOENT. */
static int lookup(const char *path, int *cg, int *file)
{
	const char *slash = strrchr(path, '/');
	char dir[256];

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	*cg = sim_find(dir);
	if (*cg < 0)
		return -ENOENT;
	*file = find_file(&simk.cg[*cg], slash + 1);
	return *file < 0 ? -ENOENT : 0;
}

static bool whole(const char *s, long long *v)
{
	char end;

	return sscanf(s, "%lld%c", v, &end) == 1;
}

/* A group's quota in CPUs: INFINITY for none. */
static double quota_of(int i)
{
	long long q, p;

	if (i < 0)
		return INFINITY;
	if (simk.v2) {
		if (sscanf(sim_get(i, "cpu.max"), "%lld %lld", &q, &p) != 2)
			return INFINITY;	/* "max" */
	} else {
		q = atoll(sim_get(i, "cpu.cfs_quota_us"));
		p = atoll(sim_get(i, "cpu.cfs_period_us"));
		if (q < 0)
			return INFINITY;
	}
	return (double)q / p;
}

/* The quota in force above @i (v1: the nearest ancestor's with one). */
static double parent_quota(int i)
{
	int p;

	for (p = simk.cg[i].parent; p >= 0; p = simk.cg[p].parent)
		if (!isinf(quota_of(p)))
			return quota_of(p);
	return INFINITY;
}

/*
 * v1: no child of @i may hold more than @q (sched-bwc.rst, hierarchy); a
 * child without a quota takes its parent's.
 */
static bool children_fit(int i, double q)
{
	int c;

	for (c = 0; c < simk.nr; c++)
		if (simk.cg[c].alive && simk.cg[c].parent == i && !isinf(quota_of(c)) &&
		    quota_of(c) > q + 1e-9)
			return false;
	return true;
}

/*
 * @value for file @f of cgroup @i, as the kernel takes it: 0 and the value
 * it keeps in @keep, or -errno.
 */
static int check(int i, const struct sim_file *f, const char *value, char *keep, size_t len)
{
	long long v, q, p;
	char s[32];
	int idle = atoi(sim_get(i, "cpu.idle"));

	snprintf(keep, len, "%s", value);
	if (!strcmp(f->name, "cpu.weight"))
		return whole(value, &v) && v >= 1 && v <= 10000 && !idle ? 0 : -EINVAL;
	if (!strcmp(f->name, "cpu.shares"))
		return whole(value, &v) && v >= 2 && v <= 262144 && !idle ? 0 : -EINVAL;
	if (!strcmp(f->name, "cpu.idle"))
		return !strcmp(value, "0") || !strcmp(value, "1") ? 0 : -EINVAL;
	if (!strcmp(f->name, "memory.high")) {
		if (!strcmp(value, "max"))
			return 0;
		if (!whole(value, &v) || v < 0)
			return -EINVAL;
		snprintf(keep, len, "%lld", v / PAGE * PAGE);
		return 0;
	}
	if (!strcmp(f->name, "cpu.max")) {
		if (sscanf(value, "%31s %lld", s, &p) != 2)
			return -EINVAL;
		if (p < 1000 || p > 1000000)
			return -EINVAL;
		if (!strcmp(s, "max"))
			return 0;
		if (!whole(s, &q) || q < 1000)
			return -EINVAL;
		/* a quota under the burst */
		return q >= atoll(sim_get(i, "cpu.max.burst")) ? 0 : -EINVAL;
	}
	if (!strcmp(f->name, "cpu.cfs_quota_us")) {
		if (!whole(value, &q) || (q != -1 && q < 1000))
			return -EINVAL;
		p = atoll(sim_get(i, "cpu.cfs_period_us"));
		if (q == -1)
			return 0;
		if (q < atoll(sim_get(i, "cpu.cfs_burst_us")))
			return -EINVAL;
		/* tg_cfs_schedulable_down(): not over the parent, not under a child */
		if ((double)q / p > parent_quota(i) + 1e-9 || !children_fit(i, (double)q / p))
			return -EINVAL;
		return 0;
	}
	if (!strcmp(f->name, "cpu.max.burst") || !strcmp(f->name, "cpu.cfs_burst_us")) {
		if (!whole(value, &v) || v < 0)
			return -EINVAL;
		q = simk.v2 ? (sscanf(sim_get(i, "cpu.max"), "%lld", &q) == 1 ? q : -1) :
			      atoll(sim_get(i, "cpu.cfs_quota_us"));
		return v == 0 || (q > 0 && v <= q) ? 0 : -EINVAL;
	}
	return 0;	/* cpu.cfs_period_us: moat never writes it */
}

/* The kernel's side effects of a write. */
static void after(int i, const char *file, const char *value)
{
	int w = find_file(&simk.cg[i], simk.v2 ? "cpu.weight" : "cpu.shares");

	/* cpu.idle 1 holds the weight at its least; 0 gives the default back */
	if (!strcmp(file, "cpu.idle") && w >= 0)
		snprintf(simk.cg[i].f[w].value, sizeof(simk.cg[i].f[w].value), "%s",
			 !strcmp(value, "1") ? (simk.v2 ? "1" : "3") :
			 simk.v2 ? WEIGHT_DEFAULT_V2 : SHARES_DEFAULT);
}

static int write_file(const char *path, const char *value, enum sim_writer who)
{
	char keep[SIM_VALUE_MAX], why[256];
	struct sim_file *f;
	int i, fi, err = lookup(path, &i, &fi);

	if (err)
		return err;
	f = &simk.cg[i].f[fi];
	if (who == SIM_MOAT) {
		simk.writes++;
		if (simk.may_write && !simk.may_write(path, f->name, value, why, sizeof(why)) &&
		    !simk.forbidden[0])
			snprintf(simk.forbidden, sizeof(simk.forbidden), "%s '%s': %s", path,
				 value, why);
		if (simk.fail_n > 0 && !strcmp(f->name, simk.fail_file)) {
			simk.fail_n--;
			simk.refusals++;
			simk.failed_on_cue++;
			return -simk.fail_err;
		}
	}
	err = check(i, f, value, keep, sizeof(keep));
	if (err) {
		if (who == SIM_MOAT) {
			simk.refusals++;
			f->refused++;
		}
		return err;
	}
	snprintf(f->value, sizeof(f->value), "%s", keep);
	if (who == SIM_OWNER) {
		snprintf(f->owner, sizeof(f->owner), "%s", keep);
	} else {
		f->moat_writes++;
		f->moat_at[f->ring % SIM_RING] = simk.now;
		f->moat_v[f->ring++ % SIM_RING] = strncmp(keep, "max", 3) ? atof(keep) :
								       INFINITY;
		if (simk.wrote)
			simk.wrote(i, f->name);
	}
	after(i, f->name, keep);
	return 0;
}

int sim_owner_write(int i, const char *file, const char *value)
{
	char path[320];

	return write_file(sim_path(i, file, path, sizeof(path)), value, SIM_OWNER);
}

void sim_fail(const char *file, int err, int n)
{
	snprintf(simk.fail_file, sizeof(simk.fail_file), "%s", file);
	simk.fail_err = err;
	simk.fail_n = n;
}

void sim_fail_saves(int err, int n)
{
	simk.save_err = err;
	simk.save_fail_n = n;
}

int sim_reversals(const struct sim_file *f, double from)
{
	unsigned int n = f->ring < SIM_RING ? f->ring : SIM_RING, k;
	int turns = 0, dir = 0;

	for (k = f->ring - n; k + 1 < f->ring; k++) {
		double a = f->moat_v[k % SIM_RING], b = f->moat_v[(k + 1) % SIM_RING];
		int d = b > a ? 1 : b < a ? -1 : 0;

		if (f->moat_at[(k + 1) % SIM_RING] < from || !d)
			continue;
		turns += dir && d != dir;
		dir = d;
	}
	return turns;
}

static int fake_read(const char *path, char *buf, size_t len)
{
	int i, fi, err = lookup(path, &i, &fi);

	if (err)
		return err;
	if (strlen(simk.cg[i].f[fi].value) >= len)
		return -EOVERFLOW;
	strcpy(buf, simk.cg[i].f[fi].value);
	return 0;
}

static int fake_put(const char *path, const char *value)
{
	return write_file(path, value, SIM_MOAT);
}

static int fake_access(const char *path, int mode)
{
	int i, fi;

	return lookup(path, &i, &fi);
}

static struct sim_saved *saved(const char *file)
{
	int i;

	for (i = 0; i < SIM_SAVED && simk.saved[i].file[0]; i++)
		if (!strcmp(simk.saved[i].file, file))
			return &simk.saved[i];
	return NULL;
}

const char *sim_saved(const char *file, size_t *len)
{
	const struct sim_saved *f = saved(file);

	*len = f ? f->len : 0;
	return f ? f->buf : NULL;
}

/* A save of one of moat's files, all or nothing as moat_file_replace()'s. */
static int fake_save(const char *file, const char *buf, size_t len)
{
	struct sim_saved *f = saved(file);
	char *copy;
	int i;

	if (simk.save_fail_n > 0) {
		simk.save_fail_n--;
		simk.save_failures++;
		return -simk.save_err;
	}
	for (i = 0; !f && i < SIM_SAVED; i++)
		if (!simk.saved[i].file[0]) {
			f = &simk.saved[i];
			snprintf(f->file, sizeof(f->file), "%s", file);
		}
	copy = malloc(len + 1);
	if (!f || !copy) {
		free(copy);
		return -ENOSPC;
	}
	memcpy(copy, buf, len);
	free(f->buf);
	f->buf = copy;
	f->len = len;
	simk.saves++;
	return 0;
}

static int fake_load(const char *file, char *buf, size_t len)
{
	const struct sim_saved *f = saved(file);

	if (!f)
		return -ENOENT;
	if (f->len >= len)
		return -EOVERFLOW;
	memcpy(buf, f->buf, f->len);
	buf[f->len] = '\0';
	return 0;
}

static void saved_free(void)
{
	int i;

	for (i = 0; i < SIM_SAVED; i++)
		free(simk.saved[i].buf);
}

static struct moat_kfile_ops fake = {
	.read = fake_read, .put = fake_put, .access = fake_access, .save = fake_save,
	.load = fake_load,
};

const struct moat_kfile_ops *sim_kernel_ops(void)
{
	return &fake;
}

void sim_kernel_set_put(int (*put)(const char *path, const char *value))
{
	fake.put = put;
}

void sim_kernel_start(bool v2)
{
	free(simk.cg);
	saved_free();
	memset(&simk, 0, sizeof(simk));
	simk.v2 = v2;
	moat_kfile_set_ops(&fake);
}

void sim_kernel_stop(void)
{
	moat_kfile_set_ops(NULL);
	free(simk.cg);
	saved_free();
	memset(&simk, 0, sizeof(simk));
}
