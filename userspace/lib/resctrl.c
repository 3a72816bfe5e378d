// SPDX-License-Identifier: GPL-2.0-only
/*
 * resctrl: what the hardware allows, schemata, and checked writes (the
 * formats are in resctrl.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cgroup.h"
#include "hostroot.h"
#include "peek.h"
#include "resctrl.h"

#define WHY(...)	snprintf(why, len, __VA_ARGS__)

/* Whether @e in @dir is a directory; stat() where readdir does not say. */
static bool is_dir(const char *dir, const struct dirent *e)
{
	char path[PATH_MAX + 256];
	struct stat st;

	if (e->d_type != DT_UNKNOWN)
		return e->d_type == DT_DIR;
	snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int moat_rdt_read(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return 0;
}

/* A number in @base from @dir/@file: 0, -ENOENT (absent), -EINVAL. */
static int read_num(const char *dir, const char *file, int base, __u64 *out)
{
	char buf[64], *end;
	int err = moat_rdt_read(dir, file, buf, sizeof(buf));

	if (err)
		return err;
	errno = 0;
	*out = strtoull(buf, &end, base);
	return errno || end == buf || *end ? -EINVAL : 0;
}

static bool is_cache(const char *name)
{
	return name[0] == 'L' && isdigit((unsigned char)name[1]);
}

/* Read info/@name into @r. */
static int read_res(const char *info, const char *name, bool amd, bool mbps,
		    struct moat_rdt_res *r, char *why, size_t len)
{
	char dir[PATH_MAX];
	__u64 v;
	int err;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", info, name) >= sizeof(dir) ||
	    strlen(name) >= sizeof(r->name)) {
		WHY("%s/%s: name too long", info, name);
		return -ENAMETOOLONG;
	}
	memcpy(r->name, name, strlen(name) + 1);
	r->kind = is_cache(name) ? MOAT_RDT_CACHE : MOAT_RDT_MB;
#define NUM(file, base, field, need) do {				\
		err = read_num(dir, file, base, &v);			\
		if (!err)						\
			field = v;					\
		else if (need || err != -ENOENT) {			\
			WHY("%s/%s: %s", dir, file, err == -EINVAL ?	\
			    "not a number" : strerror(-err));		\
			return err;					\
		}							\
	} while (0)
	NUM("num_closids", 10, r->num_closids, true);
	if (r->kind == MOAT_RDT_CACHE) {
		NUM("cbm_mask", 16, r->cbm_mask, true);
		NUM("min_cbm_bits", 10, r->min_cbm_bits, true);
		NUM("shareable_bits", 16, r->shareable_bits, false);
		v = 0;
		NUM("sparse_masks", 10, v, false);	/* v6.8+ */
		r->sparse = v;
		if (!r->cbm_mask) {
			WHY("%s/cbm_mask: empty", dir);
			return -EINVAL;
		}
		return 0;
	}
	NUM("bandwidth_gran", 10, r->gran, true);
	NUM("min_bandwidth", 10, r->min_bw, true);
	v = 0;
	NUM("delay_linear", 10, v, false);
	r->delay_linear = v;
#undef NUM
	if (!r->gran)
		r->gran = 1;
	r->unit = mbps ? MOAT_RDT_MB_MBPS : amd ? MOAT_RDT_MB_ABSOLUTE :
	       MOAT_RDT_MB_PERCENT;
	r->max_bw = r->unit == MOAT_RDT_MB_PERCENT ? 100 : 0;
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int moat_rdt_info_read(const char *root, bool amd, bool mbps,
		       struct moat_rdt_info *out, char *why, size_t len)
{
	struct moat_schemata s;
	struct dirent **ents;
	char info[PATH_MAX], text[4096];
	__u64 v;
	int n, i, err = 0;

