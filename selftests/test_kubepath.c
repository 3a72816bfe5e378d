// SPDX-License-Identifier: GPL-2.0-only
/* Pod and container cgroups as kubelet names them, for both drivers. */
#include <errno.h>
#include <stdio.h>
#include <criterion/criterion.h>
#include "kubepath.h"

#define UID	"0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define UID_	"0a1b2c3d_4e5f_6789_abcd_ef0123456789"
#define CID	"4c1a9b5e8f2d3c7a6b0e1f9d8c2b4a7e6f3d5c1b9a8e7f6d5c4b3a2e1f0d9c8b"

static struct moat_kube_path k;

static int parse(const char *path)
{
	return moat_kube_parse_path(path, &k);
}

Test(kubepath, cgroupfs_besteffort_container)
{
	cr_assert_eq(parse("/kubepods/besteffort/pod" UID "/" CID), 0);
	cr_expect_eq(k.driver, MOAT_KUBE_CGROUPFS);
	cr_expect_eq(k.level, MOAT_KUBE_CONTAINER);
	cr_expect_eq(k.qos, MOAT_KUBE_BESTEFFORT);
	cr_expect_str_eq(k.pod_uid, UID);
	cr_expect_str_eq(k.container_id, CID);
	cr_expect_str_eq(k.runtime, "");
}

Test(kubepath, cgroupfs_levels)
{
	cr_assert_eq(parse("/kubepods"), 0);
	cr_expect_eq(k.level, MOAT_KUBE_ROOT);
	cr_assert_eq(parse("/kubepods/burstable"), 0);
	cr_expect_eq(k.level, MOAT_KUBE_QOS);
	cr_expect_eq(k.qos, MOAT_KUBE_BURSTABLE);
	cr_assert_eq(parse("/kubepods/burstable/pod" UID), 0);
	cr_expect_eq(k.level, MOAT_KUBE_POD);
	cr_expect_str_eq(k.pod_uid, UID);
}

Test(kubepath, cgroupfs_guaranteed_directly_under_kubepods)
{
	cr_assert_eq(parse("/kubepods/pod" UID "/" CID), 0);
	cr_expect_eq(k.qos, MOAT_KUBE_GUARANTEED);
	cr_expect_eq(k.level, MOAT_KUBE_CONTAINER);
	cr_expect_str_eq(k.pod_uid, UID);
}

Test(kubepath, cgroupfs_crio_and_cgroup_root)
{
	/* kubelet --cgroup-root=/kubelet, as kind nodes use */
	cr_assert_eq(parse("/kubelet/kubepods/besteffort/pod" UID "/crio-" CID), 0);
	cr_expect_str_eq(k.runtime, "crio");
	cr_expect_str_eq(k.container_id, CID);
}

Test(kubepath, systemd_each_runtime)
{
	static const char *const scopes[][2] = {
		{ "cri-containerd-" CID ".scope", "containerd" },
		{ "crio-" CID ".scope", "crio" },
		{ "docker-" CID ".scope", "docker" },
	};
	char path[512];
	unsigned int i;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path),
			 "/kubepods.slice/kubepods-besteffort.slice/"
			 "kubepods-besteffort-pod" UID_ ".slice/%s", scopes[i][0]);
		cr_assert_eq(parse(path), 0, "%s", path);
		cr_expect_eq(k.driver, MOAT_KUBE_SYSTEMD);
		cr_expect_eq(k.level, MOAT_KUBE_CONTAINER);
		cr_expect_eq(k.qos, MOAT_KUBE_BESTEFFORT);
		cr_expect_str_eq(k.pod_uid, UID);	/* '_' back to '-' */
		cr_expect_str_eq(k.runtime, scopes[i][1]);
		cr_expect_str_eq(k.container_id, CID);
	}
}

Test(kubepath, systemd_burstable_and_guaranteed)
{
	cr_assert_eq(parse("/kubepods.slice/kubepods-burstable.slice/"
			   "kubepods-burstable-pod" UID_ ".slice"), 0);
	cr_expect_eq(k.qos, MOAT_KUBE_BURSTABLE);
	cr_expect_eq(k.level, MOAT_KUBE_POD);

	cr_assert_eq(parse("/kubepods.slice/kubepods-pod" UID_ ".slice/"
			   "cri-containerd-" CID ".scope"), 0);
	cr_expect_eq(k.qos, MOAT_KUBE_GUARANTEED);
	cr_expect_eq(k.level, MOAT_KUBE_CONTAINER);
	cr_expect_str_eq(k.pod_uid, UID);
}

Test(kubepath, below_a_container_is_that_container)
{
	cr_assert_eq(parse("/kubepods/burstable/pod" UID "/" CID "/init.scope"), 0);
	cr_expect_eq(k.level, MOAT_KUBE_CONTAINER);
	cr_expect_str_eq(k.container_id, CID);
}

Test(kubepath, outside_kubepods)
{
	cr_expect_eq(parse("/"), -ENOENT);
	cr_expect_eq(parse("/system.slice/nginx.service"), -ENOENT);
	cr_expect_eq(parse("/kubepodsx/besteffort"), -ENOENT);
}

Test(kubepath, malformed_inside_kubepods)
{
	/* QoS slice of the wrong tier for its parent */
	cr_expect_eq(parse("/kubepods.slice/kubepods-besteffort.slice/"
			   "kubepods-burstable-pod" UID_ ".slice"), -EINVAL);
	/* systemd scope without a runtime prefix */
	cr_expect_eq(parse("/kubepods.slice/kubepods-pod" UID_ ".slice/"
			   CID ".scope"), -EINVAL);
	/* not hex */
	cr_expect_eq(parse("/kubepods/besteffort/podXYZ"), -EINVAL);
	cr_expect_eq(parse("/kubepods/besteffort/pod" UID "/not-a-container"),
		     -EINVAL);
	cr_expect_eq(parse("/kubepods/gold"), -EINVAL);
	cr_expect_eq(parse("/kubepods.slice/kubepods-besteffort.slice/"
			   "kubepods-besteffort-pod" UID_), -EINVAL);
}
