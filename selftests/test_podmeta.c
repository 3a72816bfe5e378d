// SPDX-License-Identifier: GPL-2.0-only
/* Pod objects, watch events and pod lists as the API server sends them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include "group.h"
#include "podmeta.h"

#define UID	"0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define CID	"4c1a9b5e8f2d3c7a6b0e1f9d8c2b4a7e6f3d5c1b9a8e7f6d5c4b3a2e1f0d9c8b"

/* A pod as kubectl get -o json gives one, cut to what matters here. */
#define POD(meta_extra, spec, status)					\
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"etl-1\","	\
	"\"namespace\":\"batch\",\"uid\":\"" UID "\",\"resourceVersion\":\"4711\""	\
	meta_extra "},\"spec\":{" spec "},\"status\":{" status "}}"

static struct moat_pod_meta p;
static char rv[MOAT_POD_RV_MAX], why[256];

static int parse(const char *json)
{
	why[0] = '\0';
	return moat_pod_meta_parse(json, strlen(json), &p, rv, why, sizeof(why));
}

Test(podmeta, a_pod_gives_what_moat_uses)
{
	cr_assert_eq(parse(POD(",\"labels\":{\"app\":\"etl\",\"moat.io/class\":\"be\"}",
			       "\"priorityClassName\":\"batch-low\",\"priority\":-10",
			       "\"qosClass\":\"Burstable\",\"containerStatuses\":[{\"name\":\"etl\","
			       "\"containerID\":\"containerd://" CID "\"},{\"name\":\"waiting\"}],"
			       "\"initContainerStatuses\":[{\"name\":\"init\","
			       "\"containerID\":\"cri-o://abc123\"}]")), 0, "%s", why);
	cr_expect_str_eq(p.uid, UID);
	cr_expect_str_eq(p.ns, "batch");
	cr_expect_str_eq(p.name, "etl-1");
	cr_expect_str_eq(rv, "4711");
	cr_expect_str_eq(p.priority_class, "batch-low");
	cr_expect_eq(p.priority, -10);
	cr_expect_str_eq(p.qos, "Burstable");
	cr_expect_eq(p.label_class, MOAT_CLASS_BE);
	cr_assert_eq(p.nr_containers, 2, "the one not started has no id");
	cr_expect_str_eq(moat_pod_container(&p, CID)->name, "etl");
	cr_expect_str_eq(moat_pod_container(&p, "abc123")->name, "init");
	cr_expect_null(moat_pod_container(&p, "abc"), "a prefix is not the id");
	cr_expect_not(p.daemonset);
	cr_expect_not(p.mirror);
}

Test(podmeta, owners_a_daemonset_and_a_static_pod)
{
	cr_assert_eq(parse(POD(",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
			       "\"kind\":\"ReplicaSet\",\"name\":\"x\"},{\"apiVersion\":\"apps/v1\","
			       "\"kind\":\"DaemonSet\",\"name\":\"moatd\",\"controller\":true}]",
			       "", "")), 0, "%s", why);
	cr_expect(p.daemonset);
	cr_expect_not(p.mirror);
	cr_assert_eq(parse(POD(",\"annotations\":{\"kubernetes.io/config.mirror\":\"abc\"},"
			       "\"ownerReferences\":[{\"kind\":\"Node\",\"name\":\"n\"}]", "", "")), 0,
		     "%s", why);
	cr_expect(p.mirror);
	cr_expect_not(p.daemonset);
}

Test(podmeta, labels_that_are_no_class_are_kept_to_be_said)
{
	cr_assert_eq(parse(POD("", "", "")), 0, "%s", why);
	cr_expect_eq(p.label_class, MOAT_POD_LABEL_NONE);
	cr_assert_eq(parse(POD(",\"labels\":{\"moat.io/class\":\"fast\"}", "", "")), 0);
	cr_expect_eq(p.label_class, MOAT_POD_LABEL_BAD);
	cr_expect_str_eq(p.label_value, "fast");
	cr_assert_eq(parse(POD(",\"labels\":{\"moat.io/class\":\"\"}", "", "")), 0);
	cr_expect_eq(p.label_class, MOAT_POD_LABEL_BAD);
	cr_assert_eq(parse(POD(",\"labels\":{\"moat.io/class\":\"lc\"}", "", "")), 0);
	cr_expect_eq(p.label_class, MOAT_CLASS_LC);
}

