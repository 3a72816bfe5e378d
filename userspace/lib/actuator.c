// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cgroup actuators (units and files in actuator.h).  Formats from
 * Documentation/admin-guide/cgroup-v2.rst ("cpu.max", "cpu.weight",
 * "cpu.idle", "memory.high") and scheduler/sched-bwc.rst for v1.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "actuator.h"

/* The kernel refuses a CFS quota under 1 ms. */
#define MIN_QUOTA_US	1000

static int file_path(char *buf, size_t len, const char *dir, const char *file)
{
	return (size_t)snprintf(buf, len, "%s/%s", dir, file) >= len ?
	       -ENAMETOOLONG : 0;
}

static int read_file(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	int err = file_path(path, sizeof(path), dir, file);

	return err ? err : moat_kfile_read(path, buf, len);
}

static int write_file(struct moat_journal *j, const char *dir,
		      const char *file, const char *val)
{
	char path[PATH_MAX];
	int err = file_path(path, sizeof(path), dir, file);

	return err ? err : moat_kfile_write(j, path, val);
}

static int read_ll(const char *dir, const char *file, long long *out)
{
	char buf[64], end;
	int err = read_file(dir, file, buf, sizeof(buf));

	if (err)
		return err;
	return sscanf(buf, "%lld%c", out, &end) == 1 ? 0 : -EBADMSG;
}

/* cpu.max: "max <period>" or "<quota> <period>", in us. */
static int cpu_max_v2(const char *dir, long long *quota, long long *period)
{
	char buf[64], q[24], end;
	int err = read_file(dir, "cpu.max", buf, sizeof(buf));

	if (err)
		return err;
	if (sscanf(buf, "%23s %lld%c", q, period, &end) != 2 || *period <= 0)
		return -EBADMSG;
	if (!strcmp(q, "max")) {
		*quota = -1;
		return 0;
	}
	return sscanf(q, "%lld%c", quota, &end) == 1 && *quota > 0 ? 0 : -EBADMSG;
}

int moat_cpu_max_get(const char *dir, bool v2, long long *quota,
		     long long *period)
{
	int err;

	if (v2)
		return cpu_max_v2(dir, quota, period);
	err = read_ll(dir, "cpu.cfs_period_us", period);
	if (!err)
		err = read_ll(dir, "cpu.cfs_quota_us", quota);
	return !err && *period <= 0 ? -EBADMSG : err;
}

static int cpu_max_read(const char *dir, bool v2, double *val)
{
	long long quota, period;
	int err = moat_cpu_max_get(dir, v2, &quota, &period);

	if (!err)
		*val = quota < 0 ? INFINITY : (double)quota / period;
	return err;
}

static int cpu_max_apply(struct moat_journal *j, const char *dir, bool v2,
			 double cpus)
{
	long long quota, period;
	char buf[64];
	int err = moat_cpu_max_get(dir, v2, &quota, &period);

	if (err)
		return err;
	if (isnan(cpus) || cpus <= 0)
		return -EINVAL;
	if (isinf(cpus)) {
		snprintf(buf, sizeof(buf), v2 ? "max %lld" : "-1", period);
	} else {
		quota = llround(cpus * period);
		if (quota < MIN_QUOTA_US)
			quota = MIN_QUOTA_US;
		if (v2)
			snprintf(buf, sizeof(buf), "%lld %lld", quota, period);
		else
			snprintf(buf, sizeof(buf), "%lld", quota);
	}
	return write_file(j, dir, v2 ? "cpu.max" : "cpu.cfs_quota_us", buf);
}

const struct moat_actuator moat_act_cpu_max = {
	.name = "cpu_max", .unit = "CPUs",
	.files = { { "cpu.cfs_quota_us" }, { "cpu.max" } },
	.read = cpu_max_read, .apply = cpu_max_apply,
};

/* v1 shares <-> v2 weight, as kubelet converts them. */
static int cpu_weight_read(const char *dir, bool v2, double *val)
{
	long long v;
	int err = read_ll(dir, v2 ? "cpu.weight" : "cpu.shares", &v);

	if (!err)
		*val = v2 ? v : v * 100.0 / 1024;
	return err;
}

/*
 * The kernel's least is a weight of 1 on v2 and 2 shares (weight 0.2) on
 * v1: a weight over 0 and under that is the least.  Its most: v2's
 * 10000, v1's 262144 shares (weight 25600).
 */
static int cpu_weight_apply(struct moat_journal *j, const char *dir, bool v2,
			    double weight)
{
	char buf[32];
	long long v;

	if (isnan(weight) || weight <= 0 || weight > (v2 ? 10000 : 262144 * 100.0 / 1024))
		return -EINVAL;
	v = v2 ? llround(weight) : llround(weight * 1024 / 100);
	if (v < (v2 ? 1 : 2))
		v = v2 ? 1 : 2;
	snprintf(buf, sizeof(buf), "%lld", v);
	return write_file(j, dir, v2 ? "cpu.weight" : "cpu.shares", buf);
}

const struct moat_actuator moat_act_cpu_weight = {
	.name = "cpu_weight", .unit = "weight",
	.files = { { "cpu.shares" }, { "cpu.weight" } },
	.read = cpu_weight_read, .apply = cpu_weight_apply,
};

static int cpu_idle_read(const char *dir, bool v2, double *val)
{
	long long v;
	int err = read_ll(dir, "cpu.idle", &v);

	if (!err)
		*val = v;
	return err;
}

