// SPDX-License-Identifier: GPL-2.0-only
/*
 * What moatd reads of /proc: /proc/self/mountinfo (the cgroup layout and
 * the resctrl mount) and /proc/PID/cgroup, for every controller it asks
 * for, v1 and v2.
 */
#include "fuzz.h"
#include "cgroup.h"
#include "mountinfo.h"
#include "resctrl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const controllers[] = { "cpu", "cpuacct", "memory", NULL };
	struct moat_cg_layout layout;
	char path[PATH_MAX];
	bool cdp, mbps;
	unsigned int i;
	FILE *f;

	f = fuzz_file(data, size);
	if (!f)
		return 0;
	if (!moat_cg_layout_parse(f, "", &layout)) {
		fuzz_check(layout.nr_v1 <= MOAT_CG_MAX_V1);
		for (i = 0; controllers[i]; i++) {
			const struct moat_cg_hierarchy *h =
				moat_cg_layout_find(&layout, controllers[i]);

			fuzz_check(!h || memchr(h->mnt, 0, sizeof(h->mnt)));
		}
	}
	rewind(f);
	if (!moat_cg_layout_parse(f, "/host", &layout) && layout.has_v2)
		fuzz_check(!strncmp(layout.v2.mnt, "/host", 5));
	rewind(f);
	if (!moat_rdt_find_mount(f, "", path, sizeof(path), &cdp, &mbps))
		fuzz_check(strlen(path) < sizeof(path));
	for (i = 0; i < 4; i++) {
		rewind(f);
		if (!moat_proc_cgroup_parse(f, controllers[i], path, sizeof(path)))
			fuzz_check(strlen(path) < sizeof(path));
	}
	fclose(f);
	return 0;
}
