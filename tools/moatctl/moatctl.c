// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatctl: read and set moatd's knobs over its control socket.
 *
 *   moatctl [--socket PATH] [--timeout SEC] [--json] ls [PATH] | get PATH... |
 *           set [--runtime] PATH VALUE | tree [PATH] | config [PATH] |
 *           status | restore | reset
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "ctl.h"

static const char *socket_path = MOAT_CTL_SOCKET;
static bool json;
/* how long moatd may stay silent before moatctl gives up, ms */
static unsigned int timeout_ms = 10000;

static const char usage[] =
"usage: moatctl [--socket PATH] [--timeout SEC] [--json] VERB\n"
"\n"
"  ls [PATH]          the entries below PATH ('/' after directories)\n"
"  get PATH...        each knob's value\n"
"  set [--runtime] PATH VALUE\n"
"                     change a knob (root), and keep it across restarts\n"
"                     unless --runtime; rules/NAME creates a rule, an\n"
"                     empty VALUE removes it\n"
"  tree [PATH]        'path = value' for every knob below PATH, in the\n"
"                     config file's format\n"
"  config [PATH]      the same for the knobs a config file sets: its\n"
"                     output is a config file\n"
"  status             moatd's state and its groups, as a table\n"
"  restore            put back every value moatd changed in the kernel\n"
"                     (root); it throttles again if still enforcing\n"
"  reset              drop every value 'set' kept over the config file\n"
"                     (root): the config file's values apply again\n"
"\n"
"  -s, --socket PATH  moatd's control socket (default " MOAT_CTL_SOCKET ")\n"
"  -t, --timeout SEC  give up when moatd says nothing for SEC seconds\n"
"                     (default 10; 0: wait however long)\n"
"  -j, --json         JSON instead of text\n";

/*
 * Whether @s may be sent as a path: a request is one line, and a path has
 * no control character (knobs.rst), so `get $'mode\nperiod_ms'` is
 * refused here, whole, not sent as two requests.  Said when not.
 */
static bool path_ok(const char *s)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "moatctl: '");
			for (p = (const unsigned char *)s; *p; p++)
				fprintf(stderr, *p < 0x20 || *p == 0x7f ? "\\x%02x" : "%c", *p);
			fprintf(stderr, "': a path has no control characters\n");
			return false;
		}
	return true;
}

/* One request; its body in *@body (caller frees).  Errors are printed. */
static int request(const char *req, const char *what, char **body)
{
	char msg[MOAT_CTL_REQUEST_MAX];
	size_t len;
	FILE *out = open_memstream(body, &len);
	int err;

	if (!out)
		return -ENOMEM;
	err = moat_ctl_request(socket_path, req, out, msg, sizeof(msg), timeout_ms);
	fclose(out);
	if (err == -ETIMEDOUT) {
		fprintf(stderr, "moatctl: moatd at %s did not answer within %g s (--timeout)\n",
			socket_path, timeout_ms / 1000.0);
	} else if (err == -ENOENT && !msg[0]) {
		fprintf(stderr, "moatctl: cannot reach moatd: no socket at %s (is moatd running?)\n",
			socket_path);
	} else if (err && !msg[0]) {
		fprintf(stderr, "moatctl: cannot reach moatd at %s: %s\n",
			socket_path, strerror(-err));
	} else if (err) {
		/* moatd's message already names the path */
		fprintf(stderr, "moatctl: %s%s%s\n", msg[0] ? "" : what,
			msg[0] ? "" : ": ", msg);
	}
	if (err) {
		free(*body);
		*body = NULL;
	}
	return err;
}

