// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kubernetes pod and container cgroups, by name.  kubelet lays them out
 * (pkg/kubelet/cm/cgroup_manager_linux.go, qos_container_manager_linux.go):
 *
 *   cgroupfs: kubepods/[burstable|besteffort/]pod<uid>/<container>
 *   systemd:  kubepods.slice/[kubepods-<qos>.slice/]
 *             kubepods[-<qos>]-pod<uid with _ for ->.slice/<scope>
 *
 * and the container runtime names the container's own cgroup: a bare id
 * or "crio-<id>" under cgroupfs; "cri-containerd-<id>.scope",
 * "crio-<id>.scope" or "docker-<id>.scope" under systemd.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "kubepath.h"

static const struct {
	const char *prefix;
	const char *runtime;
} runtimes[] = {
	{ "cri-containerd-", "containerd" },
	{ "crio-", "crio" },
	{ "docker-", "docker" },
};

static bool all_of(const char *s, size_t n, const char *set)
{
	return n && strspn(s, set) >= n;
}

/* Copy pod UID @s of length @n, turning systemd's '_' back into '-'. */
static int set_uid(struct moat_kube_path *out, const char *s, size_t n)
{
	size_t i;

	if (n >= sizeof(out->pod_uid) || !all_of(s, n, "0123456789abcdef-_"))
		return -EINVAL;
	for (i = 0; i < n; i++)
		out->pod_uid[i] = s[i] == '_' ? '-' : s[i];
	out->pod_uid[n] = '\0';
	return 0;
}

static bool eat(const char **s, size_t *n, const char *prefix)
{
	size_t p = strlen(prefix);

	if (*n < p || strncmp(*s, prefix, p))
		return false;
	*s += p;
	*n -= p;
	return true;
}

static bool eat_suffix(const char *s, size_t *n, const char *suffix)
{
	size_t p = strlen(suffix);

	if (*n < p || strncmp(s + *n - p, suffix, p))
		return false;
	*n -= p;
	return true;
}

static int parse_container(struct moat_kube_path *out, const char *s, size_t n)
{
	size_t i;

	if (out->driver == MOAT_KUBE_SYSTEMD && !eat_suffix(s, &n, ".scope"))
		return -EINVAL;
	out->runtime[0] = '\0';
	for (i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++) {
		if (eat(&s, &n, runtimes[i].prefix)) {
			strcpy(out->runtime, runtimes[i].runtime);
			break;
		}
	}
	/* systemd scopes always name their runtime. */
	if (!out->runtime[0] && out->driver == MOAT_KUBE_SYSTEMD)
		return -EINVAL;
	if (n < 12 || n >= sizeof(out->container_id) ||
	    !all_of(s, n, "0123456789abcdef"))
		return -EINVAL;
	memcpy(out->container_id, s, n);
	out->container_id[n] = '\0';
	out->level = MOAT_KUBE_CONTAINER;
	return 0;
}

/* The QoS tier's name inside a component, or -1. */
static int eat_qos(const char **s, size_t *n)
{
	if (eat(s, n, "burstable"))
		return MOAT_KUBE_BURSTABLE;
	if (eat(s, n, "besteffort"))
		return MOAT_KUBE_BESTEFFORT;
	return -1;
}

/* One path component below kubepods, in order. */
static int parse_component(struct moat_kube_path *out, const char *s, size_t n)
{
	bool systemd = out->driver == MOAT_KUBE_SYSTEMD;
	int qos;

	switch (out->level) {
	case MOAT_KUBE_ROOT:
		/* A QoS tier, or a guaranteed pod. */
		if (systemd && (!eat(&s, &n, "kubepods-") ||
				!eat_suffix(s, &n, ".slice")))
			return -EINVAL;
		qos = eat_qos(&s, &n);
		if (qos >= 0) {
			if (n)
				return -EINVAL;
			out->qos = qos;
			out->level = MOAT_KUBE_QOS;
			return 0;
		}
		out->qos = MOAT_KUBE_GUARANTEED;
		break;
	case MOAT_KUBE_QOS:
		if (systemd && (!eat(&s, &n, "kubepods-") ||
				eat_qos(&s, &n) != (int)out->qos ||
				!eat(&s, &n, "-") || !eat_suffix(s, &n, ".slice")))
			return -EINVAL;
		break;
	case MOAT_KUBE_POD:
		return parse_container(out, s, n);
	case MOAT_KUBE_CONTAINER:
		return 0;
	}
	if (!eat(&s, &n, "pod"))
		return -EINVAL;
	out->level = MOAT_KUBE_POD;
	return set_uid(out, s, n);
}

int moat_kube_parse_path(const char *path, struct moat_kube_path *out)
{
	const char *s = path, *end;
	bool found = false;
	int err;

	memset(out, 0, sizeof(*out));
	for (; *s; s = *end ? end + 1 : end) {
		size_t n;

		end = strchrnul(s, '/');
		n = end - s;
		if (!n)
			continue;
		if (!found) {
			if (n == 8 && !strncmp(s, "kubepods", 8)) {
				out->driver = MOAT_KUBE_CGROUPFS;
				found = true;
			} else if (n == 14 && !strncmp(s, "kubepods.slice", 14)) {
				out->driver = MOAT_KUBE_SYSTEMD;
				found = true;
			}
			continue;
		}
		err = parse_component(out, s, n);
		if (err)
			return err;
	}
	return found ? 0 : -ENOENT;
}

const char *moat_kube_qos_name(enum moat_kube_qos qos)
{
	switch (qos) {
	case MOAT_KUBE_GUARANTEED:
		return "guaranteed";
	case MOAT_KUBE_BURSTABLE:
		return "burstable";
	case MOAT_KUBE_BESTEFFORT:
		return "besteffort";
	}
	return "unknown";
}
