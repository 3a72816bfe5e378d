// SPDX-License-Identifier: GPL-2.0-only
/*
 * The actuators on real cgroups (v1 cpu here, v2 in the VM): units to
 * files and back, the kernel's minimum quota, and exact restores.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>
#include "actuator.h"
#include "helpers.h"

static struct tcg cg;
static struct moat_journal *j;
static bool v2;

static void setup(void)
{
	const char *skip = tcg_skip_reason(false);

	if (skip)
		return;
	cr_assert_eq(tcg_setup(), 0);
	cr_assert_eq(tcg_create("act", &cg), 0);
	v2 = tcg_hierarchy()->v2;
	cr_assert_eq(moat_journal_open("", &j), 0);
}

static void teardown(void)
{
	moat_journal_free(j);
	j = NULL;
	tcg_cleanup();
}

static void skip_unless_cgroups(void)
{
	const char *skip = tcg_skip_reason(false);

	if (skip)
		tcg_skip(teardown, "%s", skip);
}

static void content(const char *file, char *buf, size_t len)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", cg.dir, file);
	cr_assert_eq(moat_kfile_read(path, buf, len), 0, "%s", path);
}

TestSuite(actuator, .init = setup, .fini = teardown);

Test(actuator, cpu_max_in_cpus_and_back)
{
	const char *file = v2 ? "cpu.max" : "cpu.cfs_quota_us";
	char before[64], buf[64];
	double cpus;

	skip_unless_cgroups();
	cr_assert(moat_act_supported(&moat_act_cpu_max, cg.dir, v2));
	content(file, before, sizeof(before));
	cr_assert_eq(moat_act_cpu_max.read(cg.dir, v2, &cpus), 0);
	cr_assert(isinf(cpus), "a new cgroup has no limit");

	cr_assert_eq(moat_act_cpu_max.apply(j, cg.dir, v2, 0.5), 0);
	content(file, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "50000 100000" : "50000");
	cr_assert_eq(moat_act_cpu_max.read(cg.dir, v2, &cpus), 0);
	cr_assert_float_eq(cpus, 0.5, 1e-9);

	/* Under the kernel's 1 ms minimum: the minimum, not an error. */
	cr_assert_eq(moat_act_cpu_max.apply(j, cg.dir, v2, 0.001), 0);
	content(file, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "1000 100000" : "1000");
	cr_assert_eq(moat_act_cpu_max.apply(j, cg.dir, v2, 0), -EINVAL);

	cr_assert_eq(moat_act_restore(&moat_act_cpu_max, j, cg.dir, v2), 0);
	content(file, buf, sizeof(buf));
	cr_assert_str_eq(buf, before);
	cr_assert_eq(j->n, 0);
}

Test(actuator, cpu_weight_converts_to_shares_on_v1)
{
	char buf[64];
	double w;

	skip_unless_cgroups();
	cr_assert_eq(moat_act_cpu_weight.apply(j, cg.dir, v2, 50), 0);
	content(v2 ? "cpu.weight" : "cpu.shares", buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "50" : "512");
	cr_assert_eq(moat_act_cpu_weight.read(cg.dir, v2, &w), 0);
	cr_assert_float_eq(w, 50, 1e-9);
	cr_assert_eq(moat_act_cpu_weight.apply(j, cg.dir, v2, 0), -EINVAL);
	/* each version's most: 10000, 262144 shares; v2's is no bound on v1 */
	cr_assert_eq(moat_act_cpu_weight.apply(j, cg.dir, v2, 10001), v2 ? -EINVAL : 0);
	if (!v2) {
		content("cpu.shares", buf, sizeof(buf));
		cr_assert_str_eq(buf, "102410");
	}
	cr_assert_eq(moat_act_cpu_weight.apply(j, cg.dir, v2, 25601), -EINVAL);
	cr_assert_eq(moat_act_restore(&moat_act_cpu_weight, j, cg.dir, v2), 0);
	content(v2 ? "cpu.weight" : "cpu.shares", buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "100" : "1024");
}

Test(actuator, cpu_idle_where_the_kernel_has_it)
{
	char buf[8];

	skip_unless_cgroups();
	if (!moat_act_supported(&moat_act_cpu_idle, cg.dir, v2)) {
		teardown();
		tcg_skip(teardown, "no cpu.idle on this kernel (v5.15+)");
	}
	cr_assert_eq(moat_act_cpu_idle.apply(j, cg.dir, v2, 1), 0);
	content("cpu.idle", buf, sizeof(buf));
	cr_assert_str_eq(buf, "1");
	cr_assert_eq(moat_act_cpu_idle.apply(j, cg.dir, v2, 2), -EINVAL);
	cr_assert_eq(moat_act_restore(&moat_act_cpu_idle, j, cg.dir, v2), 0);
	content("cpu.idle", buf, sizeof(buf));
	cr_assert_str_eq(buf, "0");
}