	memset(out, 0, sizeof(*out));
	snprintf(info, sizeof(info), "%s/info", root);
	n = scandir(info, &ents, NULL, by_name);
	if (n < 0) {
		err = -errno;
		WHY("%s: %s", info, strerror(errno));
		return err;
	}
	for (i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		struct moat_rdt_res *r;

		if (name[0] == '.' || strstr(name, "_MON") ||
		    !is_dir(info, ents[i]) || err)
			continue;	/* last_cmd_status; monitoring below */
		if (out->nres == MOAT_RDT_MAX_RES) {
			WHY("%s: more than %d schemata", info, MOAT_RDT_MAX_RES);
			err = -E2BIG;
			continue;
		}
		r = &out->res[out->nres];
		err = read_res(info, name, amd, mbps, r, why, len);
		if (err)
			continue;
		out->nres++;
		if (!out->num_closids || r->num_closids < out->num_closids)
			out->num_closids = r->num_closids;
		out->cdp |= !strcmp(name, "L3CODE");
	}
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	if (err)
		return err;
	if (!out->nres) {
		WHY("%s: no schemata (no allocation on this CPU)", info);
		return -ENOENT;
	}
	snprintf(info, sizeof(info), "%s/info/L3_MON", root);
	if (!read_num(info, "num_rmids", 10, &v) &&
	    !moat_rdt_read(info, "mon_features", text, sizeof(text))) {
		out->num_rmids = v;
		out->llc_occupancy = strstr(text, "llc_occupancy") != NULL;
		out->mbm_total = strstr(text, "mbm_total_bytes") != NULL;
		out->mbm_local = strstr(text, "mbm_local_bytes") != NULL;
	}
	/* AMD's most: what the default group has, reset at mount */
	if (!amd || mbps)
		return 0;
	err = moat_rdt_read(root, "schemata", text, sizeof(text));
	if (!err)
		err = moat_schemata_parse(text, &s, why, len);
	if (err) {
		if (err != -EINVAL)
			WHY("%s/schemata: %s", root, strerror(-err));
		return err;
	}
	for (i = 0; (size_t)i < out->nres; i++) {
		struct moat_rdt_line *l = moat_schemata_line(&s, out->res[i].name);
		size_t d;

		if (out->res[i].kind != MOAT_RDT_MB || !l)
			continue;
		for (d = 0; d < l->n; d++)
			if (l->val[d] > out->res[i].max_bw)
				out->res[i].max_bw = l->val[d];
	}
	return 0;
}

const struct moat_rdt_res *moat_rdt_res_find(const struct moat_rdt_info *in,
					     const char *name)
{
	size_t i;

	for (i = 0; i < in->nres; i++)
		if (!strcmp(in->res[i].name, name))
			return &in->res[i];
	return NULL;
}

struct moat_rdt_line *moat_schemata_line(struct moat_schemata *s,
					 const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->line[i].name, name))
			return &s->line[i];
	return NULL;
}

