// SPDX-License-Identifier: GPL-2.0-only
/* Prometheus's text format, the pieces (prom.h). */
#include <math.h>
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
