// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-kubestub: the tests' stub of the Kubernetes API server
 * (selftests/kubestub.h, a fake: no API server runs here) as a program,
 * for the eviction benchmark (tools/bench/evict.sh).  It serves the pods
 * given, and when an eviction is accepted it does kubelet's part: the
 * pod's processes are killed (cgroup.kill), its cgroups removed and the
 * pod deleted from the API.
 *
 *   moat-kubestub SA_DIR ENV_FILE LOG POD...
 *
 * POD is UID:NAMESPACE:NAME:CLASS:PRIORITY:CGROUP_DIR (CLASS lc, be or
 * "" for none: the moat.io/class label), or +N for N pods more, for the
 * memory benchmark (tools/bench/scale.sh): "bench/bench-I" with the UID
 * 00000000-0000-4000-8000-I (I from 1, 12 digits), two containers and
 * the kubectl.kubernetes.io/last-applied-configuration annotation that
 * `kubectl apply` leaves (about 2.5 KiB), so that a pod weighs what a
 * real one does in a list (4 KiB, where the API server's managedFields
 * would add more).  ENV_FILE gets the environment
 * a pod's moatd finds it by (export lines, for sh's "."); LOG a line per
 * eviction: "evicted NS/NAME asked AT gone AT", seconds of
 * CLOCK_REALTIME.  It serves until SIGTERM or SIGINT.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "kubestub.h"

#define PODS_MAX	16

static struct {
	char uid[40], ns[64], name[64], class[8], dir[PATH_MAX];
	int priority;
} pods[PODS_MAX];
static int nr_pods;
static long generated;
static FILE *evlog;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return -errno;
	if (fputs(s, f) < 0)
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* Whether cgroup @dir still has a process (cgroup.events "populated 1"). */
static bool populated(const char *dir)
{
	char path[PATH_MAX + 32], line[64];
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, "populated 1\n"))
			yes = true;
	fclose(f);
	return yes;
}

/* @dir and the cgroups under it, deepest first. */
static void remove_cgroup(const char *dir)
{
	char sub[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)))
		if (e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) < (int)sizeof(sub))
			remove_cgroup(sub);
	if (d)
		closedir(d);
	if (rmdir(dir))
		fprintf(stderr, "moat-kubestub: rmdir %s: %s\n", dir, strerror(errno));
}

/* As kubelet, once the eviction is accepted: the pod's processes and cgroups go. */
static void evicted(const char *ns, const char *name)
{
	char kill_file[PATH_MAX + 16];
	double asked = now_s();
	int i, t, err;

	for (i = 0; i < nr_pods; i++) {
		if (strcmp(pods[i].ns, ns) || strcmp(pods[i].name, name))
			continue;
		snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", pods[i].dir);
		err = write_str(kill_file, "1");
		if (err)
			fprintf(stderr, "moat-kubestub: %s: %s\n", kill_file, strerror(-err));
		for (t = 0; t < 500 && populated(pods[i].dir); t++)
			usleep(10000);
		remove_cgroup(pods[i].dir);
		stub_pod_delete(pods[i].uid);
		fprintf(evlog, "evicted %s/%s asked %.3f gone %.3f\n", ns, name, asked, now_s());
		fflush(evlog);
		return;
	}
	fprintf(evlog, "evicted %s/%s asked %.3f unknown\n", ns, name, asked);
	fflush(evlog);
}

