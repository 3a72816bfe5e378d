// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatd and an API server that misbehaves (the stub, kubestub.h): no
 * answer crashes it, whatever a 2xx carries; and at stop, what moatd
 * changed in the kernel is back before it waits for the network, which
 * waits no longer than kube/stop_timeout_s; a knob that stops a thread
 * of the API server's does not wait for it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include "helpers.h"
#include "kubestub.h"
#include "moatd_harness.h"

#define WEB_UID		"0a1b2c3d-4e5f-6789-abcd-ef0123456789"

/* moatd has not exited (it would be a zombie of ours). */
static bool alive(void)
{
	return daemon_pid > 0 && waitpid(daemon_pid, NULL, WNOHANG) == 0;
}

/*
 * The next request of @method on @prefix gets HTTP @status with @body
 * (an open watch is ended, for the next one to get it); moatd must ask
 * for it within @ms, and live through the answer.
 */
static void odd(const char *method, const char *prefix, int status, const char *body,
		int ms)
{
	int before = stub_count(method, prefix, NULL), i;

	stub_odd_answer(method, prefix, status, body, 1);
	stub_close_watches();
	for (i = 0; i < ms / 100 && stub_count(method, prefix, NULL) == before; i++)
		sleep_ms(100);
	cr_assert_gt(stub_count(method, prefix, NULL), before,
		     "no %s %s in %d ms to answer %d '%s'", method, prefix, ms, status, body);
	sleep_ms(300);		/* moatd reads it */
	cr_assert(alive(), "moatd died of %s %s answered %d '%s'", method, prefix, status,
		  body);
	cr_assert_eq(ctl(out, err, "get", "kube/errors", NULL), 0,
		     "moatd does not answer after %s %s answered %d '%s': %s", method,
		     prefix, status, body, err);
}

Test(moatd, no_answer_of_the_api_server_crashes_moatd, .init = own_moatd)
{
	static const char *const lists[] = {
		"",					/* no body at all */
		"not JSON",
		"{\"kind\":\"PodList\",\"items\":5}",	/* the wrong type */
		/* cut off */
		("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},"
		 "\"items\":[{\"metadata\":{\"uid\":"),
	};
	static const char *const nodes[] = {
		"",
		"<html>gateway</html>",
		"[]",
		"{\"metadata\":{\"resourceVersion\":7},\"spec\":{\"taints\":\"none\"}}",
		"{\"spec\":{\"taints\":[1,\"a\",null,{\"key\":5}]}}",
	};
	struct MHD_Daemon *api;
	size_t i;

	host_only("the API server's odd answers");

	stop(&daemon_pid);
	api = stub_start();
	stub_pod(WEB_UID, "shop", "frontend", "", "", "");
	/* the first list is answered oddly before moatd asks */
	stub_odd_answer("GET", "/api/v1/pods", 200, lists[0], 1);
	/* the node updated every second, whether its hints moved or not */
	start_with_config("kubesafe.conf", "period_ms = 100\nhttp/listen = \n"
			  "rules/web = web-* lc\nkube/publish = 1\nkube/interval_ms = 200\n"
			  "kube/resync_s = 1\n");
	moatd_env[0] = NULL;
	/*
	 * Each odd answer once moatd is in step again: its backoff doubles
	 * with each failure in a row (1 s to 5 min), and answers that came
	 * one after the other took the test from 27 s past its 60 (a failed
	 * CI run): what each shows is that moatd lives and comes back.
	 */
	for (i = 1; i < sizeof(lists) / sizeof(lists[0]); i++) {
		cr_assert(wait_knob("kube/pods_state", "synced", 300), "the pods never synced: %s",
			  out);
		odd("GET", "/api/v1/pods", 200, lists[i], 30000);
	}
	/* the watch, answered with nothing, then with a line that is no event */
	cr_assert(wait_knob("kube/pods_state", "synced", 300), "the pods never synced: %s", out);
	odd("GET", "/api/v1/pods", 200, "", 15000);
	cr_assert(wait_knob("kube/pods_state", "synced", 300), "the watch never came back: %s",
		  out);
	odd("GET", "/api/v1/pods", 200, "{\"type\":\"ADDED\",\"object\":[]}\n", 15000);
	cr_expect(wait_knob("kube/pods_state", "synced", 300), "the watch never came back: %s",
		  out);

	/* the Node publisher: its read of the node, then its patches, each
	   after an update (its backoff back to none) */
	cr_assert_geq(wait_number("kube/updates", 1, 10000), 1, "the node never updated");
	for (i = 0; i <= sizeof(nodes) / sizeof(nodes[0]); i++) {
		double updates;

		if (i < sizeof(nodes) / sizeof(nodes[0]))
			odd("GET", "/api/v1/nodes/test-node", 200, nodes[i], 10000);
		else
			odd("PATCH", "/api/v1/nodes/test-node", 200, "", 10000);
		/* and it goes on: an update made since, the answers right */
		updates = wait_number("kube/updates", 0, 0);
		cr_assert_geq(wait_number("kube/updates", updates + 1, 10000), updates + 1,
			      "no update after the odd answer %zu", i);
	}
	cr_expect(wait_log("get node: HTTP 200, but not a JSON object", 1, 0),
		  "a node that is no object was not said");
	cr_expect(wait_log("spec.taints is not a list", 1, 0),
		  "taints that are no list were not said");
	cr_expect(alive());
	stop(&daemon_pid);
	stub_stop(api);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1e3 + (now.tv_nsec - t0->tv_nsec) / 1e6;
}