/*
 * The annotation moat.io/rqlat-p99-target-us: whole microseconds, 1 to
 * 10 s; anything else kept (cut, printable) to be said, never an error:
 * anyone who makes a pod may annotate it.  And a Job's pod is known.
 */
Test(podmeta, a_target_annotation_and_a_jobs_pod)
{
	static const struct { const char *value; long long us; const char *kept; } c[] = {
		{ "750", 750, "" }, { "1", 1, "" }, { "10000000", 10000000, "" },
		{ "0", -1, "0" }, { "10000001", -1, "10000001" }, { "", -1, "" },
		{ "1ms", -1, "1ms" }, { "-5", -1, "-5" }, { " 750", -1, "?750" },
		{ "7.5", -1, "7.5" }, { "99999999999999999999", -1, "99999999999999999999" },
		{ "a'b\\u0007c", -1, "a?b?c" },
		{ "0123456789012345678901234567890123456789", -1,
		  "0123456789012345678901234567890" },
	};
	char meta[256];
	size_t i;

	cr_assert_eq(parse(POD("", "", "")), 0, "%s", why);
	cr_expect_eq(p.rqlat_target_us, 0, "no annotation");
	cr_expect_not(p.job);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(meta, sizeof(meta), ",\"annotations\":{\"%s\":\"%s\"}",
			 MOAT_POD_TARGET_ANNOTATION, c[i].value);
		char json[1024];

		snprintf(json, sizeof(json), "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"etl-1\","
			 "\"namespace\":\"batch\",\"uid\":\"" UID "\"%s},\"spec\":{},\"status\":{}}",
			 meta);
		cr_assert_eq(parse(json), 0, "%s: %s", c[i].value, why);
		cr_expect_eq(p.rqlat_target_us, c[i].us, "'%s': %lld", c[i].value, p.rqlat_target_us);
		cr_expect_str_eq(p.target_value, c[i].kept, "'%s'", c[i].value);
	}
	cr_assert_eq(parse(POD(",\"ownerReferences\":[{\"apiVersion\":\"batch/v1\","
			       "\"kind\":\"Job\",\"name\":\"etl\",\"controller\":true}]",
			       "", "")), 0, "%s", why);
	cr_expect(p.job);
	cr_expect_eq(p.rqlat_target_us, 0, "the last pod's annotation kept");
}

Test(podmeta, what_the_api_server_cannot_send_is_refused_with_a_reason)
{
	static const char *const bad[] = {
		"{\"metadata\":{\"name\":\"x\",\"namespace\":\"y\"}}",		/* no uid */
		"{\"metadata\":{\"uid\":\"" UID "\",\"namespace\":\"y\"}}",	/* no name */
		"{\"metadata\":{\"uid\":\"not a uid\",\"name\":\"x\",\"namespace\":\"y\"}}",
		"{\"metadata\":{\"uid\":\"" UID "\",\"name\":\"X_Y\",\"namespace\":\"y\"}}",
		"{\"metadata\":{\"uid\":\"" UID "\",\"name\":\"x\",\"namespace\":7}}",
		POD("", "\"priority\":\"high\"", ""),
		POD(",\"labels\":[1]", "", ""),
		POD(",\"labels\":{\"moat.io/class\":\"be lc\"}", "", ""),
		POD(",\"labels\":{\"moat.io/class\":7}", "", ""),
		"{\"metadata\":{\"uid\":\"" UID "\"}} trailing",
		"[1,2]",
		"",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse(bad[i]), -EINVAL, "taken: %s", bad[i]);
		cr_expect_neq(why[0], '\0', "no reason for %s", bad[i]);
	}
}