/* The +N pods: as `kubectl apply` leaves them. */
static void generate(long n)
{
	char uid[48], name[32], meta[4096], ctrs[256], applied[2600];
	long i;

	/* last-applied-configuration: the pod's own spec as JSON in a string */
	snprintf(applied, sizeof(applied), "%s", "{\\\"apiVersion\\\":\\\"v1\\\"");
	while (strlen(applied) < sizeof(applied) - 64)
		strcat(applied, ",\\\"x\\\":\\\"0123456789abcdef0123456789abcdef\\\"");
	strcat(applied, "}");
	for (i = 1; i <= n; i++) {
		snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012ld", i);
		snprintf(name, sizeof(name), "bench-%ld", i);
		snprintf(meta, sizeof(meta),
			 "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"%s\"}",
			 applied);
		snprintf(ctrs, sizeof(ctrs), "main=%064ld,sidecar=%063ld1", i, i);
		stub_pod_meta(uid, "bench", name, "\"app\":\"bench\"", "", 0, "ReplicaSet",
			      meta, ctrs);
	}
}

static int parse_pod(char *arg)
{
	char *f[6], *p = arg, *end;
	int i;

	if (*arg == '+') {
		errno = 0;
		generated = strtol(arg + 1, &end, 10);
		return errno || *end || generated < 1 || generated > 1000000 ? -EINVAL : 0;
	}

	for (i = 0; i < 6; i++) {
		f[i] = strsep(&p, ":");
		if (!f[i])
			break;
	}
	if (i < 6 || p || nr_pods == PODS_MAX || strlen(f[0]) >= sizeof(pods[0].uid) ||
	    strlen(f[1]) >= sizeof(pods[0].ns) || strlen(f[2]) >= sizeof(pods[0].name) ||
	    strlen(f[3]) >= sizeof(pods[0].class) || strlen(f[5]) >= sizeof(pods[0].dir))
		return -EINVAL;
	strcpy(pods[nr_pods].uid, f[0]);
	strcpy(pods[nr_pods].ns, f[1]);
	strcpy(pods[nr_pods].name, f[2]);
	strcpy(pods[nr_pods].class, f[3]);
	pods[nr_pods].priority = atoi(f[4]);
	strcpy(pods[nr_pods].dir, f[5]);
	nr_pods++;
	return 0;
}

int main(int argc, char **argv)
{
	char labels[64], env[PATH_MAX + 256];
	struct MHD_Daemon *api;
	unsigned int port;
	sigset_t set;
	int i, sig;

	if (argc < 4) {
		fprintf(stderr, "usage: moat-kubestub SA_DIR ENV_FILE LOG UID:NS:NAME:CLASS:PRIORITY:CGROUP_DIR...\n");
		return 2;
	}
	for (i = 4; i < argc; i++)
		if (parse_pod(argv[i])) {
			fprintf(stderr, "moat-kubestub: pod '%s': expected UID:NS:NAME:CLASS:PRIORITY:CGROUP_DIR or +N (1 to 1000000)\n",
				argv[i]);
			return 2;
		}
	evlog = fopen(argv[3], "a");
	if (!evlog) {
		fprintf(stderr, "moat-kubestub: %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	/* SIGTERM and SIGINT are waited for, not delivered to a thread */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	api = stub_serve(argv[1], &port);
	if (!api)
		return 1;
	for (i = 0; i < nr_pods; i++) {
		labels[0] = '\0';
		if (pods[i].class[0])
			snprintf(labels, sizeof(labels), "\"moat.io/class\":\"%s\"", pods[i].class);
		stub_pod_ex(pods[i].uid, pods[i].ns, pods[i].name, labels, "", pods[i].priority,
			    "", "");
	}
	generate(generated);
	stub_on_evict(evicted);
	snprintf(env, sizeof(env),
		 "export KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=%u "
		 "NODE_NAME=test-node MOAT_KUBE_SA_DIR=%s\n", port, argv[1]);
	i = write_str(argv[2], env);
	if (i) {
		fprintf(stderr, "moat-kubestub: %s: %s\n", argv[2], strerror(-i));
		stub_stop(api);
		return 1;
	}
	sigwait(&set, &sig);
	fprintf(stderr, "moat-kubestub: evictions %d, events %d\n", stub_posts("eviction", ""),
		stub_posts("events", ""));
	stub_stop(api);
	fclose(evlog);
	return 0;
}