/*
 * SIGTERM to a moatd that holds a BE group and publishes to @api (NULL:
 * the API server is gone): how long until the group's files are back,
 * and until moatd exited.
 */
static void sigterm_times(struct MHD_Daemon *api, double *restored_ms, double *exited_ms)
{
	struct timespec t0;
	char now[4096];
	int status;

	*restored_ms = *exited_ms = -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(daemon_pid, SIGTERM);
	while (ms_since(&t0) < 30000 && (*restored_ms < 0 || *exited_ms < 0)) {
		if (*restored_ms < 0) {
			snapshot(&be_cg, now, sizeof(now));
			if (!strcmp(now, be_before))
				*restored_ms = ms_since(&t0);
		}
		if (*exited_ms < 0 && waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
			*exited_ms = ms_since(&t0);
			daemon_pid = 0;
		}
		sleep_ms(2);
	}
	cr_log_info("SIGTERM with the API server %s: the files back after %.0f ms, "
		    "moatd gone after %.0f ms", api ? "answering a PATCH after 30 s" : "gone",
		    *restored_ms, *exited_ms);
}

/* moatd's log lines about the API server, for a failure's message. */
static void log_kube_lines(void)
{
	char path[PATH_MAX], *text, *line, *save;

	snprintf(path, sizeof(path), "%s/moatd.log", dir);
	text = slurp(path);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		if (strstr(line, "kube"))
			cr_log_info("moatd: %.300s", line);
	free(text);
}

/* Throttling, and publishing: the stub saw the taint. */
static struct MHD_Daemon *enforce_and_publish(void)
{
	struct MHD_Daemon *api;
	struct stub_req r;

	stop(&daemon_pid);
	api = stub_start();
	start_with_config("kubesafe.conf", "period_ms = 100\nhttp/listen = 127.0.0.1:0\n"
			  "rules/web = web-* lc\nrules/batch = batch-* be\n"
			  "kube/publish = 1\nkube/interval_ms = 200\nkube/pods = 0\n"
			  "kube/stop_timeout_s = 2\n");
	moatd_env[0] = NULL;
	contend("enforce");
	cr_assert_geq(wait_throttled(100), 0, "the hog's group was never throttled");
	expect_throttled();
	if (!wait_stub("PATCH", "/api/v1/nodes/test-node", "moat.io/interference", NULL, &r,
		       20000)) {
		log_kube_lines();
		cr_assert_fail("moatd never published its taint (the stub had %d GETs and %d PATCHes of the node)",
			       stub_count("GET", "/api/v1/nodes/test-node", NULL),
			       stub_count("PATCH", "/api/v1/nodes/test-node", NULL));
	}
	return api;
}

Test(moatd, sigterm_puts_values_back_before_the_api_server_answers, .init = own_moatd)
{
	struct MHD_Daemon *api;
	double restored, exited;

	api = enforce_and_publish();
	stub_patch_delay(30000);
	sigterm_times(api, &restored, &exited);
	cr_expect(restored >= 0 && restored < 1000,
		  "the files were back %.0f ms after SIGTERM, not within 1 s", restored);
	cr_expect(exited >= 0 && exited < 2000 + 1000,
		  "moatd exited %.0f ms after SIGTERM, past kube/stop_timeout_s (2 s) + 1 s",
		  exited);
	cr_expect(wait_log("the taint, condition and annotations stay", 1, 0),
		  "the withdrawal that could not finish was not said");
	stub_stop(api);
}

