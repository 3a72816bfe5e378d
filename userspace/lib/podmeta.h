/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_PODMETA_H
#define MOAT_PODMETA_H

/*
 * What moat reads of a Kubernetes Pod object (core/v1), and of the watch
 * events and lists that carry them: the API's documented JSON, parsed
 * with json-c.  Only what moat uses is kept; a field of the wrong type
 * or size is the whole object refused, with the reason.
 */
#include <stdbool.h>
#include <stddef.h>

#define MOAT_POD_UID_MAX	37	/* a UUID, with dashes */
#define MOAT_POD_NS_MAX		64	/* a DNS label: 63 */
#define MOAT_POD_NAME_MAX	254	/* a DNS subdomain: 253 */
#define MOAT_POD_CTR_NAME_MAX	64	/* a DNS label: 63 */
#define MOAT_POD_CTR_ID_MAX	65	/* the runtime's id, 64 hex digits */
#define MOAT_POD_CONTAINERS	32	/* kept per pod; more are unnamed */
#define MOAT_POD_RV_MAX		64	/* a resourceVersion */

struct moat_pod_list_stream;

/* The label that classes a pod, and its values (enum moat_class's names). */
#define MOAT_POD_CLASS_LABEL	"moat.io/class"

/* No label; a label with a value that is no class (said, then ignored). */
#define MOAT_POD_LABEL_NONE	(-1)
#define MOAT_POD_LABEL_BAD	(-2)

/* A CPU limit past this (millicores) is no limit a node can have. */
#define MOAT_POD_CPU_MAX_M	(1LL << 40)

struct moat_pod_container {
	char id[MOAT_POD_CTR_ID_MAX];	/* without "containerd://" */
	char name[MOAT_POD_CTR_NAME_MAX];
	long long cpu_limit_m;		/* spec's limits.cpu, millicores; -1: none */
};

/* A pod's own run-queue p99 target, in microseconds, by annotation. */
#define MOAT_POD_TARGET_ANNOTATION	"moat.io/rqlat-p99-target-us"
#define MOAT_POD_TARGET_MAX_US		10000000

struct moat_pod_meta {
	char uid[MOAT_POD_UID_MAX];
	char ns[MOAT_POD_NS_MAX];
	char name[MOAT_POD_NAME_MAX];
	char priority_class[MOAT_POD_NAME_MAX];	/* "": none */
	long long priority;			/* spec.priority, 0 when absent */
	char qos[16];				/* status.qosClass, "" when absent */
	int label_class;	/* enum moat_class, or MOAT_POD_LABEL_NONE/BAD */
	bool daemonset;		/* an ownerReference of kind DaemonSet */
	bool mirror;		/* a static pod's mirror (kubernetes.io/config.mirror) */
	bool controlled;	/* an ownerReference with controller true: made again */
	bool terminating;	/* metadata.deletionTimestamp: on its way out */
	bool job;		/* an ownerReference of kind Job: batch work */
	/*
	 * The annotation MOAT_POD_TARGET_ANNOTATION: the pod's run-queue
	 * p99 target, 1 .. MOAT_POD_TARGET_MAX_US; 0: none; -1: a value that
	 * is none of them, kept cut (printable) in target_value for the log.
	 */
	long long rqlat_target_us;
	char target_value[32];
	char label_value[MOAT_POD_CTR_NAME_MAX];	/* a bad value, cut, for the log */
	/*
	 * The CPU limit the spec asks of its own cgroup, millicores, as
	 * kubelet makes its quota (moat_pod_cpu_limit_m()); -1: none.  The
	 * spec's: an in-place resize is here before kubelet writes it.
	 */
	long long cpu_limit_m;
	size_t nr_containers;
	struct moat_pod_container c[MOAT_POD_CONTAINERS];
};

