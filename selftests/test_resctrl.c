// SPDX-License-Identifier: GPL-2.0-only
/*
 * resctrl against FAKE resctrl trees: this machine has no RDT, so each
 * test builds, in a temporary directory, the files a resctrl mount has,
 * in the kernel's formats (Documentation/filesystems/resctrl.rst): an
 * Intel layout with CDP off and on (the latter with the padding kernels
 * before v6.15 print), an AMD one whose cache ids jump from 7 to 16, and
 * one whose schemata write fails with last_cmd_status saying why.  What
 * the fakes cannot show, the kernel's own checks, is on real hardware
 * (Documentation/resctrl.rst says how to verify there).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include "helpers.h"
#include "peek.h"
#include "resctrl.h"

static char root[PATH_MAX];
static char why[512];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX * 2], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static char *get(const char *rel)
{
	static char buf[4096];
	char path[PATH_MAX * 2];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void fake_root(void)
{
	snprintf(root, sizeof(root), "/tmp/moat-fake-resctrl-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	put("info/last_cmd_status", "ok\n");
	put("info/L3_MON/mon_features", "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
	put("info/L3_MON/num_rmids", "224\n");
}

/* Intel, two sockets, 11 ways, MBA in steps of 10%. */
static void fake_intel(bool cdp)
{
	fake_root();
	if (cdp) {
		put("info/L3CODE/cbm_mask", "7ff\n");
		put("info/L3CODE/min_cbm_bits", "1\n");
		put("info/L3CODE/num_closids", "8\n");
		put("info/L3CODE/shareable_bits", "600\n");
		put("info/L3DATA/cbm_mask", "7ff\n");
		put("info/L3DATA/min_cbm_bits", "1\n");
		put("info/L3DATA/num_closids", "8\n");
		put("info/L3DATA/shareable_bits", "600\n");
		/* before v6.15: names right-aligned, values padded */
		put("schemata", "L3CODE:0=7ff;1=7ff\nL3DATA:0=7ff;1=7ff\n    MB:0= 100;1= 100\n");
	} else {
		put("info/L3/cbm_mask", "7ff\n");
		put("info/L3/min_cbm_bits", "1\n");
		put("info/L3/num_closids", "16\n");
		put("info/L3/shareable_bits", "600\n");
		put("info/L3/sparse_masks", "0\n");
		put("schemata", "L3:0=7ff;1=7ff\nMB:0=100;1=100\n");
	}
	put("info/MB/bandwidth_gran", "10\n");
	put("info/MB/min_bandwidth", "10\n");
	put("info/MB/delay_linear", "1\n");
	put("info/MB/num_closids", "8\n");
}

/* AMD: 16 ways, L3 ids 0-7 then 16-23 (Koordinator issue 1777). */
static void fake_amd(void)
{
	char s[1024];
	size_t n = 0;
	int i, pass;

	fake_root();
	put("info/L3/cbm_mask", "ffff\n");
	put("info/L3/min_cbm_bits", "1\n");
	put("info/L3/num_closids", "16\n");
	put("info/L3/shareable_bits", "0\n");
	put("info/MB/bandwidth_gran", "1\n");
	put("info/MB/min_bandwidth", "0\n");
	put("info/MB/delay_linear", "0\n");
	put("info/MB/num_closids", "16\n");
	for (pass = 0; pass < 2; pass++) {
		n += snprintf(s + n, sizeof(s) - n, pass ? "MB:" : "L3:");
		for (i = 0; i < 24; i++)
			if (i < 8 || i >= 16)
				n += snprintf(s + n, sizeof(s) - n, "%s%d=%s",
					      i ? ";" : "", i, pass ? "2048" : "ffff");
		n += snprintf(s + n, sizeof(s) - n, "\n");
	}
	put("schemata", s);
}

