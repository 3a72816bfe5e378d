// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where the cgroup hierarchies are, from mountinfo.  The format, from
 * proc(5):
 *
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   (1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
 *
 * (7) is zero or more optional fields ended by "-"; paths are escaped
 * with octal sequences (\040 for a space).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hostroot.h"
#include "log.h"
#include "mountinfo.h"

/* Decode octal escapes in place. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++, d++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d = (s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0');
			s += 3;
		} else {
			*d = *s;
		}
	}
	*d = '\0';
}

static int copy_field(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return -ENAMETOOLONG;
	strcpy(dst, src);
	return 0;
}

static bool has_option(const char *opts, const char *name)
{
	size_t n = strlen(name);
	const char *p = opts;

	while ((p = strstr(p, name))) {
		if ((p == opts || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
		p += n;
	}
	return false;
}

/* Fill @h from one line's root, mount point and super options. */
static int fill_hierarchy(struct moat_cg_hierarchy *h, const char *root,
			  const char *mnt, const char *opts, bool v2)
{
	int err;

	memset(h, 0, sizeof(*h));
	h->v2 = v2;
	err = copy_field(h->root, sizeof(h->root), root);
	if (!err)
		err = copy_field(h->mnt, sizeof(h->mnt), mnt);
	if (!err && strlen(opts) >= sizeof(h->opts))
		err = -ENAMETOOLONG;
	if (!err)
		strcpy(h->opts, opts);
	return err;
}

static bool same_v1_hierarchy(const struct moat_cg_layout *l, const char *opts)
{
	unsigned int i;

	for (i = 0; i < l->nr_v1; i++)
		if (!strcmp(l->v1[i].opts, opts))
			return true;
	return false;
}

/*
 * Only mounts below @under count (the host root, hostroot.h): a pod sees
 * its own cgroup mount first, the host's below /host.  Those show the
 * host's hierarchy, whatever the pod's cgroup namespace makes mountinfo
 * say of their root: relative to the namespace's root, "/../.." for the
 * host's root seen from a pod's cgroup.
 */
static int parse_line(char *line, const char *under, struct moat_cg_layout *l,
		      unsigned int lineno)
{
	char *f[6], *fstype, *superopts, *save = NULL, *tok;
	const char *root;
	unsigned int i;

	/* (1)..(6), then optional fields up to "-". */
	for (i = 0; i < 6; i++) {
		f[i] = strtok_r(i ? NULL : line, " \n", &save);
		if (!f[i])
			goto malformed;
	}
	while ((tok = strtok_r(NULL, " \n", &save)) && strcmp(tok, "-"))
		;
	fstype = strtok_r(NULL, " \n", &save);
	if (!tok || !fstype || !strtok_r(NULL, " \n", &save))
		goto malformed;
	superopts = strtok_r(NULL, " \n", &save);
	if (!superopts)
		goto malformed;
	if (strcmp(fstype, "cgroup2") && strcmp(fstype, "cgroup"))
		return 0;
	unescape(f[3]);
	unescape(f[4]);
	if (!moat_path_below(f[4], under))
		return 0;
	root = f[3];
	if (*under && !strncmp(root, "/..", 3) && (!root[3] || root[3] == '/'))
		root = "/";

	if (!strcmp(fstype, "cgroup2")) {
		if (l->has_v2)
			return 0;
		l->has_v2 = true;
		return fill_hierarchy(&l->v2, root, f[4], "", true);
	}
	if (strcmp(fstype, "cgroup") || same_v1_hierarchy(l, superopts))
		return 0;
	if (l->nr_v1 == MOAT_CG_MAX_V1)
		return -E2BIG;
	return fill_hierarchy(&l->v1[l->nr_v1++], root, f[4], superopts, false);

malformed:
	pr_err("mountinfo line %u: malformed", lineno);
	return -EINVAL;
}

int moat_cg_layout_parse(FILE *mountinfo, const char *under,
			 struct moat_cg_layout *out)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned int lineno = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	while (getline(&line, &cap, mountinfo) > 0) {
		err = parse_line(line, under, out, ++lineno);
		if (err) {
			if (err != -EINVAL)
				pr_err("mountinfo line %u: %s", lineno,
				       strerror(-err));
			break;
		}
	}
	free(line);
	if (err)
		return err;

	if (out->has_v2)
		out->mode = out->nr_v1 ? MOAT_CG_HYBRID : MOAT_CG_UNIFIED;
	else
		out->mode = out->nr_v1 ? MOAT_CG_LEGACY : MOAT_CG_NONE;
	return 0;
}

int moat_cg_layout_read(struct moat_cg_layout *out)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err;

	if (!f) {
		err = -errno;
		pr_err("open /proc/self/mountinfo: %s", strerror(errno));
		return err;
	}
	err = moat_cg_layout_parse(f, moat_host_root(), out);
	fclose(f);
	return err;
}

const struct moat_cg_hierarchy *
moat_cg_layout_find(const struct moat_cg_layout *layout, const char *controller)
{
	unsigned int i;

	for (i = 0; i < layout->nr_v1; i++)
		if (has_option(layout->v1[i].opts, controller))
			return &layout->v1[i];
	return layout->has_v2 ? &layout->v2 : NULL;
}

const char *moat_cg_mode_name(enum moat_cg_mode mode)
{
	switch (mode) {
	case MOAT_CG_UNIFIED:
		return "unified";
	case MOAT_CG_HYBRID:
		return "hybrid";
	case MOAT_CG_LEGACY:
		return "legacy";
	case MOAT_CG_NONE:
		break;
	}
	return "none";
}