/* Each "path = value" line of a tree body, split in place. */
static int for_each_line(char *body, void (*fn)(const char *path,
						const char *value, void *ctx),
			 void *ctx)
{
	char *line, *save = NULL;

	for (line = strtok_r(body, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strstr(line, " = ");

		if (!eq)
			return -EPROTO;
		*eq = '\0';
		fn(line, eq + 3, ctx);
	}
	return 0;
}

static void add_json(const char *path, const char *value, void *ctx)
{
	json_object_object_add(ctx, path, json_object_new_string(value));
}

static void print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static int cmd_simple(const char *verb, int argc, char **argv)
{
	char req[MOAT_CTL_REQUEST_MAX], *body = NULL;
	const char *path = argc ? argv[0] : "";
	json_object *o;
	int err;

	bool none = !strcmp(verb, "restore") || !strcmp(verb, "reset");

	if (argc > !none) {
		fprintf(stderr, "moatctl: %s takes %s\n", verb,
			none ? "no arguments" : "at most one PATH");
		return 2;
	}
	if (!path_ok(path))
		return 1;
	snprintf(req, sizeof(req), "%s %s", verb, path);
	err = request(req, path, &body);
	if (err)
		return 1;
	if (!json) {
		fputs(body, stdout);
	} else if (strcmp(verb, "ls")) {
		o = json_object_new_object();
		err = for_each_line(body, add_json, o);
		print_json(o);
	} else {
		char *line, *save = NULL;

		o = json_object_new_array();
		for (line = strtok_r(body, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			json_object_array_add(o, json_object_new_string(line));
		print_json(o);
	}
	free(body);
	return err ? 1 : 0;
}

static int cmd_get(int argc, char **argv)
{
	char req[MOAT_CTL_REQUEST_MAX], *body;
	json_object *o = json_object_new_object();
	int i, ret = 0;

	if (!argc) {
		fprintf(stderr, "moatctl: get needs a PATH\n");
		json_object_put(o);
		return 2;
	}
	for (i = 0; i < argc; i++) {
		if (!path_ok(argv[i])) {
			ret = 1;
			continue;
		}
		if ((size_t)snprintf(req, sizeof(req), "get %s", argv[i]) >= sizeof(req)) {
			fprintf(stderr, "moatctl: %.64s...: path too long\n", argv[i]);
			ret = 1;
			continue;
		}
		if (request(req, argv[i], &body)) {
			ret = 1;
			continue;
		}
		body[strcspn(body, "\n")] = '\0';
		if (json)
			json_object_object_add(o, argv[i], json_object_new_string(body));
		else
			puts(body);
		free(body);
	}
	if (json)
		print_json(o);
	else
		json_object_put(o);
	return ret;
}

static int cmd_set(int argc, char **argv)
{
	char req[MOAT_CTL_REQUEST_MAX], *body;
	const char *verb = "set";

	if (argc && !strcmp(argv[0], "--runtime")) {
		verb = "rset";
		argc--;
		argv++;
	}
	if (argc != 2) {
		fprintf(stderr, "moatctl: set needs PATH and VALUE\n");
		return 2;
	}
	if (!path_ok(argv[0]))
		return 1;
	if (strchr(argv[1], '\n')) {
		fprintf(stderr, "moatctl: %s: a value is one line\n", argv[0]);
		return 1;
	}
	if ((size_t)snprintf(req, sizeof(req), "%s %s %s", verb, argv[0],
			     argv[1]) >= sizeof(req)) {
		fprintf(stderr, "moatctl: %s: value too long\n", argv[0]);
		return 1;
	}
	if (request(req, argv[0], &body))
		return 1;
	free(body);
	return 0;
}

/* The tree as a lookup table for status. */
struct kv {
	char **paths, **values;
	size_t nr, cap;
};

static void add_kv(const char *path, const char *value, void *ctx)
{
	struct kv *t = ctx;

	if (t->nr == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->paths = realloc(t->paths, t->cap * sizeof(char *));
		t->values = realloc(t->values, t->cap * sizeof(char *));
		if (!t->paths || !t->values)
			exit(1);
	}
	t->paths[t->nr] = (char *)path;
	t->values[t->nr++] = (char *)value;
}

static const char *lookup(const struct kv *t, const char *path)
{
	size_t i;

	for (i = 0; i < t->nr; i++)
		if (!strcmp(t->paths[i], path))
			return t->values[i];
	return "-";
}

/* What `moatctl set` keeps over the config file, and a journal not trusted. */
static void local_line(const struct kv *t)
{
	const char *local = lookup(t, "settings/local");
	const char *bad = lookup(t, "journal_unreadable");

	if (*local && strcmp(local, "-"))
		printf("local overrides, over the config file until 'moatctl reset': %s\n\n",
		       local);
	if (*bad && strcmp(bad, "-"))
		printf("the journal %s does not decode: nothing it lists was put back; observe only\n\n",
		       bad);
	if (strcmp(lookup(t, "classes/lc_job_pods"), "0") && strcmp(lookup(t, "classes/lc_job_pods"), "-"))
		printf("warning: %s Job pods are lc by their QoS tier's class, protected and never throttled; the log names them (label moat.io/class=be)\n\n",
		       lookup(t, "classes/lc_job_pods"));
}

/* Where the pods' names and labels come from, and whether they are current. */
static void pods_line(const struct kv *t)
{
	const char *state = lookup(t, "kube/pods_state");

	if (!strcmp(state, "synced"))
		printf("pods: %s known from the API server, in sync %s s ago\n\n",
		       lookup(t, "kube/pods_known"), lookup(t, "kube/pods_sync_age_s"));
	else if (!strcmp(state, "away"))
		printf("pods: the API server is away, in sync %s s ago; %s pods' names and classes kept\n\n",
		       lookup(t, "kube/pods_sync_age_s"), lookup(t, "kube/pods_known"));
	else if (!strcmp(state, "listing"))
		printf("pods: listing them on the API server (not yet in sync)\n\n");
	else if (strcmp(state, "-"))
		printf("pods: no metadata from the API server (kube/pods %s): classes from QoS tiers and rules\n\n",
		       state);
}

/* Eviction: its mode, the BE pods in the order they would go, the last ones. */
static void evict_line(const struct kv *t)
{
	const char *mode = lookup(t, "evict/mode"), *c = lookup(t, "evict/candidates");
	const char *last = lookup(t, "evict/last");

	if (!strcmp(mode, "-"))
		return;
	printf("evict: %s; candidates, first first: %s; last: %s\n\n", mode,
	       *c && strcmp(c, "-") ? c : "none", *last && strcmp(last, "-") ? last : "none");
}

/* CPU burst: on or off, the LC groups throttled now and those with burst. */
static void burst_line(const struct kv *t)
{
	const char *on = lookup(t, "burst/enabled"), *sup = lookup(t, "burst/supported");

	if (!strcmp(on, "-"))
		return;
	if (!strcmp(sup, "no"))
		printf("burst: none (this kernel has no CFS burst)");
	else
		printf("burst: %s, %s%% of the quota", strcmp(on, "1") ? "off" : "on",
		       lookup(t, "burst/max_pct"));
	printf("; LC groups throttled by their own limit this period: %s; with moat's burst: %s",
	       lookup(t, "burst/throttled"), lookup(t, "burst/held"));
	if (!strcmp(lookup(t, "burst/lift"), "1"))
		printf("; quotas lifted: %s", lookup(t, "burst/lifted"));
	printf("\n\n");
}

/*
 * The controller's last steps (enforce/history/NN, oldest first), the
 * newest STATUS_STEPS of them; in shadow mode, the steps it would have
 * taken, none written.
 */
#define STATUS_STEPS	8
static void steps_line(const struct kv *t)
{
	const char *v[64];
	char path[64];
	int i, n = 0;

	for (i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "enforce/history/%02d", i);
		v[n] = lookup(t, path);
		if (!strcmp(v[n], "-"))
			break;
		n += *v[n] != '\0';
	}
	if (!strcmp(lookup(t, "mode"), "shadow"))
		printf("shadow: the controller decides as in enforce and writes nothing; %s steps it would have taken so far\n",
		       lookup(t, "enforce/shadow_steps"));
	if (!n) {
		if (!strcmp(lookup(t, "mode"), "shadow"))
			printf("\n");
		return;
	}
	printf("last steps%s:\n", n > STATUS_STEPS ? ", the newest" : "");
	for (i = n > STATUS_STEPS ? n - STATUS_STEPS : 0; i < n; i++)
		printf("  %s\n", v[i]);
	printf("\n");
}

static int cmd_status(int argc, char **argv)
{
	char *body, path[512], id[128], last[128] = "";
	struct kv t = {};
	size_t i, groups = 0;
	const char *name;
	bool unit;

	if (argc) {
		fprintf(stderr, "moatctl: status takes no arguments\n");
		return 2;
	}
	if (json)
		return cmd_simple("tree", 0, argv);
	if (request("tree", "", &body))
		return 1;
	if (for_each_line(body, add_kv, &t)) {
		fprintf(stderr, "moatctl: malformed reply from moatd\n");
		return 1;
	}
	printf("moatd %s, mode %s, period %s ms, last cycle %s us\n",
	       lookup(&t, "version"), lookup(&t, "mode"), lookup(&t, "period_ms"),
	       lookup(&t, "cycle_us"));
	printf("node: %s CPUs, %s busy; pressure some avg10: cpu %s%%, memory %s%%, io %s%%\n\n",
	       lookup(&t, "node/cpus"), lookup(&t, "node/cpu_usage"),
	       lookup(&t, "node/pressure/cpu_some_avg10"),
	       lookup(&t, "node/pressure/memory_some_avg10"),
	       lookup(&t, "node/pressure/io_some_avg10"));
	local_line(&t);
	pods_line(&t);
	evict_line(&t);
	burst_line(&t);
	steps_line(&t);
	printf("%-38s %-5s %-9s %8s %9s %9s %7s  %s\n", "GROUP", "CLASS", "KIND",
	       "WAITS", "P50_US", "P99_US", "CPUS", "PATH");
	for (i = 0; i < t.nr; i++) {
		if (sscanf(t.paths[i], "groups/%127[^/]/", id) != 1 ||
		    !strcmp(id, last))
			continue;
		strcpy(last, id);
		groups++;
#define G(attr) (snprintf(path, sizeof(path), "groups/%s/" attr, id), lookup(&t, path))
		/*
		 * A unit (a pod, a rule's cgroup) shows its members' waits
		 * merged: a pod's tasks wait in its containers' cgroups.
		 */
		unit = strcmp(G("unit_rqlat_count"), "-");
		/* namespace/pod[/container] once the API server said */
		name = G("name");
		printf("%-38s %-5s %-9s %8s %9s %9s %7s  %s\n",
		       strcmp(name, "-") && *name ? name : id, G("class"),
		       G("kind"), unit ? G("unit_rqlat_count") : G("rqlat_count"),
		       unit ? G("unit_rqlat_p50_us") : G("rqlat_p50_us"),
		       unit ? G("unit_rqlat_p99_us") : G("rqlat_p99_us"),
		       G("cpu_usage"), G("path"));
#undef G
	}
	if (!groups)
		printf("\nno groups below %s: moatd finds the pods kubelet makes there (kubepods/...)\n"
		       "and the cgroups a rule matches, for instance:\n"
		       "    moatctl set rules/web 'system.slice/nginx.service lc'\n",
		       lookup(&t, "cgroup_root"));
	free(t.paths);
	free(t.values);
	free(body);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *verb;
	int c;

	while ((c = getopt_long(argc, argv, "+s:t:jh", longopts, NULL)) != -1) {
		char *end;
		double sec;

		switch (c) {
		case 's':
			socket_path = optarg;
			break;
		case 't':
			errno = 0;
			sec = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(sec >= 0) || sec > 86400) {
				fprintf(stderr, "moatctl: --timeout '%s': seconds from 0 to 86400 expected\n",
					optarg);
				return 2;
			}
			timeout_ms = sec * 1000;
			if (sec > 0 && !timeout_ms)
				timeout_ms = 1;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fputs(usage, stderr);
		return 2;
	}
	verb = argv[optind++];
	argc -= optind;
	argv += optind;
	if (!strcmp(verb, "ls") || !strcmp(verb, "tree") || !strcmp(verb, "config") ||
	    !strcmp(verb, "restore") || !strcmp(verb, "reset"))
		return cmd_simple(verb, argc, argv);
	if (!strcmp(verb, "get"))
		return cmd_get(argc, argv);
	if (!strcmp(verb, "set"))
		return cmd_set(argc, argv);
	if (!strcmp(verb, "status"))
		return cmd_status(argc, argv);
	fprintf(stderr, "moatctl: unknown verb '%s'\n", verb);
	fputs(usage, stderr);
	return 2;
}