Test(actuator, memory_high_on_v2_only)
{
	char buf[64];
	double bytes;

	skip_unless_cgroups();
	if (!v2) {
		cr_assert(!moat_act_supported(&moat_act_memory_high, cg.dir, v2));
		cr_assert_eq(moat_act_memory_high.apply(j, cg.dir, v2, 1 << 30),
			     -EOPNOTSUPP);
		cr_assert_eq(j->n, 0);
		return;
	}
	cr_assert(moat_act_supported(&moat_act_memory_high, cg.dir, v2));
	cr_assert_eq(moat_act_memory_high.apply(j, cg.dir, v2, 64 << 20), 0);
	content("memory.high", buf, sizeof(buf));
	cr_assert_str_eq(buf, "67108864");
	cr_assert_eq(moat_act_memory_high.read(cg.dir, v2, &bytes), 0);
	cr_assert_float_eq(bytes, 64 << 20, 1);
	cr_assert_eq(moat_act_restore(&moat_act_memory_high, j, cg.dir, v2), 0);
	content("memory.high", buf, sizeof(buf));
	cr_assert_str_eq(buf, "max");
}

/*
 * cpu_prio: weight down to v1's 2 shares, then cpu.idle; back up through
 * a weight, which must clear cpu.idle first (the kernel refuses a weight
 * while the group is idle); a restore puts back both files in order.
 */
Test(actuator, cpu_prio_walks_weight_then_idle_and_back)
{
	const char *wfile = v2 ? "cpu.weight" : "cpu.shares";
	char buf[64];
	double prio;

	skip_unless_cgroups();
	if (!moat_act_supported(&moat_act_cpu_prio, cg.dir, v2)) {
		teardown();
		tcg_skip(teardown, "no cpu.idle on this kernel (v5.15+)");
	}
	cr_assert_eq(moat_act_cpu_prio.read(cg.dir, v2, &prio), 0);
	cr_assert_float_eq(prio, 100, 1e-9);
	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, 10), 0);
	content(wfile, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "10" : "102");
	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, 0.1), 0);
	content(wfile, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "1" : "2", "the least weight, not an error");

	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, 0), 0);
	content("cpu.idle", buf, sizeof(buf));
	cr_assert_str_eq(buf, "1");
	cr_assert_eq(moat_act_cpu_prio.read(cg.dir, v2, &prio), 0);
	cr_assert_eq(prio, 0);

	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, 20), 0);
	content("cpu.idle", buf, sizeof(buf));
	cr_assert_str_eq(buf, "0");
	content(wfile, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "20" : "205");

	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, 0), 0);
	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, -1), -EINVAL);
	cr_assert_eq(moat_act_restore(&moat_act_cpu_prio, j, cg.dir, v2), 0);
	content("cpu.idle", buf, sizeof(buf));
	cr_assert_str_eq(buf, "0");
	content(wfile, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "100" : "1024");
	cr_assert_eq(j->n, 0);
}

/*
 * The kernel resets a group's weight when cpu.idle changes: a weight that
 * kubelet set (2 shares, weight 1) must come back with the restore, and
 * the reset must not pass for someone else's change.
 */
Test(actuator, idle_puts_back_the_weight_the_kernel_reset)
{
	const char *wfile = v2 ? "cpu.weight" : "cpu.shares";
	char buf[64];

	skip_unless_cgroups();
	if (!moat_act_supported(&moat_act_cpu_prio, cg.dir, v2)) {
		teardown();
		tcg_skip(teardown, "no cpu.idle on this kernel (v5.15+)");
	}
	cr_assert_eq(tcg_write(&cg, wfile, v2 ? "1" : "2"), 0);
	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, 0), 0);
	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, 10), 0);
	content(wfile, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "10" : "102");
	cr_assert_eq(moat_act_cpu_prio.apply(j, cg.dir, v2, 0), 0);
	cr_assert_eq(moat_act_restore(&moat_act_cpu_prio, j, cg.dir, v2), 0);
	content("cpu.idle", buf, sizeof(buf));
	cr_assert_str_eq(buf, "0");
	content(wfile, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "1" : "2", "the kernel's reset stayed");

	/* The plain cpu_idle actuator, likewise. */
	cr_assert_eq(moat_act_cpu_idle.apply(j, cg.dir, v2, 1), 0);
	cr_assert_eq(moat_act_restore(&moat_act_cpu_idle, j, cg.dir, v2), 0);
	content(wfile, buf, sizeof(buf));
	cr_assert_str_eq(buf, v2 ? "1" : "2");
	cr_assert_eq(j->n, 0);
}
