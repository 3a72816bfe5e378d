/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_SELFTESTS_KUBESTUB_H
#define MOAT_SELFTESTS_KUBESTUB_H

/*
 * A stub of the Kubernetes API server: a fake (this machine runs no API
 * server) that answers what moatd asks as the API documents it.  HTTPS
 * (libmicrohttpd, a self-signed certificate made with openssl for
 * 127.0.0.1), a thread per connection so that a watch can stream.
 *
 *  - One node "test-node" with a taint, an annotation and a condition of
 *    others', resourceVersion "7" and one more at each change; GET of it,
 *    and PATCH of it and of its status with a merge patch or a strategic
 *    merge patch (conditions merged by type, "$patch": "delete"), a
 *    resourceVersion in the patch a precondition (409), as the API server
 *    applies them (the first status patch answers 500, to see moatd
 *    retry).
 *  - Pods: GET /api/v1/pods lists them (fieldSelector spec.nodeName,
 *    limit and continue honoured; a PodList with the list's
 *    resourceVersion), and with watch=1 streams their changes after the
 *    resourceVersion asked for, one JSON event a line (ADDED, MODIFIED,
 *    DELETED, BOOKMARK when asked for, ERROR 410 for a version compacted
 *    away), until timeoutSeconds or the test closes it.
 *  - Evictions and Events: POSTs recorded and answered (below).
 *
 * Every request is recorded, for the tests to look at.
 */
#include <stdbool.h>
#include <microhttpd.h>

struct stub_req {
	char method[8], path[128], type[64], auth[128];
	char query[512];	/* watch, resourceVersion, fieldSelector... */
	char body[8192];
};

/*
 * Start it, HTTPS on a free port of 127.0.0.1, with a service account
 * made in directory @sa (a token, "t0ken-123", and the CA): its daemon
 * and *@port, or NULL with the reason on stderr.  A pod's moatd finds it
 * with KUBERNETES_SERVICE_HOST=127.0.0.1, KUBERNETES_SERVICE_PORT=*@port,
 * MOAT_KUBE_SA_DIR=@sa and NODE_NAME=test-node.
 */
struct MHD_Daemon *stub_serve(const char *sa, unsigned int *port);
/*
 * The next stub_serve()'s certificate names @san (openssl's
 * subjectAltName, "IP:127.0.0.2"), not 127.0.0.1: a server whose name is
 * not the one asked for.
 */
void stub_cert_san(const char *san);
/*
 * For a test (moatd_harness.c): stub_serve() in the test's dir, and
 * moatd_env[] set as above, for the next start; skips without openssl.
 */
struct MHD_Daemon *stub_start(void);
void stub_stop(struct MHD_Daemon *api);

/* The newest request of @method on @path whose body has @has and lacks @lacks. */
bool stub_seen(const char *method, const char *path, const char *has,
	       const char *lacks, struct stub_req *got);
bool wait_stub(const char *method, const char *path, const char *has,
	       const char *lacks, struct stub_req *got, int ms);
/* The node as it is now, malloc()ed. */
char *stub_node_json(void);
/* The node's annotation @key, its condition @type's @field: false when none. */
bool stub_node_annotation(const char *key, char *out, size_t len);
bool stub_node_condition(const char *type, const char *field, char *out, size_t len);
/* Whether the node has a taint of key @key. */
bool stub_node_taint(const char *key);
/* Another writer sets annotation @key to @val (NULL: removes it). */
void stub_node_annotate(const char *key, const char *val);
/* Status patches of the node seen. */
int stub_status_patches(void);
/* Requests of @method on @path whose query has @has. */
int stub_count(const char *method, const char *path, const char *has);
/* Requests other than GET, the first of them said in @first ("" none). */
int stub_writes(char *first, size_t len);
/*
 * The value of @key ("" when it has none) in the query of the newest GET
 * of @path whose query has @has, in @out; false when there is no such
 * request or it lacks @key.
 */
bool stub_query_value(const char *path, const char *has, const char *key, char *out,
		      size_t len);

/*
 * A pod on test-node, added or changed (ADDED or MODIFIED to the
 * watches): @labels a JSON object's members ("" none), @priority_class
 * "" for none, @containers "name=id,name=id".
 */
void stub_pod(const char *uid, const char *ns, const char *name,
	      const char *labels, const char *priority_class,
	      const char *containers);
/* The same with its spec.priority and an owner of kind @owner_kind ("": none). */
void stub_pod_ex(const char *uid, const char *ns, const char *name,
		 const char *labels, const char *priority_class, int priority,
		 const char *owner_kind, const char *containers);
/* The same with more members of its metadata, @meta ("": none). */
void stub_pod_meta(const char *uid, const char *ns, const char *name,
		   const char *labels, const char *priority_class, int priority,
		   const char *owner_kind, const char *meta, const char *containers);
/*
 * A pod with containers in its spec, each with a CPU limit (and that
 * request): @limits "name=quantity,name=quantity" ("250m", "1").
 */
void stub_pod_cpu(const char *uid, const char *ns, const char *name,
		  const char *containers, const char *limits);
/* A pod on another node: listed only without the field selector. */
void stub_pod_elsewhere(const char *uid, const char *ns, const char *name);
void stub_pod_delete(const char *uid);
/* A line to every watch as it is (a malformed event, an unknown type). */
void stub_raw_event(const char *line);
/* Bookmarks to the watches that asked for them, at the latest version. */
void stub_bookmark(void);
/* Versions before now are compacted away: watches from them get 410. */
void stub_compact(void);
/* Every watch, whatever its version, gets 410 (@on), or as usual again. */
void stub_gone_always(bool on);
/* End every open watch (as timeoutSeconds does). */
void stub_close_watches(void);
/* The next @n pod requests answer HTTP @status (401, 500...). */
void stub_fail_pods(int status, int n);
/*
 * Evictions (POST .../pods/<name>/eviction, policy/v1) answer 201 Created,
 * or the next @n answer @status (429, 404, 500...); @fn, if set, is called
 * with each pod whose eviction was answered 2xx, as kubelet would then
 * kill it.  Events (POST .../events) answer 201.
 */
void stub_evict_answer(int status, int n);
/* The next eviction is answered only after @ms (past moatd's 10 s timeout). */
void stub_evict_delay(int ms);
/* Evictions being answered now (one held by stub_evict_delay()). */
int stub_evicts_in_progress(void);
void stub_on_evict(void (*fn)(const char *ns, const char *name));
/* POSTs of @what ("eviction" or "events") seen, for pod @name ("": any). */
int stub_posts(const char *what, const char *name);

/*
 * The next @n requests of @method whose path starts with @prefix are
 * answered HTTP @status with @body as it is ("": no body at all), what a
 * proxy or a misbehaving API server may send; a path with a query is
 * matched without it.
 */
void stub_odd_answer(const char *method, const char *prefix, int status,
		     const char *body, int n);
/* PATCHes of the node and its status are answered only after @ms. */
void stub_patch_delay(int ms);

/* The latest resourceVersion. */
unsigned long stub_rv(void);

#endif /* MOAT_SELFTESTS_KUBESTUB_H */