static void cleanup(void)
{
	char cmd[PATH_MAX + 16];

	fake_resctrl_stop();
	if (root[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", root);
	}
}

TestSuite(resctrl, .fini = cleanup);

Test(resctrl, intel_info_from_a_fake_tree)
{
	struct moat_rdt_info in;
	const struct moat_rdt_res *l3, *mb;

	fake_intel(false);
	cr_assert_eq(moat_rdt_info_read(root, false, false, &in, why, sizeof(why)), 0,
		     "%s", why);
	cr_assert_eq(in.nres, 2);
	l3 = moat_rdt_res_find(&in, "L3");
	mb = moat_rdt_res_find(&in, "MB");
	cr_assert(l3 && mb);
	cr_expect_eq(l3->kind, MOAT_RDT_CACHE);
	cr_expect_eq(l3->cbm_mask, 0x7ff);
	cr_expect_eq(l3->shareable_bits, 0x600);
	cr_expect_eq(l3->min_cbm_bits, 1);
	cr_expect_not(l3->sparse);
	cr_expect_eq(mb->unit, MOAT_RDT_MB_PERCENT);
	cr_expect_eq(mb->gran, 10);
	cr_expect_eq(mb->max_bw, 100);
	cr_expect_eq(in.num_closids, 8, "the least of L3's 16 and MB's 8");
	cr_expect_not(in.cdp);
	cr_expect_eq(in.num_rmids, 224);
	cr_expect(in.llc_occupancy && in.mbm_total && in.mbm_local);
}

Test(resctrl, cdp_and_the_padded_format_before_6_15)
{
	struct moat_rdt_info in;
	struct moat_schemata s;
	struct moat_rdt_line *mb;

	fake_intel(true);
	cr_assert_eq(moat_rdt_info_read(root, false, false, &in, why, sizeof(why)), 0,
		     "%s", why);
	cr_expect(in.cdp);
	cr_expect_eq(in.nres, 3);
	cr_assert_eq(moat_schemata_parse(get("schemata"), &s, why, sizeof(why)), 0,
		     "%s", why);
	cr_assert_eq(s.n, 3);
	cr_expect_str_eq(s.line[0].name, "L3CODE");
	cr_expect_eq(s.line[1].val[1], 0x7ff);
	mb = moat_schemata_line(&s, "MB");
	cr_assert_not_null(mb, "the right-aligned name '    MB'");
	cr_expect_eq(mb->n, 2);
	cr_expect_eq(mb->val[0], 100);
	cr_expect_eq(mb->val[1], 100);
}

Test(resctrl, amd_cache_ids_jump_and_bandwidth_is_absolute)
{
	struct moat_rdt_info in;
	struct moat_schemata cur, want;
	const struct moat_rdt_res *mb;
	struct moat_rdt_line *l3;
	unsigned int v;
	char buf[1024];

	fake_amd();
	cr_assert_eq(moat_rdt_info_read(root, true, false, &in, why, sizeof(why)), 0,
		     "%s", why);
	mb = moat_rdt_res_find(&in, "MB");
	cr_assert_not_null(mb);
	cr_expect_eq(mb->unit, MOAT_RDT_MB_ABSOLUTE);
	cr_expect_eq(mb->max_bw, 2048, "from the default group's schemata");
	cr_assert_eq(moat_rdt_mb_value(mb, 50, &v, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(v, 1024);

	cr_assert_eq(moat_schemata_parse(get("schemata"), &cur, why, sizeof(why)), 0,
		     "%s", why);
	l3 = moat_schemata_line(&cur, "L3");
	cr_assert_eq(l3->n, 16);
	cr_expect_eq(l3->id[7], 7);
	cr_expect_eq(l3->id[8], 16, "not 8: ids are the hardware's");
	cr_expect_eq(l3->id[15], 23);
	/* one domain changes: only it is written */
	want = cur;
	want.n = 1;
	want.line[0].val[8] = 0xff;
	cr_assert_eq(moat_schemata_diff(&in, &cur, &want, buf, sizeof(buf), why,
					sizeof(why)), 9, "%s", why);
	cr_expect_str_eq(buf, "L3:16=ff\n");
	/* an id the hardware does not have is an error */
	want.line[0].id[8] = 8;
	cr_expect_eq(moat_schemata_diff(&in, &cur, &want, buf, sizeof(buf), why,
					sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "no cache id 8"), "%s", why);
}

Test(resctrl, masks_follow_the_hardware_rules)
{
	struct moat_rdt_res r = { .name = "L3", .kind = MOAT_RDT_CACHE,
				  .cbm_mask = 0x7ff, .min_cbm_bits = 2 };

	cr_expect_eq(moat_rdt_check_cbm(&r, 0x00f, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(moat_rdt_check_cbm(&r, 0, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "empty"), "%s", why);
	cr_expect_eq(moat_rdt_check_cbm(&r, 0xf00, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "outside cbm_mask 7ff"), "%s", why);
	cr_expect_eq(moat_rdt_check_cbm(&r, 0x010, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "min_cbm_bits 2"), "%s", why);
	cr_expect_eq(moat_rdt_check_cbm(&r, 0x303, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "not contiguous"), "%s", why);
	r.sparse = true;
	cr_expect_eq(moat_rdt_check_cbm(&r, 0x303, why, sizeof(why)), 0, "%s", why);

	cr_expect_eq(moat_rdt_ways_mask(&r, 3, false), 0x007);
	cr_expect_eq(moat_rdt_ways_mask(&r, 3, true), 0x700);
	cr_expect_eq(moat_rdt_ways_mask(&r, 11, true), 0x7ff);
	cr_expect_eq(moat_rdt_ways_mask(&r, 12, false), 0, "more ways than there are");
}

Test(resctrl, intel_bandwidth_rounds_up_to_the_granularity)
{
	struct moat_rdt_res r = { .name = "MB", .kind = MOAT_RDT_MB,
				  .unit = MOAT_RDT_MB_PERCENT, .gran = 10,
				  .min_bw = 10, .max_bw = 100 };
	unsigned int v;

	cr_assert_eq(moat_rdt_mb_value(&r, 25, &v, why, sizeof(why)), 0);
	cr_expect_eq(v, 30);
	cr_assert_eq(moat_rdt_mb_value(&r, 4, &v, why, sizeof(why)), 0);
	cr_expect_eq(v, 10, "min_bandwidth");
	cr_expect_eq(moat_rdt_mb_value(&r, 0, &v, why, sizeof(why)), -EINVAL);
	cr_expect_eq(moat_rdt_mb_value(&r, 101, &v, why, sizeof(why)), -EINVAL);
	r.unit = MOAT_RDT_MB_MBPS;
	cr_expect_eq(moat_rdt_mb_value(&r, 50, &v, why, sizeof(why)), -EOPNOTSUPP);
	cr_expect(strstr(why, "mba_MBps"), "%s", why);
}

/* Only what changes, and a bad value anywhere writes nothing. */
Test(resctrl, a_write_carries_only_the_changes_and_is_all_or_nothing)
{
	struct moat_rdt_info in;
	struct moat_schemata cur, want;
	char buf[256], dir[PATH_MAX + 8];
	int n;

	fake_intel(false);
	put("be/schemata", "L3:0=7ff;1=7ff\nMB:0=100;1=100\n");
	cr_assert_eq(moat_rdt_info_read(root, false, false, &in, why, sizeof(why)), 0,
		     "%s", why);
	cr_assert_eq(moat_schemata_parse(get("be/schemata"), &cur, why, sizeof(why)), 0);
	want = cur;
	want.line[0].val[0] = 0x007;
	want.line[0].val[1] = 0x007;
	n = moat_schemata_diff(&in, &cur, &want, buf, sizeof(buf), why, sizeof(why));
	cr_assert_eq(n, 11, "%d: %s", n, why);
	cr_expect_str_eq(buf, "L3:0=7;1=7\n", "the MB line is unchanged: not written");
	/* the fake records the bytes written, and nothing else */
	put("be/schemata", "");
	snprintf(dir, sizeof(dir), "%s/be", root);
	cr_assert_eq(moat_rdt_write(NULL, root, dir, buf, why, sizeof(why)), 0,
		     "%s", why);
	cr_expect_str_eq(get("be/schemata"), "L3:0=7;1=7\n", "the exact bytes");

	want.line[1].val[1] = 35;	/* not a step of 10 */
	cr_expect_eq(moat_schemata_diff(&in, &cur, &want, buf, sizeof(buf), why,
					sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "bandwidth_gran 10"), "%s", why);
	cr_expect_eq(moat_schemata_diff(&in, &cur, &cur, buf, sizeof(buf), why,
					sizeof(why)), 0, "nothing changes: nothing to write");
}

/*
 * A write the kernel refuses: the fake's schemata is /dev/full, whose
 * writes fail (ENOSPC), and last_cmd_status holds what the kernel would
 * say; it must reach the error verbatim.
 */
Test(resctrl, a_refused_write_reports_last_cmd_status_verbatim)
{
	char dir[PATH_MAX + 8], link[PATH_MAX + 24];

	fake_intel(false);
	put("info/last_cmd_status", "L3:0=3 Mask out of range\n");
	snprintf(dir, sizeof(dir), "%s/be", root);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(link, sizeof(link), "%s/schemata", dir);
	cr_assert_eq(symlink("/dev/full", link), 0);
	cr_assert_eq(moat_rdt_write(NULL, root, dir, "L3:0=3\n", why, sizeof(why)), -ENOSPC);
	cr_expect(strstr(why, ": L3:0=3 Mask out of range"), "%s", why);
	cr_expect(strstr(why, "write 'L3:0=3' to "), "%s", why);
}

Test(resctrl, bad_files_are_named)
{
	struct moat_rdt_info in;
	struct moat_schemata s;

	fake_intel(false);
	put("info/L3/cbm_mask", "zz\n");
	cr_expect_eq(moat_rdt_info_read(root, false, false, &in, why, sizeof(why)),
		     -EINVAL);
	cr_expect(strstr(why, "info/L3/cbm_mask: not a number"), "%s", why);
	cr_expect_eq(moat_schemata_parse("L3:0=7ff;x=1\n", &s, why, sizeof(why)),
		     -EINVAL);
	cr_expect(strstr(why, "line 1 (L3): bad domain"), "%s", why);
	cr_expect_eq(moat_schemata_parse("MB:0=abc\n", &s, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "bad value"), "%s", why);
	cr_expect_eq(moat_rdt_info_read("/nonexistent", false, false, &in, why,
					sizeof(why)), -ENOENT);
}

Test(resctrl, the_mount_and_its_options_from_mountinfo)
{
	const char *mi =
		"22 1 0:20 / /sys rw,nosuid - sysfs sysfs rw\n"
		"35 22 0:30 / /sys/fs/cgroup rw shared:9 - cgroup2 cgroup2 rw\n"
		"40 22 0:35 / /sys/fs/res\\040ctrl rw,relatime shared:20 - resctrl resctrl rw,cdp,mba_MBps\n";
	FILE *f = fmemopen((void *)mi, strlen(mi), "r");
	char mnt[64];
	bool cdp = false, mbps = false;

	cr_assert_eq(moat_rdt_find_mount(f, "", mnt, sizeof(mnt), &cdp, &mbps), 0);
	fclose(f);
	cr_expect_str_eq(mnt, "/sys/fs/res ctrl", "unescaped");
	cr_expect(cdp && mbps);

	f = fmemopen((void *)mi, strstr(mi, "40 22") - mi, "r");
	cr_expect_eq(moat_rdt_find_mount(f, "", mnt, sizeof(mnt), &cdp, &mbps), -ENOENT);
	fclose(f);

	f = fmemopen((void *)"processor\t: 0\nvendor_id\t: AuthenticAMD\n", 38, "r");
	cr_expect(moat_rdt_cpu_is_amd(f));
	fclose(f);
	f = fmemopen((void *)"vendor_id\t: GenuineIntel\n", 25, "r");
	cr_expect_not(moat_rdt_cpu_is_amd(f));
	fclose(f);
}

/* Groups moat did not create hold CLOSIDs too; too few: no room. */
Test(resctrl, closids_are_counted_with_the_groups_of_others)
{
	struct moat_rdt_info in;
	char **names;
	int n, i;

	fake_intel(false);
	put("info/MB/num_closids", "4\n");	/* a layout with few */
	put("theirs/schemata", "L3:0=7ff;1=7ff\nMB:0=100;1=100\n");
	put("batch/schemata", "L3:0=7ff;1=7ff\nMB:0=100;1=100\n");
	put("mon_groups/m1/tasks", "");
	put("mon_data/mon_L3_00/llc_occupancy", "0\n");
	cr_assert_eq(moat_rdt_info_read(root, false, false, &in, why, sizeof(why)), 0,
		     "%s", why);
	n = moat_rdt_groups(root, &names);
	cr_assert_eq(n, 2, "info, mon_groups and mon_data are not groups");
	cr_expect_str_eq(names[0], "batch");
	cr_expect_str_eq(names[1], "theirs");
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	cr_expect_eq(moat_rdt_closids_left(&in, 2), 1, "4 - default - 2 others");
	cr_expect_eq(moat_rdt_closids_left(&in, 3), 0);
	cr_expect_eq(moat_rdt_closids_left(&in, 9), 0);
}

/* @ways of every cache, from the lowest, and @mb% of the bandwidth. */
static int compose(const struct moat_rdt_info *in, const struct moat_schemata *dflt,
		   unsigned int ways, unsigned int mb, struct moat_schemata *out)
{
	struct moat_rdt_alloc a = { .l3 = { .all = ways }, .mb_pct = mb };

	return moat_rdt_compose(in, dflt, &a, out, why, sizeof(why));
}

Test(resctrl, composed_schemata_for_each_layout)
{
	struct moat_rdt_info in;
	struct moat_schemata dflt, want, cur;
	char buf[1024];

	fake_intel(false);
	cr_assert_eq(moat_rdt_info_read(root, false, false, &in, why, sizeof(why)), 0);
	cr_assert_eq(moat_schemata_parse(get("schemata"), &dflt, why, sizeof(why)), 0);
	cr_assert_eq(compose(&in, &dflt, 3, 25, &want), 0,
		     "%s", why);
	cr_assert_gt(moat_schemata_diff(&in, &dflt, &want, buf, sizeof(buf), why,
					sizeof(why)), 0, "%s", why);
	cr_expect_str_eq(buf, "L3:0=7;1=7\nMB:0=30;1=30\n");
	cr_expect_eq(compose(&in, &dflt, 12, 100, &want),
		     -EINVAL);
	cr_expect(strstr(why, "L3:0: 12 ways, and it has 11"), "%s", why);
	cleanup();

	fake_intel(true);
	cr_assert_eq(moat_rdt_info_read(root, false, false, &in, why, sizeof(why)), 0);
	cr_assert_eq(moat_schemata_parse(get("schemata"), &dflt, why, sizeof(why)), 0);
	cr_assert_eq(compose(&in, &dflt, 2, 100, &want), 0,
		     "%s", why);
	cr_assert_gt(moat_schemata_diff(&in, &dflt, &want, buf, sizeof(buf), why,
					sizeof(why)), 0, "%s", why);
	cr_expect_str_eq(buf, "L3CODE:0=3;1=3\nL3DATA:0=3;1=3\n",
			 "the same ways for code and data; MB all: unchanged");
	cleanup();

	fake_amd();
	cr_assert_eq(moat_rdt_info_read(root, true, false, &in, why, sizeof(why)), 0);
	cr_assert_eq(moat_schemata_parse(get("schemata"), &dflt, why, sizeof(why)), 0);
	cr_assert_eq(compose(&in, &dflt, 4, 50, &want), 0,
		     "%s", why);
	cr_assert_eq(want.line[0].n, 16);
	cr_expect_eq(want.line[0].id[15], 23);
	cr_expect_eq(want.line[0].val[15], 0xf);
	cr_expect_eq(want.line[1].val[9], 1024);
	/* a group already at that: nothing to write */
	cur = want;
	cr_expect_eq(moat_schemata_diff(&in, &cur, &want, buf, sizeof(buf), why,
					sizeof(why)), 0);
}

Test(resctrl, ways_per_cache_id_from_the_high_end_and_capped)
{
	struct moat_rdt_alloc a = { .mb_pct = 100 };
	struct moat_rdt_info in;
	struct moat_schemata dflt, want;
	char buf[1024];

	cr_assert_eq(moat_rdt_ways_parse("6;16=4;23=2", &a.l3, why, sizeof(why)), 0,
		     "%s", why);
	cr_expect_eq(a.l3.all, 6);
	cr_expect_eq(moat_rdt_ways_for(&a.l3, 16), 4);
	cr_expect_eq(moat_rdt_ways_for(&a.l3, 7), 6);
	cr_assert_eq(moat_rdt_ways_parse("0=4;1=6", &a.l3, why, sizeof(why)), 0);
	cr_expect_eq(a.l3.all, 0, "unnamed caches: every way");
	cr_expect_eq(moat_rdt_ways_parse("4;x=2", &a.l3, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "'4;x=2': not ways"), "%s", why);
	cr_expect_eq(moat_rdt_ways_parse("0=4;0=2", &a.l3, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "cache 0 twice"), "%s", why);
	cr_expect_eq(moat_rdt_ways_parse("65", &a.l3, why, sizeof(why)), -EINVAL);
	cr_expect_eq(moat_rdt_ways_parse("4;5", &a.l3, why, sizeof(why)), -EINVAL);

	fake_amd();
	cr_assert_eq(moat_rdt_info_read(root, true, false, &in, why, sizeof(why)), 0);
	cr_assert_eq(moat_schemata_parse(get("schemata"), &dflt, why, sizeof(why)), 0);
	cr_assert_eq(moat_rdt_ways_parse("6;16=4;23=2", &a.l3, why, sizeof(why)), 0);
	a.high = true;
	cr_assert_eq(moat_rdt_compose(&in, &dflt, &a, &want, why, sizeof(why)), 0,
		     "%s", why);
	cr_expect_eq(want.line[0].val[0], 0xfc00, "6 ways from the top");
	cr_expect_eq(want.line[0].val[8], 0xf000, "cache 16: 4 ways");
	cr_expect_eq(want.line[0].val[15], 0xc000, "cache 23: 2 ways");
	a.high = false;
	a.cap = 3;		/* the controller's limit */
	cr_assert_eq(moat_rdt_compose(&in, &dflt, &a, &want, why, sizeof(why)), 0);
	cr_expect_eq(want.line[0].val[0], 0x7);
	cr_expect_eq(want.line[0].val[15], 0x3, "under the cap already");
	cr_assert_gt(moat_schemata_diff(&in, &dflt, &want, buf, sizeof(buf), why,
					sizeof(why)), 0);
	cr_expect(!strncmp(buf, "L3:0=7;1=7;", 11), "%s", buf);
	cr_assert_eq(moat_rdt_ways_parse("8=4", &a.l3, why, sizeof(why)), 0);
	cr_expect_eq(moat_rdt_compose(&in, &dflt, &a, &want, why, sizeof(why)), -EINVAL,
		     "AMD has no cache 8 here");
	cr_expect_str_eq(why, "no L3 cache 8 here");
}

Test(resctrl, only_tids_not_ours_and_not_anyone_elses_move)
{
	const __u32 want[] = { 10, 11, 12, 13, 20 }, ours[] = { 11, 30 },
		    foreign[] = { 5, 13 };
	__u32 out[5];

	cr_assert_eq(moat_rdt_tids_to_move(want, 5, ours, 2, foreign, 2, out), 3);
	cr_expect_eq(out[0], 10);
	cr_expect_eq(out[1], 12);
	cr_expect_eq(out[2], 20);
	cr_expect_eq(moat_rdt_tids_to_move(want, 5, NULL, 0, NULL, 0, out), 5);
}

/* One tid per write: the fake tasks file (O_APPEND) keeps each write. */
Test(resctrl, tasks_are_written_one_tid_per_write)
{
	const __u32 tids[] = { 101, 202, 303 };
	char dir[PATH_MAX + 8];
	__u32 *read;
	size_t gone;

	fake_intel(false);
	put("be/tasks", "");
	snprintf(dir, sizeof(dir), "%s/be", root);
	cr_assert_eq(moat_rdt_add_tasks(NULL, dir, tids, 3, &gone), 3);
	cr_expect_eq(gone, 0);
	cr_expect_str_eq(get("be/tasks"), "101\n202\n303\n");
	put("be/tasks", "303\n7\n101\n");
	cr_assert_eq(moat_rdt_read_tids(dir, &read), 3);
	cr_expect(read[0] == 7 && read[1] == 101 && read[2] == 303, "sorted");
	free(read);
	snprintf(dir, sizeof(dir), "%s/gone", root);
	cr_expect_eq(moat_rdt_add_tasks(NULL, dir, tids, 3, &gone), -ENOENT);
}

/*
 * On the FAKE resctrl mount (a FUSE file system that behaves as the
 * kernel does): tasks go one per write, a tid that does not exist is
 * ESRCH and skipped, the next still moves; rmdir gives the tasks back to
 * the default group; a refused schemata write reports last_cmd_status.
 */
Test(resctrl, tasks_on_a_fake_mount_one_per_write_a_vanished_tid_skipped)
{
	char mnt[PATH_MAX], grp[PATH_MAX + 16], st[256];
	const char *skip = fake_resctrl_start("--layout intel", mnt, sizeof(mnt));
	__u32 tids[3], *in = NULL;
	size_t gone = 0;
	ssize_t n, i;
	bool back = false;
	pid_t child;

	if (skip)
		cr_skip_test("%s", skip);
	snprintf(grp, sizeof(grp), "%s/g", mnt);
	cr_assert_eq(mkdir(grp, 0755), 0, "%s", strerror(errno));
	child = fork();
	if (!child) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	tids[0] = getpid() < child ? getpid() : child;
	tids[1] = 4194304;	/* above any pid_max: no such task */
	tids[2] = getpid() < child ? child : getpid();
	n = moat_rdt_add_tasks(NULL, grp, tids, 3, &gone);
	cr_expect_eq(n, 2, "moved %zd", n);
	cr_expect_eq(gone, 1);
	cr_expect_eq(moat_rdt_read_tids(grp, &in), 2);
	cr_expect(in && in[0] == tids[0] && in[1] == tids[2]);
	free(in);
	cr_assert_eq(moat_rdt_read(mnt, "info/last_cmd_status", st, sizeof(st)), 0);
	cr_expect_str_eq(st, "ok", "each write is a command of its own");

	cr_expect_eq(moat_rdt_write(NULL, mnt, grp, "L3:0=5\n", why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, ": Invalid argument: The mask 5 has non-consecutive 1-bits"),
		  "%s", why);

	cr_assert_eq(rmdir(grp), 0);
	n = moat_rdt_read_tids(mnt, &in);
	for (i = 0; i < n; i++)
		back |= in[i] == (__u32)child;
	cr_expect(back, "the child is back in the default group");
	free(in);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	fake_resctrl_stop();
}
