// SPDX-License-Identifier: GPL-2.0-only
/* The capabilities moat uses (caps.h), asked of the kernel with capget. */
#include <unistd.h>
#include <sys/syscall.h>

#include "caps.h"

const struct moat_cap_use moat_cap_uses[] = {
	{ CAP_BPF, "CAP_BPF", "the BPF programs and maps (with CAP_PERFMON); without: run-queue delay from /proc/<tid>/schedstat, no blame" },
	{ CAP_PERFMON, "CAP_PERFMON", "tracing BPF programs and per-cgroup PMU counters; without: schedstat, no CPI" },
	{ CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE", "writing root's cgroup and resctrl files as another uid; without: enforce mode cannot write them" },
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "mounting resctrl (resctrl/mount) and BPF run-time statistics; before v5.8 all of BPF" },
	{ CAP_SYS_NICE, "CAP_SYS_NICE", "the per-task wake-up levers on kubelet pods' threads (sched_setattr(2) of another user's threads, or of threads with a capability moatd lacks: every container's); without: only the CPU quota on pods" },
	{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE", "the memlock limit libbpf raises on kernels before v5.11" },
	{ 0, NULL, NULL },
};

bool moat_cap_effective(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	if (cap < 0 || cap >= 64 || syscall(SYS_capget, &h, data))
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}