/* One line, "  NAME:id=val;id=val", into @l. */
static int parse_line(const char *p, struct moat_rdt_line *l, unsigned int no,
		      char *why, size_t len)
{
	const char *colon;
	size_t nlen;
	int base;

	while (*p == ' ')
		p++;
	colon = strchr(p, ':');
	nlen = colon ? (size_t)(colon - p) : 0;
	if (!nlen || nlen >= sizeof(l->name)) {
		WHY("schemata line %u: no schema name", no);
		return -EINVAL;
	}
	memcpy(l->name, p, nlen);
	l->name[nlen] = '\0';
	base = is_cache(l->name) ? 16 : 10;
	l->n = 0;
	for (p = colon + 1; *p;) {
		char *end;
		unsigned long id;

		if (l->n == MOAT_RDT_MAX_DOMAINS) {
			WHY("schemata line %u: more than %d domains", no,
			    MOAT_RDT_MAX_DOMAINS);
			return -EINVAL;
		}
		errno = 0;
		id = strtoul(p, &end, 10);
		if (end == p || *end != '=' || errno) {
			WHY("schemata line %u (%s): bad domain at '%.16s'", no,
			    l->name, p);
			return -EINVAL;
		}
		p = end + 1;
		while (*p == ' ')	/* padded before v6.15 */
			p++;
		l->val[l->n] = strtoull(p, &end, base);
		if (end == p || errno || (*end && *end != ';')) {
			WHY("schemata line %u (%s): bad value at '%.16s'", no,
			    l->name, p);
			return -EINVAL;
		}
		l->id[l->n++] = id;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int moat_schemata_parse(const char *text, struct moat_schemata *out,
			char *why, size_t len)
{
	unsigned int no = 0;
	char line[2048];
	const char *p = text, *nl;
	int err;

	out->n = 0;
	for (; *p; p = nl ? nl + 1 : p + strlen(p)) {
		size_t n;

		nl = strchr(p, '\n');
		n = nl ? (size_t)(nl - p) : strlen(p);
		no++;
		if (!n)
			continue;
		if (n >= sizeof(line) || out->n == MOAT_RDT_MAX_RES) {
			WHY("schemata line %u: too long, or too many lines", no);
			return -EINVAL;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		err = parse_line(line, &out->line[out->n], no, why, len);
		if (err)
			return err;
		out->n++;
	}
	return 0;
}

int moat_rdt_check_cbm(const struct moat_rdt_res *r, __u64 m, char *why,
		       size_t len)
{
	__u64 low;

	if (!m) {
		WHY("%s: an empty mask", r->name);
		return -EINVAL;
	}
	if (m & ~r->cbm_mask) {
		WHY("%s: mask %llx has bits outside cbm_mask %llx", r->name,
		    (unsigned long long)m, (unsigned long long)r->cbm_mask);
		return -EINVAL;
	}
	if ((unsigned int)__builtin_popcountll(m) < r->min_cbm_bits) {
		WHY("%s: mask %llx has fewer than min_cbm_bits %u bits", r->name,
		    (unsigned long long)m, r->min_cbm_bits);
		return -EINVAL;
	}
	low = m & -m;
	if (!r->sparse && ((m + low) & m)) {
		WHY("%s: mask %llx is not contiguous, and sparse_masks is 0",
		    r->name, (unsigned long long)m);
		return -EINVAL;
	}
	return 0;
}

__u64 moat_rdt_ways_mask(const struct moat_rdt_res *r, unsigned int ways,
			 bool high)
{
	unsigned int total = __builtin_popcountll(r->cbm_mask);
	unsigned int lo = __builtin_ctzll(r->cbm_mask);
	__u64 m;

	if (!ways || ways > total)
		return 0;
	m = ways >= 64 ? ~0ULL : (1ULL << ways) - 1;
	return m << (high ? lo + total - ways : lo);
}

int moat_rdt_mb_value(const struct moat_rdt_res *r, unsigned int pct,
		      unsigned int *out, char *why, size_t len)
{
	unsigned int v, least;

	if (!pct || pct > 100) {
		WHY("%s: %u%% is not a share of the bandwidth (1..100)", r->name, pct);
		return -EINVAL;
	}
	switch (r->unit) {
	case MOAT_RDT_MB_MBPS:
		WHY("%s: resctrl is mounted with mba_MBps, whose values are MB/s with no maximum to take %u%% of",
		    r->name, pct);
		return -EOPNOTSUPP;
	case MOAT_RDT_MB_PERCENT:
		v = pct;
		break;
	default:
		v = ((unsigned long long)r->max_bw * pct + 50) / 100;
		break;
	}
	/* the kernel rounds a percent up to the granularity: so do we */
	v = (v + r->gran - 1) / r->gran * r->gran;
	least = r->min_bw > r->gran ? r->min_bw : r->gran;
	if (v < least)
		v = least;
	if (r->max_bw && v > r->max_bw)
		v = r->max_bw;
	*out = v;
	return 0;
}

static int check_value(const struct moat_rdt_res *r, __u64 v, char *why,
		       size_t len)
{
	if (r->kind == MOAT_RDT_CACHE)
		return moat_rdt_check_cbm(r, v, why, len);
	if (v < r->min_bw || (r->max_bw && v > r->max_bw) ||
	    (r->unit == MOAT_RDT_MB_PERCENT && v % r->gran)) {
		WHY("%s: %llu is not a bandwidth it takes (min_bandwidth %u, bandwidth_gran %u, max %u)",
		    r->name, (unsigned long long)v, r->min_bw, r->gran, r->max_bw);
		return -EINVAL;
	}
	return 0;
}

int moat_schemata_diff(const struct moat_rdt_info *in,
		       const struct moat_schemata *cur,
		       const struct moat_schemata *want, char *buf,
		       size_t size, char *why, size_t len)
{
	size_t used = 0, i, d, e;
	int err;

	for (i = 0; i < want->n; i++) {
		const struct moat_rdt_line *w = &want->line[i], *c = NULL;
		const struct moat_rdt_res *r = moat_rdt_res_find(in, w->name);
		bool started = false;

		if (!r) {
			WHY("%s: no such schema here", w->name);
			return -EINVAL;
		}
		for (e = 0; e < cur->n; e++)
			if (!strcmp(cur->line[e].name, w->name))
				c = &cur->line[e];
		for (d = 0; d < w->n; d++) {
			bool known = false, same = false;
			int n;

			err = check_value(r, w->val[d], why, len);
			if (err)
				return err;
			for (e = 0; c && e < c->n; e++)
				if (c->id[e] == w->id[d]) {
					known = true;
					same = c->val[e] == w->val[d];
				}
			if (c && !known) {
				WHY("%s: no cache id %u here", w->name, w->id[d]);
				return -EINVAL;
			}
			if (same)
				continue;
			n = snprintf(buf + used, size - used,
				     r->kind == MOAT_RDT_CACHE ? "%s%s%u=%llx" : "%s%s%u=%llu",
				     started ? ";" : w->name, started ? "" : ":",
				     w->id[d], (unsigned long long)w->val[d]);
			if (n < 0 || (size_t)n >= size - used)
				return -ENOSPC;
			used += n;
			started = true;
		}
		if (started) {
			if (used + 2 > size)
				return -ENOSPC;
			buf[used++] = '\n';
			buf[used] = '\0';
		}
	}
	if (!used && size)
		buf[0] = '\0';
	return used;
}

int moat_rdt_write(struct moat_journal *j, const char *root, const char *group,
		   const char *text, char *why, size_t len)
{
	char path[PATH_MAX], status[512];
	int err;

	snprintf(path, sizeof(path), "%s/schemata", group);
	err = moat_kfile_put(j, path, text, strlen(text));
	if (!err)
		return 0;
	if (err == -EXDEV || err == -ENOENT) {
		WHY("open %s: %s", path, moat_kfile_strerror(err));
		return err;
	}
	snprintf(status, sizeof(status), "(no info/last_cmd_status)");
	moat_rdt_read(root, "info/last_cmd_status", status, sizeof(status));
	WHY("write '%.*s' to %s: %s: %s", (int)strcspn(text, "\n"), text, path,
	    strerror(-err), status);
	return err;
}

/* proc(5) escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0');
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Whether the comma-separated @opts has @opt. */
static bool has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);
	const char *p;

	for (p = opts; p; p = strchr(p, ','), p = p ? p + 1 : p)
		if (!strncmp(p, opt, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

int moat_rdt_find_mount(FILE *mountinfo, const char *under, char *mnt,
			size_t len, bool *cdp, bool *mbps)
{
	char line[4096], *save, *f[6], *tok, *type, *super;
	int i;

	while (fgets(line, sizeof(line), mountinfo)) {
		line[strcspn(line, "\n")] = '\0';
		/* id parent maj:min root mountpoint opts [optional...] - type
		   source super */
		tok = strtok_r(line, " ", &save);
		for (i = 0; tok && i < 6; i++, tok = strtok_r(NULL, " ", &save))
			f[i] = tok;
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " ", &save);
		type = tok ? strtok_r(NULL, " ", &save) : NULL;
		if (i < 6 || !type || strcmp(type, "resctrl"))
			continue;
		strtok_r(NULL, " ", &save);	/* source */
		super = strtok_r(NULL, " ", &save);
		unescape(f[4]);
		if (!moat_path_below(f[4], under))
			continue;
		if (strlen(f[4]) >= len)
			return -ENAMETOOLONG;
		memcpy(mnt, f[4], strlen(f[4]) + 1);
		*cdp = super && has_opt(super, "cdp");
		*mbps = super && has_opt(super, "mba_MBps");
		return 0;
	}
	return -ENOENT;
}

bool moat_rdt_cpu_is_amd(FILE *cpuinfo)
{
	char line[256];

	while (fgets(line, sizeof(line), cpuinfo))
		if (!strncmp(line, "vendor_id", 9))
			return strstr(line, "AuthenticAMD") || strstr(line, "HygonGenuine");
	return false;
}

static bool not_a_group(const char *name)
{
	return name[0] == '.' || !strcmp(name, "info") ||
	       !strcmp(name, "mon_groups") || !strcmp(name, "mon_data");
}

int moat_rdt_groups(const char *root, char ***names)
{
	struct dirent **ents;
	char **v;
	int n, i, k = 0;

	n = scandir(root, &ents, NULL, by_name);
	if (n < 0)
		return -errno;
	v = calloc(n ? n : 1, sizeof(*v));
	for (i = 0; i < n; i++) {
		if (v && is_dir(root, ents[i]) && !not_a_group(ents[i]->d_name)) {
			v[k] = strdup(ents[i]->d_name);
			if (!v[k]) {
				while (k--)
					free(v[k]);
				free(v);
				v = NULL;
			} else {
				k++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	if (!v)
		return -ENOMEM;
	*names = v;
	return k;
}

unsigned int moat_rdt_closids_left(const struct moat_rdt_info *in,
				   unsigned int ngroups)
{
	/* CLOSID 0 is the default group's */
	return in->num_closids > ngroups + 1 ? in->num_closids - ngroups - 1 : 0;
}

int moat_rdt_ways_parse(const char *s, struct moat_rdt_ways *out, char *why,
			size_t len)
{
	const char *p = s;

	memset(out, 0, sizeof(*out));
	while (*p) {
		unsigned long id = 0, n;
		bool named = false;
		char *end;
		size_t i;

		if (!isdigit((unsigned char)*p))
			goto bad;
		n = strtoul(p, &end, 10);
		if (*end == '=') {
			id = n;
			named = true;
			if (!isdigit((unsigned char)end[1]))
				goto bad;
			n = strtoul(end + 1, &end, 10);
		}
		if (n > 64 || id > UINT_MAX) {
			WHY("'%s': %lu ways: at most 64", s, n);
			return -EINVAL;
		}
		if (named) {
			for (i = 0; i < out->n; i++)
				if (out->id[i] == id) {
					WHY("'%s': cache %lu twice", s, id);
					return -EINVAL;
				}
			if (out->n == MOAT_RDT_MAX_DOMAINS) {
				WHY("'%s': more than %d caches", s, MOAT_RDT_MAX_DOMAINS);
				return -EINVAL;
			}
			out->id[out->n] = id;
			out->ways[out->n++] = n;
		} else if (p != s) {
			goto bad;	/* the default comes first, once */
		} else {
			out->all = n;
		}
		if (*end == ';' && end[1])
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	return 0;
bad:
	WHY("'%s': not ways, as in \"6\", \"6;16=4\" or \"0=4;1=6\"", s);
	return -EINVAL;
}

unsigned int moat_rdt_ways_for(const struct moat_rdt_ways *w, unsigned int id)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		if (w->id[i] == id)
			return w->ways[i];
	return w->all;
}

/* The mask @a gives cache @id of @r; 0 with *@why when it cannot. */
static __u64 alloc_mask(const struct moat_rdt_res *r,
			const struct moat_rdt_alloc *a, unsigned int id,
			char *why, size_t len)
{
	unsigned int have = __builtin_popcountll(r->cbm_mask);
	unsigned int ways = moat_rdt_ways_for(&a->l3, id);
	__u64 v;

	if (!ways)
		ways = have;
	if (a->cap && a->cap < ways)
		ways = a->cap;
	if (ways < r->min_cbm_bits)
		ways = r->min_cbm_bits;
	v = moat_rdt_ways_mask(r, ways, a->high);
	if (!v)
		WHY("%s:%u: %u ways, and it has %u", r->name, id, ways, have);
	return v;
}

int moat_rdt_compose(const struct moat_rdt_info *in,
		     const struct moat_schemata *dflt,
		     const struct moat_rdt_alloc *a, struct moat_schemata *out,
		     char *why, size_t len)
{
	size_t i, d, k;
	int err;

	for (k = 0; k < a->l3.n; k++) {
		const struct moat_rdt_line *l = NULL;

		for (i = 0; i < dflt->n && !l; i++)
			if (!strncmp(dflt->line[i].name, "L3", 2))
				l = &dflt->line[i];
		for (d = 0; l && d < l->n && l->id[d] != a->l3.id[k]; d++)
			;
		if (!l || d == l->n) {
			WHY("no L3 cache %u here", a->l3.id[k]);
			return -EINVAL;
		}
	}
	out->n = 0;
	for (i = 0; i < dflt->n; i++) {
		const struct moat_rdt_line *l = &dflt->line[i];
		const struct moat_rdt_res *r = moat_rdt_res_find(in, l->name);
		struct moat_rdt_line *o = &out->line[out->n];
		unsigned int mb = 0;
		bool cache;

		if (!r) {
			WHY("%s: in the schemata, not in info/", l->name);
			return -EINVAL;
		}
		cache = r->kind == MOAT_RDT_CACHE;
		if (cache ? strncmp(r->name, "L3", 2) != 0 : strcmp(r->name, "MB") != 0)
			continue;	/* L2, SMBA: not moat's */
		/* all the bandwidth: what the default group has, per domain */
		if (!cache && a->mb_pct < 100) {
			err = moat_rdt_mb_value(r, a->mb_pct, &mb, why, len);
			if (err)
				return err;
		}
		memcpy(o->name, l->name, sizeof(o->name));
		o->n = l->n;
		for (d = 0; d < l->n; d++) {
			o->id[d] = l->id[d];
			if (!cache) {
				o->val[d] = a->mb_pct < 100 ? mb : l->val[d];
				continue;
			}
			o->val[d] = alloc_mask(r, a, l->id[d], why, len);
			if (!o->val[d])
				return -EINVAL;
			err = moat_rdt_check_cbm(r, o->val[d], why, len);
			if (err)
				return err;
		}
		out->n++;
	}
	return 0;
}

size_t moat_rdt_tids_to_move(const __u32 *want, size_t nwant,
			     const __u32 *ours, size_t nours,
			     const __u32 *foreign, size_t nforeign, __u32 *out)
{
	size_t i, o = 0, f = 0, n = 0;

	for (i = 0; i < nwant; i++) {
		while (o < nours && ours[o] < want[i])
			o++;
		while (f < nforeign && foreign[f] < want[i])
			f++;
		if ((o < nours && ours[o] == want[i]) ||
		    (f < nforeign && foreign[f] == want[i]))
			continue;
		out[n++] = want[i];
	}
	return n;
}

ssize_t moat_rdt_read_tids(const char *dir, __u32 **out)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/tasks", dir);
	return moat_read_tids(path, out);
}

ssize_t moat_rdt_add_tasks(struct moat_journal *j, const char *dir,
			   const __u32 *tids, size_t n, size_t *gone)
{
	char path[PATH_MAX], buf[16];
	size_t i, moved = 0;
	int fd, len;

	*gone = 0;
	snprintf(path, sizeof(path), "%s/tasks", dir);
	fd = moat_kfile_open_put(j, path);
	if (fd < 0)
		return fd;
	for (i = 0; i < n; i++) {
		len = snprintf(buf, sizeof(buf), "%u\n", tids[i]);
		if (write(fd, buf, len) == len) {
			moved++;
		} else if (errno == ESRCH) {
			(*gone)++;	/* exited, or its tid reused: next */
		} else {
			int err = -errno;

			close(fd);
			return moved ? (ssize_t)moved : err;
		}
	}
	close(fd);
	return moved;
}
