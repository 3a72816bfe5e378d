// SPDX-License-Identifier: GPL-2.0-only
/*
 * Run-queue delay from the kernel's delay accounting, over generic
 * netlink (libnl-genl): the fallback where BPF cannot load.  See
 * taskstats.h.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/taskstats.h>
#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include "cgroup.h"
#include "hostroot.h"
#include "journal.h"
#include "log.h"
#include "taskstats.h"

#define DELAYACCT "/proc/sys/kernel/task_delayacct"

struct moat_taskstats {
	struct nl_sock *sk;
	int family;
	struct moat_journal *journal;	/* kernel.task_delayacct's original */
	char delayacct[PATH_MAX];	/* DELAYACCT below the host root */
	struct moat_ts_task *reply;	/* where the callback puts one */
	__u32 want;			/* for the tid asked about */
	bool got;
};

static int on_reply(struct nl_msg *msg, void *arg)
{
	struct moat_taskstats *ts = arg;
	struct nlattr *a[TASKSTATS_TYPE_MAX + 1], *n[TASKSTATS_TYPE_MAX + 1];
	struct taskstats t;
	int len;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, TASKSTATS_TYPE_MAX, NULL) ||
	    !a[TASKSTATS_TYPE_AGGR_PID] ||
	    nla_parse_nested(n, TASKSTATS_TYPE_MAX, a[TASKSTATS_TYPE_AGGR_PID],
			     NULL) ||
	    !n[TASKSTATS_TYPE_STATS] || !n[TASKSTATS_TYPE_PID] ||
	    nla_get_u32(n[TASKSTATS_TYPE_PID]) != ts->want)
		return NL_SKIP;	/* a late reply to an earlier question */
	/* an older kernel's struct is a prefix of a newer one's */
	memset(&t, 0, sizeof(t));
	len = nla_len(n[TASKSTATS_TYPE_STATS]);
	memcpy(&t, nla_data(n[TASKSTATS_TYPE_STATS]),
	       len < (int)sizeof(t) ? len : (int)sizeof(t));
	ts->reply->count = t.cpu_count;
	ts->reply->delay_ns = t.cpu_delay_total;
	ts->reply->btime = t.ac_btime;
	ts->got = true;
	return NL_OK;
}

int moat_taskstats_open(struct moat_journal *journal,
			struct moat_taskstats **out)
{
	struct moat_taskstats *ts = calloc(1, sizeof(*ts));
	struct timeval tmo = { .tv_sec = 1 };
	int err;

	if (!ts)
		return -ENOMEM;
	ts->sk = nl_socket_alloc();
	if (!ts->sk) {
		err = -ENOMEM;
		goto fail;
	}
	err = genl_connect(ts->sk);
	if (err) {
		pr_warn("taskstats: connect to generic netlink: %s", nl_geterror(err));
		err = -EIO;
		goto fail;
	}
	ts->family = genl_ctrl_resolve(ts->sk, TASKSTATS_GENL_NAME);
	if (ts->family < 0) {
		pr_warn("taskstats: no %s family in this kernel (CONFIG_TASKSTATS): %s",
			TASKSTATS_GENL_NAME, nl_geterror(ts->family));
		err = -ENOENT;
		goto fail;
	}
	/* a reply, or an error: no acks to read past; replies are matched
	   by the tid they are for, so a late one is skipped, not taken */
	nl_socket_disable_auto_ack(ts->sk);
	nl_socket_disable_seq_check(ts->sk);
	/* a reply the kernel could not queue (ENOBUFS) must not hang the
	   control loop: a read waits a second at most */
	if (setsockopt(nl_socket_get_fd(ts->sk), SOL_SOCKET, SO_RCVTIMEO, &tmo,
		       sizeof(tmo))) {
		err = -errno;
		pr_warn("taskstats: SO_RCVTIMEO: %s", strerror(errno));
		goto fail;
	}
	err = nl_socket_modify_cb(ts->sk, NL_CB_VALID, NL_CB_CUSTOM, on_reply, ts);
	if (err) {
		err = -ENOMEM;
		goto fail;
	}
	/* kernel.task_delayacct, journalled: a crash leaves it to the next
	   start to put back */
	ts->journal = journal;
	moat_host_path(ts->delayacct, sizeof(ts->delayacct), DELAYACCT);
	err = moat_kfile_write(ts->journal, ts->delayacct, "1");
	if (err) {
		pr_warn("taskstats: set %s: %s", ts->delayacct, strerror(-err));
		goto fail;
	}
	*out = ts;
	return 0;
fail:
	moat_taskstats_close(ts);
	return err;
}

