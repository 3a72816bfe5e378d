/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_KUBEAPI_H
#define MOATD_KUBEAPI_H

/*
 * A client of the Kubernetes API server, as client-go's in-cluster
 * configuration has it: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
 * the service account's token (re-read for every request: bound tokens
 * rotate) and CA from /var/run/secrets/kubernetes.io/serviceaccount
 * ($MOAT_KUBE_SA_DIR instead, for tests and for moatd outside a pod).
 * The node's name from $NODE_NAME (the downward API), else the host name.
 *
 * Requests block: the Node publisher (kube.c), the pod source (pods.c)
 * and the evictor (evict.c) make them from threads of their own
 * (struct kube_thread), which the control loop asks to stop without
 * waiting for them: a request ends within a second of its thread being
 * asked to stop, and at its thread's deadline whatever it does.
 */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A thread for the API server's requests.  It takes no signal: SIGTERM
 * must reach moatd's signalfd, which puts back what moat changed, not
 * kill the process from the thread.
 */
struct kube_thread {
	pthread_t id;
	void *(*fn)(void *);
	void *arg;
	bool stop;		/* asked to stop (atomic) */
	bool done;		/* fn returned (atomic) */
	long long deadline_ns;	/* CLOCK_MONOTONIC: no request past it; 0: none */
};

struct kube_api {
	char host[256];		/* KUBERNETES_SERVICE_HOST: a name or an address */
	char port[8];
	char server[300];	/* https://host:port, for the log */
	char sa_dir[PATH_MAX];
	char node[256];
	/*
	 * The thread making the requests, if any: they end once it is asked
	 * to stop, unless @finishing (what it does on its way out, such as
	 * withdrawing the Node's hints), and at its deadline in any case.
	 */
	const struct kube_thread *thread;
	bool finishing;
	/* kube/request_timeout_s (read atomically); NULL: 10 s */
	const unsigned int *timeout_s;
};

/*
 * From the environment: 0, -ENOENT when not in a pod (no host, port),
 * -EINVAL (said) when they are not a host and a port.
 */
int kube_api_init(struct kube_api *a);

/* A request's answer was past its @max: said, and no status. */
#define KUBE_API_TOO_LONG	(-2)

/*
 * One request.  Return: the HTTP status, or -1 when there was none
 * (logged unless @quiet; not when its thread stopped it); *@out: the
 * response body, to free, "" for an answer without one (never NULL with
 * a status).  A body past @max bytes is cut off and the request fails:
 * KUBE_API_TOO_LONG.
 */
long kube_api_request(const struct kube_api *a, const char *method,
		      const char *path, const char *type, const char *data,
		      size_t max, bool quiet, char **out);

/*
 * A streamed GET (a watch): @line is called with each line of the body
 * as it comes (without its newline; a line past @max bytes is cut and
 * @line hears of it with @len 0); a non-zero return from @line ends the
 * stream.  @stop is polled at least once a second, true ends it too.
 * @opened, when not NULL, is called once the answer is a 2xx: the stream
 * is open, whether or not a line comes.
 * Return: the HTTP status, or -1 as kube_api_request(); a body that was
 * not 2xx comes in *@err_body (to free).
 */
long kube_api_stream(const struct kube_api *a, const char *path, long timeout_s,
		     size_t max, int (*line)(const char *l, size_t len, void *ctx),
		     bool (*stop)(void *ctx), void (*opened)(void *ctx), void *ctx,
		     bool quiet, char **err_body);

/*
 * A GET whose 2xx body goes to @chunk as it comes, never held (a list of
 * pods: podmeta.h's stream); a non-zero return from @chunk ends the
 * request, and the caller knows why.  Return: the HTTP status, or -1 as
 * kube_api_request(); an answer that was not 2xx comes in *@err_body (to
 * free; NULL without a status), cut off past @max bytes
 * (KUBE_API_TOO_LONG).
 */
long kube_api_get_chunks(const struct kube_api *a, const char *path, size_t max,
			 int (*chunk)(const char *p, size_t len, void *ctx), void *ctx,
			 bool quiet, char **err_body);

/* Whether @status is a 2xx. */
static inline bool kube_api_ok(long status)
{
	return status >= 200 && status < 300;
}

/* Start @t running @fn(@arg).  Return: 0, or -EAGAIN (logged). */
int kube_thread_start(struct kube_thread *t, void *(*fn)(void *), void *arg);
/*
 * Ask @t to stop, its requests to end by @deadline_ns (CLOCK_MONOTONIC,
 * kube_mono_ns()); the caller wakes it if it waits on a condition of its
 * own.  Does not wait.
 */
void kube_thread_stop(struct kube_thread *t, long long deadline_ns);
bool kube_thread_stopping(const struct kube_thread *t);
/* Whether @t's function returned: a join will not wait. */
bool kube_thread_done(const struct kube_thread *t);
/*
 * Join @t, waiting until @by_ns at most.  Return: 0, or -ETIMEDOUT: it
 * still runs, and what it uses must stay.
 */
int kube_thread_join(struct kube_thread *t, long long by_ns);
long long kube_mono_ns(void);

/*
 * A core/v1 Event on pod @ns/@name (@uid) from moatd on this node:
 * @reason (CamelCase), @type ("Normal" or "Warning"), @message; its
 * JSON, to free (NULL: no memory).  POST it to
 * /api/v1/namespaces/@ns/events.
 */
char *kube_event_json(const struct kube_api *a, const char *ns, const char *name,
		      const char *uid, const char *reason, const char *type,
		      const char *message);
/* @s escaped for a URL's query. */
void kube_api_escape(const char *s, char *out, size_t len);

#endif /* MOATD_KUBEAPI_H */
