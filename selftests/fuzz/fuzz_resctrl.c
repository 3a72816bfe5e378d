// SPDX-License-Identifier: GPL-2.0-only
/*
 * resctrl's text, as the kernel (or a kernel moat has not met) prints it:
 * info/ files, schemata, and the ways knobs' values.  The input is
 * fields split by NUL bytes: a flags byte (AMD, mba_MBps, CDP), the
 * default group's schemata, a ways value, then info/ files in the order
 * of files[] below.  What parses must compose and diff without breaking
 * the hardware's rules it was checked against.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include "fuzz.h"
#include "resctrl.h"

/* Info files, in input order; dir NULL: the cache's (L3, or under CDP
   L3CODE and L3DATA alike). */
static const struct { const char *dir, *name; } files[] = {
	{ NULL, "cbm_mask" }, { NULL, "min_cbm_bits" }, { NULL, "num_closids" },
	{ NULL, "shareable_bits" }, { NULL, "sparse_masks" },
	{ "MB", "bandwidth_gran" }, { "MB", "min_bandwidth" },
	{ "MB", "num_closids" }, { "MB", "delay_linear" },
	{ "L3_MON", "num_rmids" }, { "L3_MON", "mon_features" },
};

/* Two trees, made once: one with L3, one with CDP's L3CODE and L3DATA. */
static char roots[2][64];
static const char *root;

static void put(const char *rel, const char *text, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fuzz_check(fd >= 0);
	fuzz_check(write(fd, text, len) == (ssize_t)len);
	close(fd);
}

static void remove_trees(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", roots[0], roots[1]);
	if (system(cmd))
		fprintf(stderr, "could not remove %s and %s\n", roots[0], roots[1]);
}

static void make_tree(bool cdp)
{
	static const char *const dirs[2][6] = {
		{ "", "/info", "/info/L3", "/info/MB", "/info/L3_MON", NULL },
		{ "", "/info", "/info/L3CODE", "/info/L3DATA", "/info/MB",
		  "/info/L3_MON" },
	};
	char path[256];
	unsigned int t, i;

	for (t = 0; !root && t < 2; t++) {
		snprintf(roots[t], sizeof(roots[t]), "/dev/shm/moat-fuzz-resctrl-%d-%u",
			 getpid(), t);
		for (i = 0; i < 6 && dirs[t][i]; i++) {
			snprintf(path, sizeof(path), "%s%s", roots[t], dirs[t][i]);
			fuzz_check(!mkdir(path, 0700) || errno == EEXIST);
		}
	}
	if (!root)
		atexit(remove_trees);
	root = roots[cdp];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *field[16], *p = (const char *)data, *end = p + size;
	size_t flen[16], nf = 0, i, d;
	struct moat_schemata dflt, want;
	struct moat_rdt_alloc a = {};
	struct moat_rdt_info in;
	char why[512], buf[4096], rel[64], *text;
	bool amd, mbps, cdp;

	while (nf < 16 && p < end) {
		const char *z = memchr(p, 0, end - p);

		field[nf] = p;
		flen[nf++] = (z ? z : end) - p;
		p = z ? z + 1 : end;
	}
	if (nf < 3)
		return 0;
	amd = field[0][0] & 1;
	mbps = field[0][0] & 2;
	cdp = field[0][0] & 4;
	make_tree(cdp);
	put("schemata", field[1], flen[1]);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		static const char *const caches[2][2] = { { "L3", NULL },
							  { "L3CODE", "L3DATA" } };
		const char *f = 3 + i < nf ? field[3 + i] : "";
		size_t n = 3 + i < nf ? flen[3 + i] : 0, c;

		for (c = 0; c < 2; c++) {
			const char *dir = files[i].dir ? files[i].dir : caches[cdp][c];

			if (!dir || (files[i].dir && c))
				continue;
			snprintf(rel, sizeof(rel), "info/%s/%s", dir, files[i].name);
			put(rel, f, n);
		}
	}

	text = fuzz_string((const uint8_t *)field[1], flen[1], 4096);
	if (!text || moat_schemata_parse(text, &dflt, why, sizeof(why))) {
		free(text);
		return 0;
	}
	free(text);
	if (moat_rdt_info_read(root, amd, mbps, &in, why, sizeof(why)))
		return 0;
	fuzz_check(in.nres >= 1 && in.nres <= MOAT_RDT_MAX_RES);
	text = fuzz_string((const uint8_t *)field[2], flen[2], 512);
	if (!text)
		return 0;
	if (!moat_rdt_ways_parse(text, &a.l3, why, sizeof(why))) {
		a.mb_pct = 1 + (field[0][0] >> 3) % 100;
		a.high = field[0][0] & 0x80;
		if (!moat_rdt_compose(&in, &dflt, &a, &want, why, sizeof(why))) {
			/* every mask composed obeys the rules it was made by */
			for (i = 0; i < want.n; i++) {
				const struct moat_rdt_res *r =
					moat_rdt_res_find(&in, want.line[i].name);

				fuzz_check(r);
				for (d = 0; r->kind == MOAT_RDT_CACHE && d < want.line[i].n; d++)
					fuzz_check(!moat_rdt_check_cbm(r, want.line[i].val[d],
								       why, sizeof(why)));
			}
			moat_schemata_diff(&in, &dflt, &want, buf, sizeof(buf),
					   why, sizeof(why));
		}
	}
	free(text);
	return 0;
}
