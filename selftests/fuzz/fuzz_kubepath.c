// SPDX-License-Identifier: GPL-2.0-only
/*
 * Cgroup paths as kubelet and the runtimes name them (anyone who can
 * make a cgroup can make any name): what parses has a level, a QoS and
 * ids that fit their fields.
 */
#include "fuzz.h"
#include "kubepath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_kube_path kp;
	char *path = fuzz_string(data, size, 4096);

	if (!path)
		return 0;
	if (!moat_kube_parse_path(path, &kp)) {
		fuzz_check(kp.level <= MOAT_KUBE_CONTAINER);
		fuzz_check(kp.driver <= MOAT_KUBE_SYSTEMD);
		fuzz_check(memchr(kp.pod_uid, 0, sizeof(kp.pod_uid)));
		fuzz_check(memchr(kp.runtime, 0, sizeof(kp.runtime)));
		fuzz_check(memchr(kp.container_id, 0, sizeof(kp.container_id)));
		if (kp.level >= MOAT_KUBE_QOS)
			fuzz_check(moat_kube_qos_name(kp.qos) != NULL);
	}
	free(path);
	return 0;
}
