// SPDX-License-Identifier: GPL-2.0-only
/* Cgroup hierarchy detection and cgroup path parsing, on fixture text. */
#include <errno.h>
#include <criterion/criterion.h>
#include "cgroup.h"
#include "helpers.h"
#include "mountinfo.h"
#include "resctrl.h"

static struct moat_cg_layout l;

static int parse(const char *fixture)
{
	FILE *f = fixture_open(fixture);
	int err;

	cr_assert_not_null(f, "fixture %s", fixture);
	err = moat_cg_layout_parse(f, "", &l);
	fclose(f);
	return err;
}

Test(mountinfo, unified)
{
	const struct moat_cg_hierarchy *cpu;

	cr_assert_eq(parse("mountinfo-unified"), 0);
	cr_expect_eq(l.mode, MOAT_CG_UNIFIED);
	cr_expect_eq(l.nr_v1, 0);
	cpu = moat_cg_layout_find(&l, "cpu");
	cr_assert_not_null(cpu);
	cr_expect(cpu->v2);
	cr_expect_str_eq(cpu->mnt, "/sys/fs/cgroup");
	cr_expect_str_eq(cpu->root, "/");
}

/* This build machine: every v1 controller alone, cpu and cpuacct apart. */
Test(mountinfo, hybrid_split_cpu_cpuacct)
{
	const struct moat_cg_hierarchy *cpu, *acct, *mem;

	cr_assert_eq(parse("mountinfo-hybrid-split"), 0);
	cr_expect_eq(l.mode, MOAT_CG_HYBRID);
	cr_expect_str_eq(l.v2.mnt, "/sys/fs/cgroup/unified");
	cpu = moat_cg_layout_find(&l, "cpu");
	acct = moat_cg_layout_find(&l, "cpuacct");
	mem = moat_cg_layout_find(&l, "memory");
	cr_assert(cpu && acct && mem);
	cr_expect_not(cpu->v2);
	cr_expect_str_eq(cpu->mnt, "/sys/fs/cgroup/cpu");
	cr_expect_str_eq(acct->mnt, "/sys/fs/cgroup/cpuacct");
	cr_expect_str_eq(mem->mnt, "/sys/fs/cgroup/memory");
	/* A controller bound to no v1 hierarchy falls to cgroup2. */
	cr_expect(moat_cg_layout_find(&l, "io")->v2);
}

Test(mountinfo, hybrid_systemd_comounted_first_mount_wins)
{
	const struct moat_cg_hierarchy *cpu;

	cr_assert_eq(parse("mountinfo-hybrid-systemd"), 0);
	cr_expect_eq(l.mode, MOAT_CG_HYBRID);
	/* cpu,cpuacct is mounted twice: one hierarchy, the first mount. */
	cr_expect_eq(l.nr_v1, 3);
	cpu = moat_cg_layout_find(&l, "cpu");
	cr_assert_not_null(cpu);
	cr_expect_str_eq(cpu->mnt, "/sys/fs/cgroup/cpu,cpuacct");
	cr_expect_eq(moat_cg_layout_find(&l, "cpuacct"), cpu);
	/* name=systemd is not a controller called systemd. */
	cr_expect(moat_cg_layout_find(&l, "systemd")->v2);
}

Test(mountinfo, legacy)
{
	cr_assert_eq(parse("mountinfo-legacy-systemd"), 0);
	cr_expect_eq(l.mode, MOAT_CG_LEGACY);
	cr_expect_null(moat_cg_layout_find(&l, "io"));
	cr_expect_str_eq(moat_cg_layout_find(&l, "cpu")->mnt,
			 "/sys/fs/cgroup/cpu,cpuacct");
}

Test(mountinfo, escaped_mount_point)
{
	char text[] = "30 22 0:26 / /run/my\\040cgroups\\134x rw - cgroup2 none rw\n";
	FILE *f = fmemopen(text, strlen(text), "r");

	cr_assert_eq(moat_cg_layout_parse(f, "", &l), 0);
	fclose(f);
	cr_expect_str_eq(moat_cg_layout_find(&l, "cpu")->mnt,
			 "/run/my cgroups\\x");
}

Test(mountinfo, container_sees_its_own_subtree)
{
	const struct moat_cg_hierarchy *cpu;
	char dir[PATH_MAX];

	cr_assert_eq(parse("mountinfo-container"), 0);
	cpu = moat_cg_layout_find(&l, "cpu");
	cr_assert_not_null(cpu);
	cr_expect(strstr(cpu->root, "/kubepods.slice/") == cpu->root);

	/* Hierarchy paths map into the mount only below its root. */
	cr_expect_eq(moat_cgroup_dir(cpu, cpu->root, dir, sizeof(dir)), 0);
	cr_expect_str_eq(dir, "/sys/fs/cgroup");
	cr_expect_eq(moat_cgroup_dir(cpu, "/system.slice", dir, sizeof(dir)),
		     -ENOENT);
}