/* resource.Quantity's forms, in millicores rounded up as MilliValue() rounds. */
Test(podmeta, cpu_quantities_in_millicores)
{
	static const struct { const char *q; long long m; } good[] = {
		{ "1", 1000 }, { "250m", 250 }, { "0.5", 500 }, { "1.5", 1500 },
		{ ".5", 500 }, { "2.", 2000 }, { "+2", 2000 }, { "0", 0 },
		{ "0.0001", 1 }, { "100n", 1 }, { "1000000n", 1 }, { "1500000n", 2 },
		{ "1500u", 2 }, { "1e3", 1000000 }, { "1E-3", 1 }, { "2k", 2000000 },
		{ "1Ki", 1024000 }, { "0.25e1", 2500 }, { "007", 7000 },
		{ "1.0005", 1001 },
	};
	static const char *const bad[] = {
		"", "m", "-1", "1.2.3", "1x", "1 m", "1e", "1e+", "0x10", "1mi",
		"1E19", "1e40", "99999999999999999999999999999999", "2Ei", " 1",
	};
	long long m;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		m = -7;
		cr_expect_eq(moat_cpu_quantity_m(good[i].q, &m), 0, "'%s' refused", good[i].q);
		cr_expect_eq(m, good[i].m, "'%s': %lld, not %lld", good[i].q, m, good[i].m);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(moat_cpu_quantity_m(bad[i], &m), -EINVAL, "'%s' taken", bad[i]);
}

#define CTR(name, limit)	"{\"name\":\"" name "\",\"resources\":{\"limits\":{" limit "}}}"
#define STARTED(name, id)	"{\"name\":\"" name "\",\"containerID\":\"containerd://" id "\"}"

/*
 * The limit kubelet gives a pod's own cgroup (ResourceConfigForPod()):
 * its containers' together where each has one, the sidecars' with them,
 * an init container's beside the sidecars before it where that is more,
 * the RuntimeClass's overhead on top; the pod's own (pod-level
 * resources) first.  Each started container gets its own.
 */