Test(moatd, sigterm_with_the_api_server_gone_exits_at_once, .init = own_moatd)
{
	struct MHD_Daemon *api;
	double restored, exited;

	api = enforce_and_publish();
	stub_stop(api);
	sigterm_times(NULL, &restored, &exited);
	cr_expect(restored >= 0 && restored < 1000,
		  "the files were back %.0f ms after SIGTERM, not within 1 s", restored);
	cr_expect(exited >= 0 && exited < 2000 + 1000,
		  "moatd exited %.0f ms after SIGTERM, past kube/stop_timeout_s (2 s) + 1 s",
		  exited);
}

/*
 * kube/publish 0 while a patch hangs: the knob answers within a period
 * and /healthz with it; the thread withdraws by its deadline, and the
 * publisher starts again when asked, once the last one ended.
 */
Test(moatd, stopping_the_publisher_does_not_wait_for_the_api_server, .init = own_moatd)
{
	const char *off[] = { "--socket", sock, "set", "--runtime", "kube/publish", "0", NULL };
	struct MHD_Daemon *api;
	struct timespec t0;
	double took;
	char *body;

	host_only("the publisher's stop");

	api = enforce_and_publish();
	stub_patch_delay(30000);
	/* a patch in flight: the taint changes once the target is met */
	set_runtime("lc/rqlat_p99_target_us", "10000000");
	set_runtime("kube/untaint_s", "0");
	sleep_ms(1000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(run("moatctl", off, out, err), 0, "%s", err);
	took = ms_since(&t0);
	cr_assert_eq(http_get(http_port(), "/healthz", page, sizeof(page), &body), 200);
	cr_log_info("kube/publish 0 with a patch hanging: moatctl answered in %.0f ms", took);
	cr_expect_lt(took, 1000, "kube/publish 0 took %.0f ms", took);
	cr_expect(wait_log("the taint, condition and annotations stay", 1, 10000),
		  "the withdrawal past its deadline was not said");
	stub_patch_delay(0);
	set_runtime("kube/publish", "1");
	cr_expect(wait_knob("kube/node", "test-node", 100), "publishing did not start again: %s",
		  out);
	stop(&daemon_pid);
	stub_stop(api);
}

/*
 * Only the service account's CA, and only a certificate that names the
 * address asked for: a stub whose certificate another CA signed, and
 * one whose certificate names another address, are refused before any
 * request reaches them; with the right CA back, the pods sync (the CA is
 * read for each request, as the token is).
 */
Test(moatd, an_api_server_of_the_wrong_ca_or_name_is_refused, .init = own_moatd)
{
	struct MHD_Daemon *api;
	char cmd[PATH_MAX * 2];

	host_only("TLS to the API server");

	/* another CA in the service account's directory */
	stop(&daemon_pid);
	api = stub_start();
	stub_pod(WEB_UID, "shop", "frontend", "", "", "");
	snprintf(cmd, sizeof(cmd), "cd %s/sa && cp ca.crt right.crt && openssl req -x509 -newkey ec "
		 "-pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout other.key -out ca.crt "
		 "-days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null", dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	start_with_config("kubesafe.conf", "period_ms = 100\nhttp/listen = \nkube/publish = 0\n");
	moatd_env[0] = NULL;
	cr_expect(wait_number("kube/pods_errors", 2, 30000) >= 2, "no failure counted");
	cr_expect_eq(stub_count("GET", "/api/v1/pods", NULL), 0,
		     "a request reached a server of another CA");
	/* GnuTLS's word for a peer it could not verify */
	cr_expect(wait_log("the API server's certificate: The certificate is NOT trusted. The certificate issuer is unknown.",
			   1, 0), "the refusal does not say why");
	snprintf(cmd, sizeof(cmd), "cp %s/sa/right.crt %s/sa/ca.crt", dir, dir);
	cr_assert_eq(system(cmd), 0);
	cr_expect(wait_knob("kube/pods_state", "synced", 300), "the right CA back, no sync: %s",
		  out);
	stop(&daemon_pid);
	stub_stop(api);

	/* the service account's CA, but a certificate for 127.0.0.2 */
	stub_cert_san("IP:127.0.0.2");
	api = stub_start();
	start_with_config("kubesafe.conf", "period_ms = 100\nhttp/listen = \nkube/publish = 0\n");
	moatd_env[0] = NULL;
	cr_expect(wait_number("kube/pods_errors", 2, 30000) >= 2, "no failure counted");
	cr_expect_eq(stub_count("GET", "/api/v1/pods", NULL), 0,
		     "a request reached a server whose certificate names another address");
	cr_expect(wait_log("the API server's certificate: The certificate is NOT trusted. The name in the certificate does not match the expected.",
			   1, 0), "the refusal does not say why");
	stop(&daemon_pid);
	stub_stop(api);
}
