/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_KUBEPATH_H
#define MOAT_KUBEPATH_H

enum moat_kube_driver {
	MOAT_KUBE_CGROUPFS,	/* kubepods/burstable/pod<uid>/<id> */
	MOAT_KUBE_SYSTEMD,	/* kubepods.slice/kubepods-burstable.slice/... */
};

enum moat_kube_level {
	MOAT_KUBE_ROOT,		/* kubepods itself */
	MOAT_KUBE_QOS,		/* the burstable or besteffort tier */
	MOAT_KUBE_POD,
	MOAT_KUBE_CONTAINER,
};

enum moat_kube_qos {
	MOAT_KUBE_GUARANTEED,	/* pods sit directly under kubepods */
	MOAT_KUBE_BURSTABLE,
	MOAT_KUBE_BESTEFFORT,
};

struct moat_kube_path {
	enum moat_kube_driver driver;
	enum moat_kube_level level;
	enum moat_kube_qos qos;		/* meaningful from MOAT_KUBE_QOS on */
	char pod_uid[37];		/* with dashes, as the API server has it */
	char runtime[16];		/* "containerd", "crio", "docker", or "" */
	char container_id[65];
};

/**
 * moat_kube_parse_path() - what a cgroup path says about the pod and
 * container in it, for both kubelet cgroup drivers.  kubepods may sit
 * anywhere in the path (kubelet's --cgroup-root).  Cgroups below a
 * container's are reported as that container.
 *
 * Return: 0, -ENOENT for a path outside kubepods, -EINVAL for a path
 * inside it that does not follow kubelet's naming.
 */
int moat_kube_parse_path(const char *path, struct moat_kube_path *out);

const char *moat_kube_qos_name(enum moat_kube_qos qos);

#endif /* MOAT_KUBEPATH_H */