/*
 * A write to cpu.idle resets the group's weight (the kernel's
 * sched_group_set_idle(): the idle weight, or the default one when it
 * leaves idle), so the weight's original goes in the journal too.
 */
static int cpu_idle_apply(struct moat_journal *j, const char *dir, bool v2,
			  double idle)
{
	char path[PATH_MAX], side[PATH_MAX];
	int err;

	if (idle != 0 && idle != 1)
		return -EINVAL;
	err = file_path(path, sizeof(path), dir, "cpu.idle");
	if (!err)
		err = file_path(side, sizeof(side), dir,
				v2 ? "cpu.weight" : "cpu.shares");
	return err ? err : moat_kfile_write_with(j, path, idle ? "1" : "0", side);
}

const struct moat_actuator moat_act_cpu_idle = {
	.name = "cpu_idle", .unit = "",
	.files = { { "cpu.idle", "cpu.shares" }, { "cpu.idle", "cpu.weight" } },
	.read = cpu_idle_read, .apply = cpu_idle_apply,
};

static int cpu_prio_read(const char *dir, bool v2, double *val)
{
	double idle;
	int err = cpu_idle_read(dir, v2, &idle);

	if (err)
		return err;
	if (idle) {
		*val = 0;
		return 0;
	}
	return cpu_weight_read(dir, v2, val);
}

static int cpu_prio_apply(struct moat_journal *j, const char *dir, bool v2,
			  double prio)
{
	double idle;
	int err;

	if (isnan(prio) || prio < 0 || prio > 10000)
		return -EINVAL;
	if (prio == 0)
		return cpu_idle_apply(j, dir, v2, 1);
	err = cpu_idle_read(dir, v2, &idle);
	if (!err && idle)
		err = cpu_idle_apply(j, dir, v2, 0);
	if (err)
		return err;
	/* v1's least shares, 2, is weight 0.2: the scale goes that low. */
	if (!v2) {
		char buf[32];
		long long shares = llround(prio * 1024 / 100);

		snprintf(buf, sizeof(buf), "%lld", shares < 2 ? 2 : shares);
		return write_file(j, dir, "cpu.shares", buf);
	}
	return cpu_weight_apply(j, dir, v2, prio < 1 ? 1 : prio);
}

const struct moat_actuator moat_act_cpu_prio = {
	.name = "cpu_prio", .unit = "weight",
	.files = { { "cpu.idle", "cpu.shares" }, { "cpu.idle", "cpu.weight" } },
	.read = cpu_prio_read, .apply = cpu_prio_apply,
};

/*
 * CFS burst (v5.14+): unused quota a group may carry into a later period,
 * in seconds of CPU time; v2 cpu.max.burst, v1 cpu.cfs_burst_us, both in
 * us.  The kernel refuses a burst over the quota, and a quota written
 * under the burst in force (sched/core.c, tg_set_cfs_bandwidth()).
 */
static int cpu_burst_read(const char *dir, bool v2, double *val)
{
	long long v;
	int err = read_ll(dir, v2 ? "cpu.max.burst" : "cpu.cfs_burst_us", &v);

	if (!err)
		*val = v / 1e6;
	return err;
}

static int cpu_burst_apply(struct moat_journal *j, const char *dir, bool v2,
			   double secs)
{
	char buf[32];

	if (isnan(secs) || secs < 0 || secs > 1e6)
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%lld", llround(secs * 1e6));
	return write_file(j, dir, v2 ? "cpu.max.burst" : "cpu.cfs_burst_us", buf);
}

const struct moat_actuator moat_act_cpu_burst = {
	.name = "cpu_burst", .unit = "s",
	.files = { { "cpu.cfs_burst_us" }, { "cpu.max.burst" } },
	.read = cpu_burst_read, .apply = cpu_burst_apply,
};

static int memory_high_read(const char *dir, bool v2, double *val)
{
	char buf[32], end;
	long long v;
	int err;

	if (!v2)
		return -EOPNOTSUPP;
	err = read_file(dir, "memory.high", buf, sizeof(buf));
	if (err)
		return err;
	if (!strcmp(buf, "max"))
		*val = INFINITY;
	else if (sscanf(buf, "%lld%c", &v, &end) == 1 && v >= 0)
		*val = v;
	else
		err = -EBADMSG;
	return err;
}

static int memory_high_apply(struct moat_journal *j, const char *dir, bool v2,
			     double bytes)
{
	char buf[32];

	if (!v2)
		return -EOPNOTSUPP;
	if (isnan(bytes) || bytes < 0)
		return -EINVAL;
	if (isinf(bytes))
		strcpy(buf, "max");
	else
		snprintf(buf, sizeof(buf), "%lld", llround(bytes));
	return write_file(j, dir, "memory.high", buf);
}

const struct moat_actuator moat_act_memory_high = {
	.name = "memory_high", .unit = "bytes",
	.files = { { NULL }, { "memory.high" } },
	.read = memory_high_read, .apply = memory_high_apply,
};

bool moat_act_supported(const struct moat_actuator *a, const char *dir,
			bool v2)
{
	char path[PATH_MAX];
	const char *const *f;

	for (f = a->files[v2]; *f; f++)
		if (file_path(path, sizeof(path), dir, *f) ||
		    moat_kfile_access(path, W_OK))
			return false;
	return a->files[v2][0] != NULL;
}

int moat_act_restore(const struct moat_actuator *a, struct moat_journal *j,
		     const char *dir, bool v2)
{
	return moat_journal_restore_files(j, dir, a->files[v2]);
}