Test(podmeta, a_pods_cpu_limit_as_kubelet_makes_its_quota)
{
	cr_assert_eq(parse(POD("", "\"containers\":[" CTR("web", "\"cpu\":\"500m\"") ","
			       CTR("log", "\"cpu\":\"0.25\",\"memory\":\"1Gi\"") "]",
			       "\"containerStatuses\":[" STARTED("log", "ab12") ","
			       STARTED("web", CID) "]")), 0, "%s", why);
	cr_expect_eq(p.cpu_limit_m, 750);
	cr_expect_eq(moat_pod_container(&p, CID)->cpu_limit_m, 500);
	cr_expect_eq(moat_pod_container(&p, "ab12")->cpu_limit_m, 250);
	/* one without: no quota on the pod; the other's its own */
	cr_assert_eq(parse(POD("", "\"containers\":[" CTR("web", "\"cpu\":\"500m\"") ","
			       CTR("log", "\"memory\":\"1Gi\"") "]",
			       "\"containerStatuses\":[" STARTED("web", CID) "]")), 0, "%s", why);
	cr_expect_eq(p.cpu_limit_m, -1);
	cr_expect_eq(moat_pod_container(&p, CID)->cpu_limit_m, 500);
	cr_assert_eq(parse(POD("", "\"containers\":[" CTR("web", "\"cpu\":\"0\"") "]",
			       "")), 0, "%s", why);
	cr_expect_eq(p.cpu_limit_m, -1, "a zero limit is none");
	/* a sidecar runs on beside them; an init container alone before */
	cr_assert_eq(parse(POD("", "\"initContainers\":["
			       "{\"name\":\"mesh\",\"restartPolicy\":\"Always\","
			       "\"resources\":{\"limits\":{\"cpu\":\"100m\"}}},"
			       CTR("migrate", "\"cpu\":\"2\"") "],"
			       "\"containers\":[" CTR("web", "\"cpu\":\"500m\"") "]", "")), 0,
		     "%s", why);
	cr_expect_eq(p.cpu_limit_m, 2100, "the init container beside the sidecar: %lld",
		     p.cpu_limit_m);
	cr_assert_eq(parse(POD("", "\"initContainers\":["
			       "{\"name\":\"mesh\",\"restartPolicy\":\"Always\","
			       "\"resources\":{\"limits\":{\"cpu\":\"100m\"}}}],"
			       "\"containers\":[" CTR("web", "\"cpu\":\"500m\"") "],"
			       "\"overhead\":{\"cpu\":\"50m\"}", "")), 0, "%s", why);
	cr_expect_eq(p.cpu_limit_m, 650, "the sidecar's and the overhead: %lld", p.cpu_limit_m);
	/* pod-level resources: the pod's own, its containers none */
	cr_assert_eq(parse(POD("", "\"resources\":{\"limits\":{\"cpu\":\"1\"}},"
			       "\"containers\":[" CTR("web", "") "]",
			       "\"containerStatuses\":[" STARTED("web", CID) "]")), 0, "%s", why);
	cr_expect_eq(p.cpu_limit_m, 1000);
	cr_expect_eq(moat_pod_container(&p, CID)->cpu_limit_m, -1);
	/* what the API server cannot send */
	cr_expect_eq(parse(POD("", "\"containers\":[" CTR("web", "\"cpu\":\"lots\"") "]",
			       "")), -EINVAL);
	cr_expect(strstr(why, "limits.cpu"), "%s", why);
	cr_expect_eq(parse(POD("", "\"containers\":[" CTR("web", "\"cpu\":2") "]", "")),
		     -EINVAL, "a number, not a quantity's string");
	cr_expect_eq(parse(POD("", "\"containers\":{}", "")), -EINVAL);
	cr_expect_eq(parse(POD("", "\"containers\":[7]", "")), -EINVAL);
	cr_expect_eq(parse(POD("", "\"overhead\":{\"cpu\":\"-1\"}", "")), -EINVAL);
}

Test(podmeta, a_label_of_64_kib_is_refused)
{
	static char json[70000];
	char *v;

	snprintf(json, sizeof(json), "%s", POD(",\"labels\":{\"moat.io/class\":\"@\"}", "", ""));
	v = strchr(json, '@');
	memmove(v + 65536, v + 1, strlen(v + 1) + 1);
	memset(v, 'l', 65536);
	cr_expect_eq(parse(json), -EINVAL);
	cr_expect(strstr(why, "moat.io/class"), "%s", why);
}

Test(podmeta, watch_events)
{
	struct moat_watch_event ev;
	const char *line;

	line = "{\"type\":\"MODIFIED\",\"object\":" POD("", "", "") "}";
	cr_assert_eq(moat_watch_event_parse(line, strlen(line), &ev, why, sizeof(why)), 0,
		     "%s", why);
	cr_expect_eq(ev.type, MOAT_WATCH_MODIFIED);
	cr_expect_str_eq(ev.pod.name, "etl-1");
	cr_expect_str_eq(ev.rv, "4711");

	line = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
	       "\"metadata\":{\"resourceVersion\":\"9000\"}}}";
	cr_assert_eq(moat_watch_event_parse(line, strlen(line), &ev, why, sizeof(why)), 0,
		     "%s", why);
	cr_expect_eq(ev.type, MOAT_WATCH_BOOKMARK);
	cr_expect_str_eq(ev.rv, "9000");

	line = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
	       "\"reason\":\"Expired\"}}";
	cr_assert_eq(moat_watch_event_parse(line, strlen(line), &ev, why, sizeof(why)), 0);
	cr_expect_eq(ev.type, MOAT_WATCH_ERROR);
	cr_expect_eq(ev.code, 410);

	line = "{\"type\":\"SURPRISE\",\"object\":{}}";
	cr_expect_eq(moat_watch_event_parse(line, strlen(line), &ev, why, sizeof(why)),
		     -EINVAL);
	cr_expect(strstr(why, "unknown type"), "%s", why);
	line = "{\"type\":\"DELETED\",\"object\":{\"metadata\":{}}}";
	cr_expect_eq(moat_watch_event_parse(line, strlen(line), &ev, why, sizeof(why)),
		     -EINVAL);
	line = "{\"type\":\"ADDED\"}";
	cr_expect_eq(moat_watch_event_parse(line, strlen(line), &ev, why, sizeof(why)),
		     -EINVAL);
}

