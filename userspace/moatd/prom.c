// SPDX-License-Identifier: GPL-2.0-only
/* Prometheus's text format, the pieces (prom.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prom.h"

void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void prom_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* The shortest of %.15g and %.17g that reads back as @v. */
const char *prom_shortest(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, len, "%.17g", v);
	return buf;
}

void prom_value(FILE *f, double v)
{
	char buf[32];

	if (isnan(v))
		fputs(" NaN\n", f);
	else if (isinf(v))
		fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
	else
		fprintf(f, " %s\n", prom_shortest(buf, sizeof(buf), v));
}

static void series(FILE *f, const char *name, const char *suffix,
		   const char *labels, const char *extra, double v)
{
	/* fputs, not a format: a scrape writes this 30 times a group */
	fputs(name, f);
	fputs(suffix, f);
	fputc('{', f);
	fputs(labels, f);
	if (extra) {
		fputc(',', f);
		fputs(extra, f);
	}
	fputc('}', f);
	prom_value(f, v);
}

void prom_histogram(FILE *f, const char *name, const char *labels,
		    const struct moat_rqlat_hist *h,
		    const char le[][40], const bool *export)
{
	__u64 cum = 0;
	unsigned int s;

	/*
	 * The per-CPU copies are read without a lock, so h->count may lag
	 * or lead the slots by a wait in flight (hist.c): one total, the
	 * slots', for the last bucket and the count.
	 */
	for (s = 0; s < MOAT_HIST_SLOTS; s++) {
		cum += h->slots[s];
		if (s + 1 < MOAT_HIST_SLOTS && export[s])
			series(f, name, "_bucket", labels, le[s], cum);
	}
	series(f, name, "_bucket", labels, "le=\"+Inf\"", cum);
	series(f, name, "_sum", labels, NULL, h->sum_ns / 1e9);
	series(f, name, "_count", labels, NULL, cum);
}