/**
 * moat_cpu_quantity_m() - a CPU quantity in millicores.
 * @s: a resource.Quantity as the API sends it ("250m", "2", "1.5",
 *     "1e3", "2k"; k8s.io/apimachinery/pkg/api/resource)
 * @m: out: rounded up, as Quantity.MilliValue() rounds
 *
 * Return: 0; -EINVAL where @s is no quantity, or negative, or past
 * MOAT_POD_CPU_MAX_M.
 */
int moat_cpu_quantity_m(const char *s, long long *m);

enum moat_watch_type {
	MOAT_WATCH_ADDED,
	MOAT_WATCH_MODIFIED,
	MOAT_WATCH_DELETED,
	MOAT_WATCH_BOOKMARK,
	MOAT_WATCH_ERROR,
};

struct moat_watch_event {
	enum moat_watch_type type;
	struct moat_pod_meta pod;	/* ADDED, MODIFIED, DELETED */
	char rv[MOAT_POD_RV_MAX];	/* the object's resourceVersion */
	int code;			/* ERROR: the Status's code (410: Gone) */
};

/**
 * moat_pod_meta_parse() - a Pod object's JSON text, as a list's item or
 * a GET gives it.
 *
 * Return: 0; -EINVAL with the reason in @why (no UID, a name too long,
 * a field of the wrong type, not JSON).
 */
int moat_pod_meta_parse(const char *json, size_t len, struct moat_pod_meta *out,
			char *rv, char *why, size_t whylen);

/**
 * moat_watch_event_parse() - one line of a watch stream: {"type": ...,
 * "object": ...}.
 *
 * Return: 0; -EINVAL with the reason in @why (an unknown type, a
 * malformed object).
 */
int moat_watch_event_parse(const char *line, size_t len,
			   struct moat_watch_event *out, char *why, size_t whylen);

/**
 * moat_pod_list_parse() - a PodList: @fn called with each pod that
 * parses (a pod that does not is counted in *@bad and its reason left in
 * @why); the list's resourceVersion and continue token in @rv and @cont
 * ("" when none).
 *
 * Return: 0; -EINVAL when the list itself is malformed (reason in @why);
 * what @fn returned when it was not 0.
 */
int moat_pod_list_parse(const char *json, size_t len,
			int (*fn)(const struct moat_pod_meta *pod, void *ctx),
			void *ctx, char *rv, char *cont, size_t cont_len,
			size_t *bad, char *why, size_t whylen);

/**
 * moat_pod_list_stream_new() - a PodList parsed as its text arrives, a
 * pod at a time: what it holds is one item's text (at most @item_max
 * bytes, a pod, and the chunk that brought it), never the list's.  @fn
 * as for moat_pod_list_parse().
 *
 * Return: the parser, or NULL when out of memory.
 */
struct moat_pod_list_stream *moat_pod_list_stream_new(size_t item_max,
		int (*fn)(const struct moat_pod_meta *pod, void *ctx), void *ctx);

/**
 * moat_pod_list_stream_feed() - the next @len bytes of the list's text;
 * @fn is called with each pod they complete.
 *
 * Return: 0; the first error (-EINVAL for text that cannot be a list,
 * -E2BIG for an item past its limit, -ENOMEM, or what @fn returned),
 * after which the rest is not read: moat_pod_list_stream_end() says why.
 */
int moat_pod_list_stream_feed(struct moat_pod_list_stream *s, const char *text, size_t len);

/**
 * moat_pod_list_stream_end() - the text ended: what moat_pod_list_parse()
 * returns and sets, for the whole of it (an error fed earlier included).
 */
int moat_pod_list_stream_end(struct moat_pod_list_stream *s, char *rv, char *cont,
			     size_t cont_len, size_t *bad, char *why, size_t whylen);

void moat_pod_list_stream_free(struct moat_pod_list_stream *s);

/* The container whose runtime id is @id, or NULL. */
const struct moat_pod_container *moat_pod_container(const struct moat_pod_meta *p,
						    const char *id);

#endif /* MOAT_PODMETA_H */