static int count(const struct moat_pod_meta *pod, void *ctx)
{
	(*(int *)ctx)++;
	return 0;
}

Test(podmeta, a_list_its_version_continue_and_bad_items)
{
	const char *list = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":"
			   "{\"resourceVersion\":\"123\",\"continue\":\"tok\"},\"items\":["
			   POD("", "", "") ",{\"metadata\":{}}," POD("", "", "") "]}";
	char lrv[MOAT_POD_RV_MAX], cont[64];
	size_t bad;
	int n = 0;

	cr_assert_eq(moat_pod_list_parse(list, strlen(list), count, &n, lrv, cont,
					 sizeof(cont), &bad, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(n, 2);
	cr_expect_eq(bad, 1);
	cr_expect_str_eq(lrv, "123");
	cr_expect_str_eq(cont, "tok");
	list = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":null}";
	n = 0;
	cr_assert_eq(moat_pod_list_parse(list, strlen(list), count, &n, lrv, cont,
					 sizeof(cont), &bad, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(n, 0);
	cr_expect_str_eq(cont, "");
	list = "{\"kind\":\"Status\",\"code\":500}";
	cr_expect_eq(moat_pod_list_parse(list, strlen(list), count, &n, lrv, cont,
					 sizeof(cont), &bad, why, sizeof(why)), -EINVAL);
}

/*
 * A page is parsed a pod at a time (its tree is never whole): the items
 * are found in the text however their strings bracket and escape, and
 * anything that is not JSON is refused as json-c refuses it.
 */
Test(podmeta, a_list_is_read_item_by_item_and_its_text_checked_whole)
{
	static const char *const good[] = {
		/* brackets, braces, commas and escaped quotes inside strings */
		"{\"items\":[" POD(",\"annotations\":{\"a\":\"]},{\\\"x\\\":[\"}", "", "")
		"," POD(",\"labels\":{\"b\":\"x\"}", "\"priority\":-3", "") "],"
		"\"metadata\":{\"resourceVersion\":\"9\"},\"kind\":\"PodList\"}",
		/* space everywhere JSON allows it */
		" \n{ \"metadata\" : { \"resourceVersion\" : \"9\" } , \"items\" : [ "
		POD("", "", "") " , " POD("", "", "") " ] } \n",
	};
	static const char *const bad[] = {
		"{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("", "", "") ",]}",
		"{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("", "", "") "],}",
		"{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("", "", "") "]} x",
		"{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("", "", "") "]",
		"{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("", "", "") "}}",
		"{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[{\"a\":tru}]}",
		"{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[\"unterminated]}",
		"{\"metadata\":{\"resourceVersion\":\"9\"} \"items\":[]}",
		"{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":5}",
		"{\"metadata\":[],\"items\":[]}",
		"[]",
		"",
	};
	char lrv[MOAT_POD_RV_MAX], cont[64], deep[400];
	size_t i, nbad;
	int n;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		n = 0;
		cr_expect_eq(moat_pod_list_parse(good[i], strlen(good[i]), count, &n, lrv, cont,
						 sizeof(cont), &nbad, why, sizeof(why)), 0,
			     "good[%zu]: %s", i, why);
		cr_expect_eq(n, 2, "good[%zu]: %d pods", i, n);
		cr_expect_eq(nbad, 0, "good[%zu]: %zu bad: %s", i, nbad, why);
		cr_expect_str_eq(lrv, "9");
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(moat_pod_list_parse(bad[i], strlen(bad[i]), count, &n, lrv, cont,
						 sizeof(cont), &nbad, why, sizeof(why)), -EINVAL,
			     "bad[%zu] was taken: %s", i, bad[i]);
	/* nested deeper than any pod: refused, not followed */
	strcpy(deep, "{\"metadata\":{\"resourceVersion\":\"9\"},\"x\":");
	for (i = 0; i < 100; i++)
		strcat(deep, "[");
	for (i = 0; i < 100; i++)
		strcat(deep, "]");
	strcat(deep, ",\"items\":[]}");
	cr_expect_eq(moat_pod_list_parse(deep, strlen(deep), count, &n, lrv, cont,
					 sizeof(cont), &nbad, why, sizeof(why)), -EINVAL,
		     "100 levels of nesting taken");
}