/*
 * A pod with a cgroup namespace of its own (not privileged, cgroup v2):
 * its /sys/fs/cgroup shows its own subtree; the DaemonSet mounts the
 * host's at /host/sys/fs/cgroup, whose root the namespace shows as
 * "/../../..".  Below host root /host, that one is the hierarchy, and its
 * root the hierarchy's; /hostile is not below /host.
 */
Test(mountinfo, a_pods_host_root_finds_the_hosts_mounts)
{
	FILE *f = fixture_open("mountinfo-pod");
	const struct moat_cg_hierarchy *cpu;
	char dir[PATH_MAX], rdt[PATH_MAX];
	bool cdp, mbps;

	cr_assert_not_null(f);
	cr_assert_eq(moat_cg_layout_parse(f, "", &l), 0);
	cr_expect_str_eq(moat_cg_layout_find(&l, "cpu")->mnt, "/sys/fs/cgroup",
			 "without a host root, the pod's own mount comes first");
	rewind(f);
	cr_assert_eq(moat_cg_layout_parse(f, "/host", &l), 0);
	cr_expect_eq(l.mode, MOAT_CG_UNIFIED);
	cpu = moat_cg_layout_find(&l, "cpu");
	cr_assert_not_null(cpu);
	cr_expect_str_eq(cpu->mnt, "/host/sys/fs/cgroup");
	cr_expect_str_eq(cpu->root, "/", "the namespace's /../../.. is the host's root");
	cr_expect_eq(moat_cgroup_dir(cpu, "/kubepods/besteffort", dir, sizeof(dir)), 0);
	cr_expect_str_eq(dir, "/host/sys/fs/cgroup/kubepods/besteffort");
	rewind(f);
	cr_assert_eq(moat_rdt_find_mount(f, "/host", rdt, sizeof(rdt), &cdp, &mbps), 0);
	cr_expect_str_eq(rdt, "/host/sys/fs/resctrl");
	cr_expect(cdp && !mbps);
	rewind(f);
	cr_expect_eq(moat_cg_layout_parse(f, "/srv", &l), 0);
	cr_expect_eq(l.mode, MOAT_CG_NONE, "no cgroup mount below /srv");
	fclose(f);
}

Test(mountinfo, malformed_line_is_an_error)
{
	cr_expect_eq(parse("mountinfo-malformed"), -EINVAL);
}

Test(mountinfo, none)
{
	char text[] = "22 27 0:21 / /proc rw - proc proc rw\n";
	FILE *f = fmemopen(text, strlen(text), "r");

	cr_assert_eq(moat_cg_layout_parse(f, "", &l), 0);
	fclose(f);
	cr_expect_eq(l.mode, MOAT_CG_NONE);
	cr_expect_null(moat_cg_layout_find(&l, "cpu"));
}

static int proc_cgroup(const char *fixture, const char *ctrl, char *path)
{
	FILE *f = fixture_open(fixture);
	int err;

	cr_assert_not_null(f);
	err = moat_proc_cgroup_parse(f, ctrl, path, PATH_MAX);
	fclose(f);
	return err;
}

Test(proc_cgroup, v1_and_v2_lines)
{
	char path[PATH_MAX];

	cr_assert_eq(proc_cgroup("proc-cgroup-hybrid", "cpu", path), 0);
	cr_expect_str_eq(path, "/kubepods/besteffort/pod3f9a");
	cr_assert_eq(proc_cgroup("proc-cgroup-hybrid", "cpuacct", path), 0);
	cr_expect_str_eq(path, "/kubepods/besteffort/pod3f9a");
	cr_assert_eq(proc_cgroup("proc-cgroup-hybrid", NULL, path), 0);
	cr_expect_str_eq(path, "/user.slice/user-1000.slice/session-2.scope");
	cr_expect_eq(proc_cgroup("proc-cgroup-hybrid", "io", path), -ENOENT);
	/* "name=systemd" is not the controller "systemd". */
	cr_expect_eq(proc_cgroup("proc-cgroup-hybrid", "systemd", path), -ENOENT);

	cr_assert_eq(proc_cgroup("proc-cgroup-unified", NULL, path), 0);
	cr_expect_str_eq(path, "/system.slice/nginx.service");
	cr_expect_eq(proc_cgroup("proc-cgroup-unified", "cpu", path), -ENOENT);
}

Test(proc_cgroup, malformed)
{
	char text[] = "garbage without colons\n", path[PATH_MAX];
	FILE *f = fmemopen(text, strlen(text), "r");

	cr_expect_eq(moat_proc_cgroup_parse(f, "cpu", path, sizeof(path)),
		     -EINVAL);
	fclose(f);
}