void moat_taskstats_close(struct moat_taskstats *ts)
{
	if (!ts)
		return;
	if (ts->journal)
		moat_journal_restore(ts->journal, ts->delayacct);
	nl_socket_free(ts->sk);
	free(ts);
}

int moat_taskstats_task(struct moat_taskstats *ts, pid_t tid,
			struct moat_ts_task *out)
{
	struct nl_msg *msg = nlmsg_alloc();
	int err, tries;

	if (!msg)
		return -ENOMEM;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, ts->family, 0, 0,
			 TASKSTATS_CMD_GET, TASKSTATS_VERSION) ||
	    nla_put_u32(msg, TASKSTATS_CMD_ATTR_PID, tid)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	err = nl_send_auto(ts->sk, msg);
	nlmsg_free(msg);
	if (err < 0)
		return -EIO;
	ts->reply = out;
	ts->want = tid;
	ts->got = false;
	for (tries = 0; tries < 4 && !ts->got; tries++) {
		err = nl_recvmsgs_default(ts->sk);
		if (err < 0)
			break;
	}
	ts->reply = NULL;
	if (err == -NLE_OBJ_NOTFOUND)
		return -ESRCH;		/* the kernel's ESRCH: it exited */
	if (err < 0)
		return -EIO;
	if (!ts->got)
		return -ENODATA;
	out->tid = tid;
	return 0;
}

/* Slot i counts waits in [2^i, 2^(i+1)) ns (hist.h). */
void moat_ts_add_waits(struct moat_rqlat_hist *h, __u64 n, __u64 total_ns)
{
	double mean;
	int slot;

	if (!n)
		return;
	mean = (double)total_ns / n;
	slot = mean < 2 ? 0 : (int)floor(log2(mean));
	if (slot >= MOAT_HIST_SLOTS)
		slot = MOAT_HIST_SLOTS - 1;
	h->slots[slot] += n;
	h->count += n;
	h->sum_ns += total_ns;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct moat_ts_task *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int moat_taskstats_group(struct moat_taskstats *ts, const char *dir, bool v2,
			 struct moat_ts_group *g)
{
	struct moat_ts_task *now, *was;
	char path[4096];
	__u32 *tids;
	size_t n = 0, i;
	long nt;

	snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "cgroup.threads" : "tasks");
	nt = moat_read_tids(path, &tids);
	if (nt < 0)
		return nt;
	now = malloc((nt ? nt : 1) * sizeof(*now));
	if (!now) {
		free(tids);
		return -ENOMEM;
	}
	for (i = 0; i < (size_t)nt; i++)
		if (!moat_taskstats_task(ts, tids[i], &now[n]))
			n++;	/* else it exited since the listing */
	free(tids);	/* sorted: so is now[] */
	for (i = 0; i < n; i++) {
		was = g->n ? bsearch(&now[i], g->tasks, g->n, sizeof(*now),
				     cmp_tid) : NULL;
		/* first seen, or another task under a reused tid: baseline */
		if (!was || was->btime != now[i].btime ||
		    now[i].count < was->count || now[i].delay_ns < was->delay_ns)
			continue;
		moat_ts_add_waits(&g->cum, now[i].count - was->count,
				  now[i].delay_ns - was->delay_ns);
	}
	free(g->tasks);
	g->tasks = now;
	g->n = n;
	return 0;
}

void moat_ts_group_free(struct moat_ts_group *g)
{
	free(g->tasks);
	g->tasks = NULL;
	g->n = 0;
}