/* A list as it arrives: in chunks of @chunk bytes, or of random sizes. */
static int feed_in(const char *list, size_t chunk, size_t item_max, int *n, char *lrv,
		   char *cont, size_t *nbad)
{
	struct moat_pod_list_stream *s = moat_pod_list_stream_new(item_max, count, n);
	size_t len = strlen(list), at = 0, k;
	int err = 0;

	cr_assert(s);
	while (at < len && !err) {
		k = chunk ? chunk : 1 + (size_t)rand() % 5000;
		if (k > len - at)
			k = len - at;
		err = moat_pod_list_stream_feed(s, list + at, k);
		at += k;
	}
	err = moat_pod_list_stream_end(s, lrv, cont, 64, nbad, why, sizeof(why));
	moat_pod_list_stream_free(s);
	return err;
}

/*
 * The API server's watch cache answers with all of a node's pods in one
 * page: the list is parsed as it arrives, however it is cut, holding no
 * more than an item and a chunk (past that, feed refuses: the bound is
 * what this asserts), and gives what the whole text gives.
 */
Test(podmeta, a_list_is_parsed_as_it_arrives_in_any_chunks_holding_an_item_at_most)
{
	static const char head[] = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[";
	static const char tail[] = "],\"metadata\":{\"resourceVersion\":\"77\",\"continue\":\"c1\"}}";
	static const char item[] = POD(",\"labels\":{\"x\":\"]}[{,\\\"\"}", "\"priority\":5", "");
	size_t npods = 2000, len = sizeof(head) + npods * sizeof(item) + sizeof(tail);
	size_t i, chunks[] = { 1, 7, 4096, 16384, 0 }, nbad;
	char *list = malloc(len), lrv[MOAT_POD_RV_MAX], cont[64];
	int n, trial;

	cr_assert(list);
	strcpy(list, head);
	for (i = 0; i < npods; i++) {
		if (i)
			strcat(list, ",");
		strcat(list, item);
	}
	strcat(list, tail);
	srand(46);
	for (trial = 0; trial < (int)(sizeof(chunks) / sizeof(chunks[0])); trial++) {
		n = 0;
		cr_expect_eq(feed_in(list, chunks[trial], 2 * sizeof(item), &n, lrv, cont, &nbad),
			     0, "chunks of %zu: %s", chunks[trial], why);
		cr_expect_eq(n, (int)npods, "chunks of %zu: %d pods", chunks[trial], n);
		cr_expect_eq(nbad, 0);
		cr_expect_str_eq(lrv, "77");
		cr_expect_str_eq(cont, "c1");
	}
	/* an item past the limit is refused, not held (one a chunk brings whole is parsed) */
	n = 0;
	cr_expect_eq(feed_in(list, 4096, 64, &n, lrv, cont, &nbad), -E2BIG);
	cr_expect_lt(n, (int)npods, "all %d pods read past the limit", n);
	cr_expect(strstr(why, "past its limit"), "%s", why);
	/* cut anywhere, the list is refused at its end */
	list[len / 2] = '\0';
	cr_expect_eq(feed_in(list, 4096, 2 * sizeof(item), &n, lrv, cont, &nbad), -EINVAL);
	cr_expect(strstr(why, "ends early"), "%s", why);
	free(list);
}
