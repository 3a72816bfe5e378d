// SPDX-License-Identifier: GPL-2.0-only
/*
 * The journal of original values: its encoding, every way a damaged file
 * is caught, and moat_kfile_write()/restore on real cgroup files.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <criterion/criterion.h>
#include <zlib.h>
#include "helpers.h"
#include "cgroup.h"
#include "hostroot.h"
#include "journal.h"
#include "tasksched.h"

static struct moat_journal *mem_journal(void)
{
	struct moat_journal *j;

	cr_assert_eq(moat_journal_open("", &j), 0);
	return j;
}

static void add(struct moat_journal *j, const char *path, const char *orig)
{
	j->e = realloc(j->e, (j->n + 1) * sizeof(*j->e));
	j->cap = j->n + 1;
	memset(&j->e[j->n], 0, sizeof(j->e[j->n]));
	snprintf(j->e[j->n].path, sizeof(j->e[j->n].path), "%s", path);
	snprintf(j->e[j->n].orig, sizeof(j->e[j->n].orig), "%s", orig);
	j->n++;
}

static char *encode(struct moat_journal *j, size_t *len)
{
	char *buf;

	cr_assert_eq(moat_journal_encode(j, &buf, len), 0);
	return buf;
}

Test(journal, round_trip_keeps_every_byte)
{
	struct moat_journal *j = mem_journal(), *k = mem_journal();
	char why[256], *buf;
	size_t len;

	add(j, "/sys/fs/cgroup/kubepods/pod a/cpu.max", "max 100000");
	add(j, "/sys/fs/cgroup/x%y/memory.high", "12%34\nline two\t");
	add(j, "/sys/fs/cgroup/e/cpu.idle", "");
	strcpy(j->e[0].last, "50000 100000");
	strcpy(j->e[0].pending, "25000 100000");
	j->e[1].kind = MOAT_J_SIDE;
	buf = encode(j, &len);
	cr_assert_eq(moat_journal_decode(k, buf, len, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(k->n, 3);
	cr_assert_str_eq(k->e[0].path, "/sys/fs/cgroup/kubepods/pod a/cpu.max");
	cr_assert_str_eq(k->e[0].orig, "max 100000");
	cr_assert_str_eq(k->e[1].path, "/sys/fs/cgroup/x%y/memory.high");
	cr_assert_str_eq(k->e[1].orig, "12%34\nline two\t");
	cr_assert_str_eq(k->e[2].orig, "");
	cr_assert_str_eq(k->e[0].last, "50000 100000");
	cr_assert_str_eq(k->e[0].pending, "25000 100000");
	cr_assert_str_eq(k->e[1].last, "");
	cr_assert(k->e[1].kind == MOAT_J_SIDE && k->e[0].kind == MOAT_J_FILE);
	cr_assert(strstr(buf, "\nside /sys/fs/cgroup/x%25y/memory.high "), "%s", buf);
	cr_assert(strstr(buf, "pod%20a/cpu.max max%20100000 50000%20100000 25000%20100000\n"),
		  "%s", buf);
	free(buf);
	moat_journal_free(j);
	moat_journal_free(k);
}

/* Decoding @text fails, and @why names @expect. */
static void bad(const char *text, size_t len, const char *expect)
{
	struct moat_journal *j = mem_journal();
	char why[256] = "";

	cr_assert_eq(moat_journal_decode(j, text, len, why, sizeof(why)), -EBADMSG,
		     "accepted: %.*s", (int)len, text);
	cr_assert(strstr(why, expect), "'%s' does not say '%s'", why, expect);
	cr_assert_eq(j->n, 0, "a bad journal leaves no entries");
	moat_journal_free(j);
}

static void bad_text(const char *text, const char *expect)
{
	bad(text, strlen(text), expect);
}

Test(journal, damage_is_reported_never_ignored)
{
	struct moat_journal *j = mem_journal();
	char *buf, *copy;
	size_t len;

	add(j, "/sys/fs/cgroup/a/cpu.max", "max 100000");
	add(j, "/sys/fs/cgroup/b/cpu.max", "50000 100000");
	buf = encode(j, &len);

	bad("", 0, "not a moat journal");
	bad_text("moat-journal 3\nend 0 0\n", "not a moat journal");
	/* Cut anywhere: inside an entry, before the end line, inside it. */
	bad(buf, len - 1, "truncated");
	bad(buf, strchr(buf + 15, '\n') + 1 - buf, "no end line");
	bad(buf, strstr(buf, "file /sys/fs/cgroup/b") + 10 - buf, "truncated");

	copy = malloc(len + 16);
	memcpy(copy, buf, len);
	copy[strstr(buf, "50000") - buf] = '6';		/* a changed value */
	bad(copy, len, "checksum");
	memcpy(copy, buf, len);
	*strstr(copy, "end 2") = 'x';			/* no end line */
	bad(copy, len, "bad entry");
	memcpy(copy, buf, len);
	strstr(copy, "end 2")[4] = '3';			/* count */
	bad(copy, len, "3 entries promised, 2 found");
	memcpy(copy, buf, len);
	memcpy(copy + len, "file /x y\n", 10);		/* after the end */
	bad(copy, len + 10, "after the end");
	free(copy);
	free(buf);

	bad_text("moat-journal 1\nfile relative/cpu.max 1\nend 1 0\n", "not absolute");
	bad_text("moat-journal 1\nfile /a/../etc/passwd 1\nend 1 0\n", "not absolute");
	bad_text("moat-journal 1\nfile /a/cpu.max %4\nend 1 0\n", "bad entry");
	bad_text("moat-journal 1\nfile /a/cpu.max\nend 1 0\n", "bad entry");
	bad_text("moat-journal 2\nfile /a/cpu.max 1\nend 1 0\n", "bad entry");
	bad_text("moat-journal 2\nfile /a/cpu.max 1 1 1 1\nend 1 0\n", "bad entry");
	bad_text("moat-journal 2\nfile /a/cpu.max 1  1\nend 1 0\n", "bad entry");
	moat_journal_free(j);
}

/* A journal of version 1, as moatd wrote it before <last> and <pending>. */
Test(journal, version_1_is_still_read)
{
	static const char v1[] = "moat-journal 1\nfile /sys/fs/cgroup/a/cpu.max max%20100000\n";
	struct moat_journal *j = mem_journal();
	char why[256], text[256];

	snprintf(text, sizeof(text), "%send 1 %08lx\n", v1,
		 crc32(0, (const unsigned char *)v1, strlen(v1)));
	cr_assert_eq(moat_journal_decode(j, text, strlen(text), why, sizeof(why)), 0,
		     "%s", why);
	cr_assert_eq(j->n, 1);
	cr_expect_str_eq(j->e[0].orig, "max 100000");
	cr_expect_str_eq(j->e[0].last, "", "not known in version 1");
	moat_journal_free(j);
}

static char tmp_dir[] = "/tmp/moat-test-journal-XXXXXX";

static void fini_tmp(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp_dir);
	cr_assert_eq(system(cmd), 0);
	tcg_cleanup();
}

Test(journal, a_damaged_file_does_not_open, .fini = fini_tmp)
{
	struct moat_journal *j;
	char file[PATH_MAX];
	FILE *f;

	cr_assert_not_null(mkdtemp(tmp_dir));
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	cr_assert_eq(moat_journal_open(file, &j), 0, "a missing file is empty");
	cr_assert_eq(j->n, 0);
	moat_journal_free(j);
	f = fopen(file, "w");
	fputs("moat-journal 1\nfile /sys/fs/cgroup/a/cpu.max max%20100000\n", f);
	fclose(f);
	cr_assert_eq(moat_journal_open(file, &j), -EBADMSG);
}

/*
 * moat's own files in its state directory: saved whole, read whole; none
 * is -ENOENT, one too large -EOVERFLOW, and a FIFO (or a directory) is
 * refused at once, never waited on.
 */
Test(journal, a_state_file_is_read_whole_and_a_fifo_refused, .fini = fini_tmp)
{
	char file[PATH_MAX], buf[16];

	cr_assert_not_null(mkdtemp(tmp_dir));
	snprintf(file, sizeof(file), "%s/evictions", tmp_dir);
	cr_expect_eq(moat_state_load(file, buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(moat_state_save(file, "moat 1\n12.5\n", 12), 0);
	cr_assert_eq(moat_state_load(file, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "moat 1\n12.5\n");
	cr_expect_eq(moat_state_load(file, buf, 12), -EOVERFLOW, "12 bytes in 12");
	cr_assert_eq(moat_state_save(file, "0123456789abcdef", 16), 0);
	cr_expect_eq(moat_state_load(file, buf, sizeof(buf)), -EOVERFLOW);
	cr_assert_eq(unlink(file), 0);
	cr_assert_eq(mkfifo(file, 0600), 0);
	cr_expect_eq(moat_state_load(file, buf, sizeof(buf)), -EINVAL);
	cr_expect_eq(moat_state_load(tmp_dir, buf, sizeof(buf)), -EINVAL);
}

/* The test's cgroup @name, and the temporary directory for a journal. */
static void cgroup_and_dir(const char *name, struct tcg *cg)
{
	const char *skip = tcg_skip_reason(false);

	if (skip)
		cr_skip_test("%s", skip);
	cr_assert_eq(tcg_setup(), 0);
	cr_assert_eq(tcg_create(name, cg), 0);
	cr_assert_not_null(mkdtemp(tmp_dir));
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	cr_assert_not_null(f, "%s", path);
	cr_assert_not_null(fgets(buf, len, f));
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

Test(journal, kfile_write_records_first_and_restores_exactly, .fini = fini_tmp)
{
	char file[PATH_MAX], quota[PATH_MAX + 16], buf[64];
	struct moat_journal *j, *again;
	struct tcg cg;

	cgroup_and_dir("journal", &cg);
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	snprintf(quota, sizeof(quota), "%s/%s", cg.dir,
		 tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares");
	cr_assert_eq(tcg_write(&cg, tcg_hierarchy()->v2 ? "cpu.weight" :
			       "cpu.shares", tcg_hierarchy()->v2 ? "77" : "777"), 0);

	cr_assert_eq(moat_journal_open(file, &j), 0);
	cr_assert_eq(moat_kfile_write(j, quota, "20"), 0);
	read_file(quota, buf, sizeof(buf));
	cr_assert_str_eq(buf, "20");
	cr_assert_eq(j->n, 1);
	cr_assert_str_eq(j->e[0].orig, tcg_hierarchy()->v2 ? "77" : "777");

	/* On disk before anything else: a crash now is restored from it. */
	cr_assert_eq(moat_journal_open(file, &again), 0);
	cr_assert_eq(again->n, 1);
	cr_assert_str_eq(again->e[0].orig, j->e[0].orig);

	cr_assert_str_eq(again->e[0].pending, "20", "what is written, saved first");
	moat_journal_free(again);

	/* A second write keeps the first original. */
	cr_assert_eq(moat_kfile_write(j, quota, "30"), 0);
	cr_assert_eq(j->n, 1);
	cr_assert_str_eq(j->e[0].orig, tcg_hierarchy()->v2 ? "77" : "777");

	/* Restored from the reopened journal, as after a crash. */
	cr_assert_eq(moat_journal_open(file, &again), 0);
	cr_assert_eq(moat_journal_restore(again, ""), 0);
	read_file(quota, buf, sizeof(buf));
	cr_assert_str_eq(buf, tcg_hierarchy()->v2 ? "77" : "777");
	cr_assert_eq(again->n, 0);
	moat_journal_free(again);
	cr_assert_eq(moat_journal_open(file, &again), 0);
	cr_assert_eq(again->n, 0, "the restore emptied the file too");
	moat_journal_free(again);
	moat_journal_free(j);
}

static int outside_seen;
static char outside_now[64];

static void outside(void *ctx, const struct moat_journal_entry *e, const char *now)
{
	outside_seen++;
	snprintf(outside_now, sizeof(outside_now), "%s", now);
}

/*
 * A file someone else wrote since moat's last write: moat's next write
 * does not go over it (what it wanted came from an older snapshot), the
 * check tells the owner, and a restore leaves it.  Written to what moat
 * wants, it is the original.
 */
Test(journal, someone_elses_change_is_not_written_over, .fini = fini_tmp)
{
	const char *skip = tcg_skip_reason(false);
	const char *file;
	char path[PATH_MAX + 16], buf[64];
	struct moat_journal *j;
	struct tcg cg;

	if (skip)
		cr_skip_test("%s", skip);
	cr_assert_eq(tcg_setup(), 0);
	cr_assert_eq(tcg_create("journal", &cg), 0);
	file = tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares";
	snprintf(path, sizeof(path), "%s/%s", cg.dir, file);
	j = mem_journal();
	cr_assert_eq(moat_kfile_write(j, path, "100"), 0);
	cr_assert_eq(tcg_write(&cg, file, "300"), 0);	/* "kubelet" */
	cr_assert_eq(moat_kfile_write(j, path, "50"), 0);
	read_file(path, buf, sizeof(buf));
	cr_assert_str_eq(buf, "300", "moat wrote over kubelet's value");
	outside_seen = 0;
	cr_assert_eq(moat_journal_check(j, "", outside, NULL), 1);
	cr_assert_str_eq(outside_now, "300");
	cr_assert_eq(moat_journal_restore(j, cg.dir), 0);
	read_file(path, buf, sizeof(buf));
	cr_assert_str_eq(buf, "300");

	cr_assert_eq(moat_kfile_write(j, path, "100"), 0);
	cr_assert_eq(tcg_write(&cg, file, "50"), 0);	/* what moat wants next */
	cr_assert_eq(moat_kfile_write(j, path, "50"), 0);
	cr_assert_str_eq(j->e[0].orig, "50", "a value as moat wants is not the original");
	cr_assert_eq(moat_journal_restore(j, cg.dir), 0);
	read_file(path, buf, sizeof(buf));
	cr_assert_str_eq(buf, "50");
	moat_journal_free(j);
}

/*
 * Someone else writing while the journal is saved (its fsyncs are the
 * slow step of a write; kubelet's resize landed in them, and moat's step
 * went over it): the journal's rename() here is where "kubelet" writes,
 * the interleaving a concurrent writer gets by chance, on cue.  Every
 * other rename goes through.
 */
static void (*race)(void);
/* renames (the journal's saves) counted; with rename_errno set, refused */
static unsigned int renames;
static int rename_errno;

int rename(const char *from, const char *to)
{
	int (*real)(const char *, const char *) =
		(int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	void (*now)(void) = race;

	race = NULL;
	if (now)
		now();
	renames++;
	if (rename_errno) {
		errno = rename_errno;
		return -1;
	}
	return real(from, to);
}

static struct tcg *race_cg;
static const char *race_file;

static void kubelet_writes(void)
{
	cr_assert_eq(tcg_write(race_cg, race_file, "300"), 0);
}

/*
 * The check of what moat holds, each period: a file that holds what moat
 * wrote is moat's still; one that someone else wrote is told once and
 * dropped, so a restore leaves their value; one gone with its cgroup is
 * dropped quietly.
 */
Test(journal, a_check_finds_what_someone_else_wrote, .fini = fini_tmp)
{
	const char *skip = tcg_skip_reason(false);
	const char *file;
	char path[2][PATH_MAX * 5], buf[64];
	struct moat_journal *j;
	struct tcg cg[2];

	if (skip)
		cr_skip_test("%s", skip);
	cr_assert_eq(tcg_setup(), 0);
	cr_assert_eq(tcg_create("journal", &cg[0]), 0);
	cr_assert_eq(tcg_create("journal-2", &cg[1]), 0);
	file = tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares";
	j = mem_journal();
	for (int i = 0; i < 2; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/%s", cg[i].dir, file);
		cr_assert_eq(moat_kfile_write(j, path[i], "100"), 0);
	}
	outside_seen = 0;
	cr_assert_eq(moat_journal_check(j, "", outside, NULL), 0);
	cr_assert_eq(outside_seen, 0, "moat's own value taken for someone else's");
	cr_assert_eq(j->n, 2);

	cr_assert_eq(tcg_write(&cg[0], file, "300"), 0);	/* "kubelet" */
	cr_assert_eq(moat_journal_check(j, "", outside, NULL), 1);
	cr_assert_eq(outside_seen, 1);
	cr_assert_str_eq(outside_now, "300");
	cr_assert_eq(j->n, 1, "the outside write's entry kept");
	cr_assert_str_eq(j->e[0].path, path[1]);
	cr_assert_eq(moat_journal_check(j, "", outside, NULL), 0, "told twice");

	cr_assert_eq(moat_journal_restore(j, ""), 0);
	read_file(path[0], buf, sizeof(buf));
	cr_assert_str_eq(buf, "300", "their value was not theirs to keep");

	/* a cgroup gone: its entry goes quietly */
	cr_assert_eq(moat_kfile_write(j, path[1], "100"), 0);
	cr_assert_eq(rmdir(cg[1].dir), 0);
	outside_seen = 0;
	cr_assert_eq(moat_journal_check(j, "", outside, NULL), 0);
	cr_assert_eq(outside_seen, 0);
	cr_assert_eq(j->n, 0);
	moat_journal_free(j);
}

/*
 * A write of someone else's while moat saves the journal stands: moat
 * does not write over it, and the next check tells who holds the file.
 */
Test(journal, a_write_during_the_save_is_not_written_over, .fini = fini_tmp)
{
	char file[PATH_MAX], path[PATH_MAX + 16], buf[64];
	struct moat_journal *j;
	struct tcg cg;

	cgroup_and_dir("journal", &cg);
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	race_file = tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares";
	snprintf(path, sizeof(path), "%s/%s", cg.dir, race_file);
	cr_assert_eq(moat_journal_open(file, &j), 0);
	cr_assert_eq(moat_kfile_write(j, path, "100"), 0);

	race_cg = &cg;
	race = kubelet_writes;	/* as moat saves its next step */
	cr_assert_eq(moat_kfile_write(j, path, "50"), 0);
	cr_assert_null(race, "the write saved no journal");
	read_file(path, buf, sizeof(buf));
	cr_assert_str_eq(buf, "300", "moat wrote over a write made as it saved");
	cr_assert_str_eq(j->e[0].pending, "", "a write not made left pending");

	outside_seen = 0;
	cr_assert_eq(moat_journal_check(j, "", outside, NULL), 1);
	cr_assert_str_eq(outside_now, "300");
	cr_assert_eq(moat_journal_restore(j, ""), 0);
	read_file(path, buf, sizeof(buf));
	cr_assert_str_eq(buf, "300", "a restore undid their write");
	moat_journal_free(j);
}

/*
 * After a crash, a value someone changed since moat's last write is
 * theirs: the next start leaves it (an admin's 700 is not undone by the
 * 512 moat once wrote, nor put back to the 1024 before it).
 */
Test(journal, after_a_crash_a_value_changed_since_is_left, .fini = fini_tmp)
{
	const char *skip = tcg_skip_reason(false);
	const char *name;
	char file[PATH_MAX], path[PATH_MAX + 16], buf[64];
	struct moat_journal *j, *again;
	struct tcg cg, other;

	if (skip)
		cr_skip_test("%s", skip);
	cr_assert_eq(tcg_setup(), 0);
	cr_assert_eq(tcg_create("journal", &cg), 0);
	cr_assert_eq(tcg_create("journal-2", &other), 0);
	cr_assert_not_null(mkdtemp(tmp_dir));
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	name = tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares";
	cr_assert_eq(moat_journal_open(file, &j), 0);
	snprintf(path, sizeof(path), "%s/%s", cg.dir, name);
	cr_assert_eq(moat_kfile_write(j, path, "512"), 0);
	snprintf(path, sizeof(path), "%s/%s", other.dir, name);
	cr_assert_eq(moat_kfile_write(j, path, "512"), 0);
	/* the crash: j is lost; then an admin sets one of them */
	cr_assert_eq(tcg_write(&cg, name, "700"), 0);

	cr_assert_eq(moat_journal_open(file, &again), 0);
	cr_assert_eq(moat_journal_restore(again, ""), 0);
	snprintf(path, sizeof(path), "%s/%s", cg.dir, name);
	read_file(path, buf, sizeof(buf));
	cr_expect_str_eq(buf, "700", "the admin's value was undone");
	snprintf(path, sizeof(path), "%s/%s", other.dir, name);
	read_file(path, buf, sizeof(buf));
	cr_expect_str_eq(buf, tcg_hierarchy()->v2 ? "100" : "1024",
			 "moat's value was not put back");
	cr_expect_eq(again->n, 0);
	moat_journal_free(again);
	moat_journal_free(j);
}

/*
 * A journal that cannot be saved: no write is made, the failure counted
 * and the journal marked stale until a save succeeds.
 */
Test(journal, no_write_without_a_saved_record, .fini = fini_tmp)
{
	char file[PATH_MAX], path[PATH_MAX + 16], buf[64];
	struct moat_journal *j;
	struct tcg cg;

	cgroup_and_dir("journal", &cg);
	snprintf(file, sizeof(file), "%s/no-such-dir/journal", tmp_dir);
	cr_assert_eq(moat_journal_open(file, &j), 0);
	snprintf(path, sizeof(path), "%s/%s", cg.dir,
		 tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares");
	cr_assert_eq(moat_kfile_write(j, path, "512"), -ENOENT);
	cr_expect(j->stale && j->save_errors == 1 && j->n == 0);
	read_file(path, buf, sizeof(buf));
	cr_expect_str_eq(buf, tcg_hierarchy()->v2 ? "100" : "1024", "written unrecorded");
	snprintf(file, sizeof(file), "%s/no-such-dir", tmp_dir);
	cr_assert_eq(mkdir(file, 0700), 0);
	cr_assert_eq(moat_kfile_write(j, path, "512"), 0);
	cr_expect(!j->stale, "saved again: no longer stale");
	cr_assert_eq(moat_journal_restore(j, ""), 0);
	moat_journal_free(j);
}

Test(journal, writes_nothing_outside_cgroup_file_systems, .fini = fini_tmp)
{
	struct moat_journal *j = mem_journal();
	char file[PATH_MAX], buf[64];
	FILE *f;

	cr_assert_not_null(mkdtemp(tmp_dir));
	snprintf(file, sizeof(file), "%s/not-a-cgroup", tmp_dir);
	f = fopen(file, "w");
	fputs("1\n", f);
	fclose(f);
	cr_assert_eq(moat_kfile_write(j, file, "2"), -EXDEV);
	cr_assert_eq(j->n, 0);
	read_file(file, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1");
	/* of /proc/sys, only the sysctl an older journal may name (kfile.c) */
	cr_assert_eq(moat_kfile_read("/proc/sys/kernel/ostype", buf, sizeof(buf)),
		     -EXDEV);
	cr_assert_eq(moat_kfile_read("/proc/sys/kernel/task_delayacct", buf,
				     sizeof(buf)), 0);
	moat_journal_free(j);
}

Test(journal, a_vanished_cgroup_drops_out, .fini = fini_tmp)
{
	struct moat_journal *j = mem_journal();

	add(j, "/sys/fs/cgroup/cpu/moat-test-gone-0/cpu.shares", "1024");
	cr_assert_eq(moat_journal_restore(j, ""), 0);
	cr_assert_eq(j->n, 0);
	cr_assert_eq(moat_kfile_write(j, "/sys/fs/cgroup/cpu/moat-test-gone-0/cpu.shares",
				      "2"), -ENOENT);
	cr_assert_eq(j->n, 0);
	moat_journal_free(j);
}

/*
 * A journal kept under a host root (a pod's /host) says so, and its paths
 * are the host's to a moatd with another host root: the node's own moatd
 * puts back what a crashed pod changed, and the other way.
 */
Test(journal, paths_kept_under_a_host_root_are_the_hosts)
{
	struct moat_journal *j = mem_journal(), *k = mem_journal();
	char why[256], *buf, *text;
	size_t len;

	cr_assert_eq(moat_host_root_set("/tmp/"), 0);
	cr_expect_str_eq(moat_host_root(), "/tmp");
	add(j, "/tmp/sys/fs/cgroup/kubepods/besteffort/cpu.max", "max 100000");
	add(j, "/elsewhere/cpu.max", "max 100000");
	buf = encode(j, &len);
	text = strndup(buf, len);
	cr_expect(strstr(text, "moat-journal 2\nroot /tmp\nfile /tmp/sys/fs/cgroup/"),
		  "no root line: %s", text);

	cr_assert_eq(moat_host_root_set("/"), 0);
	cr_expect_str_eq(moat_host_root(), "");
	cr_assert_eq(moat_journal_decode(k, buf, len, why, sizeof(why)), 0, "%s", why);
	cr_expect_str_eq(k->e[0].path, "/sys/fs/cgroup/kubepods/besteffort/cpu.max");
	cr_expect_str_eq(k->e[1].path, "/elsewhere/cpu.max", "not below the root: as it was");

	cr_assert_eq(moat_host_root_set("/dev"), 0);
	cr_assert_eq(moat_journal_decode(k, buf, len, why, sizeof(why)), 0, "%s", why);
	cr_expect_str_eq(k->e[0].path, "/dev/sys/fs/cgroup/kubepods/besteffort/cpu.max");
	free(buf);

	/* the node's journal, read in a pod */
	cr_assert_eq(moat_host_root_set(""), 0);
	buf = encode(k, &len);
	cr_expect(!strstr(buf, "\nroot "), "a root line without a host root");
	cr_assert_eq(moat_host_root_set("/tmp"), 0);
	cr_assert_eq(moat_journal_decode(k, buf, len, why, sizeof(why)), 0, "%s", why);
	cr_expect_str_eq(k->e[0].path, "/tmp/dev/sys/fs/cgroup/kubepods/besteffort/cpu.max");
	free(buf);
	free(text);

	cr_expect_eq(moat_host_root_set("host"), -EINVAL);
	cr_expect_eq(moat_host_root_set("/tmp/../etc"), -EINVAL);
	cr_expect_eq(moat_host_root_set("/nonexistent-moat-root"), -ENOENT);
	cr_expect_str_eq(moat_host_root(), "/tmp", "a refused root changed the root");
	cr_assert_eq(moat_host_root_set(""), 0);
	moat_journal_free(j);
	moat_journal_free(k);
}

Test(journal, a_bad_root_line_is_refused)
{
	static const char *const bad[] = {
		"moat-journal 2\nroot host\n", "moat-journal 2\nroot /a/../b\n",
		"moat-journal 2\nroot \n", "moat-journal 2\nroot /a",
	};
	struct moat_journal *j = mem_journal();
	char text[256], why[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n = snprintf(text, sizeof(text), "%s", bad[i]);

		if (text[n - 1] == '\n')
			n += snprintf(text + n, sizeof(text) - n, "end 0 %08lx\n",
				      crc32(0, (const Bytef *)text, n));
		cr_expect_eq(moat_journal_decode(j, text, n, why, sizeof(why)), -EBADMSG,
			     "%s", bad[i]);
	}
	moat_journal_free(j);
}

/* A task entry's fields are checked as a file's are. */
Test(journal, task_entries_round_trip_and_bad_ones_are_refused)
{
	static const char *const bad[] = {
		"task /sys/fs/cgroup/a/task:1:2 0/0/0 0/0/0 %00\n",
		"task /sys/fs/cgroup/a/task:1:2:3 0/0 0/0/0 %00\n",
		"task /sys/fs/cgroup/a/task:0:2:3 0/0/0 0/0/0 %00\n",
		"task /sys/fs/cgroup/a/task:1:2:3 0/40/0 0/0/0 %00\n",
		"task /sys/fs/cgroup/a/task:1:2:3 0/0/0 5/0/x %00\n",
	};
	struct moat_journal *j = mem_journal(), *k = mem_journal();
	char text[512], why[256], *buf;
	size_t len, i;

	add(j, "/sys/fs/cgroup/kubepods/besteffort/podx/task:10:12:345", "0/3/0");
	j->e[0].kind = MOAT_J_TASK;
	strcpy(j->e[0].last, "5/3/0");
	strcpy(j->e[0].pending, "");
	buf = encode(j, &len);
	cr_assert_eq(moat_journal_decode(k, buf, len, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(k->n, 1);
	cr_expect_eq(k->e[0].kind, MOAT_J_TASK);
	cr_expect_str_eq(k->e[0].orig, "0/3/0");
	cr_expect_str_eq(k->e[0].last, "5/3/0");
	free(buf);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n = snprintf(text, sizeof(text), "moat-journal 2\n%s", bad[i]);

		n += snprintf(text + n, sizeof(text) - n, "end 1 %08lx\n",
			      crc32(0, (const Bytef *)text, n));
		cr_expect_eq(moat_journal_decode(k, text, n, why, sizeof(why)), -EBADMSG,
			     "accepted: %s", bad[i]);
	}
	moat_journal_free(j);
	moat_journal_free(k);
}

static void expect_sched(pid_t tid, const struct moat_sched *want, const char *what)
{
	char got[64], w[64];

	moat_sched_format(w, sizeof(w), want);
	cr_expect(sched_wait(tid, want, 0, got, sizeof(got)), "%s: thread %d has %s, not %s",
		  what, (int)tid, got, w);
}

/*
 * A thread's policy, nice and slice: recorded before the change, on disk;
 * put back exactly from the file, as after a crash, with the child it
 * forked after the change (it inherited moat's value); a tid whose start
 * time is not the recorded one is another thread and is left alone.
 */
Test(journal, a_threads_scheduling_is_put_back_with_its_children, .fini = fini_tmp)
{
	const struct moat_sched_caps *caps = moat_sched_caps();
	struct moat_sched orig = { SCHED_BATCH, 5, 0 }, want, child_orig;
	struct moat_journal *j, *again;
	char file[PATH_MAX], path[PATH_MAX + 64];
	struct moat_task t, tc;
	struct tcg cg;
	pid_t p, child;

	cgroup_and_dir("sched-attrs", &cg);
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	p = tcg_spawn(&cg, tcg_pick_cpu(), work_forker, NULL);
	cr_assert_gt(p, 0);
	cr_assert(forker_ready(p), "process %d never got ready", (int)p);
	cr_assert_eq(moat_sched_set(p, &orig), 0);
	/* the slice lever where the kernel keeps slices, else SCHED_IDLE */
	want = orig;
	if (caps->slice)
		want.slice_ns = 4000000;
	else
		want.policy = SCHED_IDLE;
	cr_log_info("lever: %s", caps->slice ? "slice 4 ms" : "SCHED_IDLE");

	cr_assert_eq(moat_journal_open(file, &j), 0);
	cr_assert_eq(moat_task_read(p, &t), 0);
	cr_expect_eq(t.tgid, p);
	cr_expect(!t.kthread);
	cr_assert_eq(moat_ktask_write(j, cg.dir, &t, &want, NULL), 0);
	expect_sched(p, &want, "changed");
	cr_assert_eq(moat_journal_open(file, &again), 0);
	cr_assert_eq(again->n, 1, "not on disk before the change");
	cr_expect_eq(again->e[0].kind, MOAT_J_TASK);
	cr_expect_str_eq(again->e[0].orig, "3/5/0");
	moat_journal_free(again);

	/* a record of the same tid with another start time: another thread */
	tc = t;
	tc.start++;
	snprintf(path, sizeof(path), "%s/task:%d:%d:%llu", cg.dir, (int)t.tgid,
		 (int)t.tid, tc.start);
	add(j, path, "0/0/0");
	j->e[j->n - 1].kind = MOAT_J_TASK;
	moat_sched_format(j->e[j->n - 1].last, sizeof(j->e[0].last), &want);
	cr_assert_eq(moat_journal_restore(j, path), 0);
	expect_sched(p, &want, "a reused tid's record");

	/* a child forked now inherits moat's value */
	kill(p, SIGUSR1);
	child = tcg_new_thread(&cg, &p, 1);
	cr_assert_gt(child, 0, "the forker's child never came");
	expect_sched(child, &want, "inherited");
	cr_assert_eq(moat_task_read(child, &tc), 0);
	cr_expect(moat_ktask_inherited(j, cg.dir, &tc, &want, &child_orig),
		  "the child is not seen as inheriting its parent's change");
	cr_expect(moat_sched_equal(&child_orig, &orig));

	/* from the file, as after a crash: the parent and its child */
	cr_assert_eq(moat_journal_open(file, &again), 0);
	cr_assert_eq(moat_journal_restore(again, cg.dir), 0);
	cr_expect_eq(again->n, 0);
	expect_sched(p, &orig, "restored");
	expect_sched(child, &orig, "swept");
	moat_journal_free(again);
	moat_journal_free(j);
}

/*
 * A thread that renices itself under the lever: its policy and slice
 * are still moat's, and are put back, its new nice kept; a pass after
 * the renice does not take the lever for its original.  It was left
 * with the lever for good ("changed since moatd set it").
 */
Test(journal, a_thread_that_renices_itself_gets_its_policy_back, .fini = fini_tmp)
{
	const struct moat_sched_caps *caps = moat_sched_caps();
	struct moat_sched orig = { SCHED_BATCH, 5, 0 }, want, reniced, back;
	struct moat_journal *j;
	char file[PATH_MAX];
	struct moat_task t;
	struct tcg cg;
	pid_t p;

	cgroup_and_dir("sched-renice", &cg);
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	p = tcg_spawn(&cg, tcg_pick_cpu(), work_forker, NULL);
	cr_assert_gt(p, 0);
	cr_assert(forker_ready(p), "process %d never got ready", (int)p);
	cr_assert_eq(moat_sched_set(p, &orig), 0);
	want = orig;
	if (caps->slice)
		want.slice_ns = 4000000;
	else
		want.policy = SCHED_IDLE;
	cr_assert_eq(moat_journal_open(file, &j), 0);
	cr_assert_eq(moat_task_read(p, &t), 0);
	cr_assert_eq(moat_ktask_write(j, cg.dir, &t, &want, NULL), 0);
	expect_sched(p, &want, "changed");
	/*
	 * The application renices itself, the lever on: setpriority(), as
	 * nice(1) and the C library's nice() do (sched_setattr()'s nice is
	 * ignored for SCHED_IDLE before 6.12: the 6.1 guest).
	 */
	cr_assert_eq(setpriority(PRIO_PROCESS, p, 9), 0, "%s", strerror(errno));
	reniced = want;
	reniced.nice = 9;
	expect_sched(p, &reniced, "reniced");
	/* the next pass: moat's still, not someone else's */
	cr_assert_eq(moat_ktask_write(j, cg.dir, &t, &reniced, NULL), 0);
	cr_assert_eq(j->n, 1);
	cr_expect_str_eq(j->e[0].orig, "3/5/0", "the lever taken for the original");
	cr_assert_eq(moat_journal_restore(j, cg.dir), 0);
	back = orig;
	back.nice = 9;
	expect_sched(p, &back, "the policy back, its own nice kept");
	moat_journal_free(j);
}

/*
 * The entries of threads that exited go (a pod that forks would grow the
 * journal a thread a fork), and of a tid now another thread's; a live
 * thread's stays, and so does what is under another cgroup.
 */
Test(journal, entries_of_threads_gone_are_forgotten, .fini = fini_tmp)
{
	struct moat_sched want = { SCHED_BATCH, 0, 0 };
	char file[PATH_MAX], path[PATH_MAX + 64];
	struct moat_journal *j;
	struct moat_task t, tq;
	struct tcg cg;
	pid_t p, q;

	cgroup_and_dir("sched-gone", &cg);
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	p = tcg_spawn(&cg, tcg_pick_cpu(), work_forker, NULL);
	q = tcg_spawn(&cg, tcg_pick_cpu(), work_forker, NULL);
	cr_assert(p > 0 && q > 0);
	cr_assert(forker_ready(p) && forker_ready(q));
	cr_assert_eq(moat_journal_open(file, &j), 0);
	cr_assert_eq(moat_task_read(p, &t), 0);
	cr_assert_eq(moat_task_read(q, &tq), 0);
	cr_assert_eq(moat_ktask_write(j, cg.dir, &t, &want, NULL), 0);
	cr_assert_eq(moat_ktask_write(j, cg.dir, &tq, &want, NULL), 0);
	/* p's tid with another start time: a thread that had it before */
	snprintf(path, sizeof(path), "%s/task:%d:%d:%llu", cg.dir, (int)p, (int)p,
		 t.start - 1);
	add(j, path, "0/0/0");
	j->e[j->n - 1].kind = MOAT_J_TASK;
	/* a thread gone, under another cgroup: not this unit's business */
	snprintf(path, sizeof(path), "%s-other/task:%d:%d:%llu", cg.dir, (int)q,
		 (int)q, tq.start);
	add(j, path, "0/0/0");
	j->e[j->n - 1].kind = MOAT_J_TASK;
	tcg_kill(q);

	cr_assert_eq(moat_ktask_forget_gone(j, cg.dir), 0);
	cr_assert_eq(j->n, 2, "%zu entries left, not p's and the other cgroup's", j->n);
	cr_assert_not_null(moat_ktask_find(j, cg.dir, &t), "a live thread's entry went");
	cr_assert_null(moat_ktask_find(j, cg.dir, &tq), "an exited thread's entry stayed");
	cr_assert_eq(moat_journal_restore(j, cg.dir), 0);
	moat_journal_free(j);
}

static pid_t race_pid;
static const struct moat_sched *race_sched;

static void the_app_renices(void)
{
	cr_assert_eq(moat_sched_set(race_pid, race_sched), 0);
}

/* A thread's own change as moat saves its step stands, and is kept. */
Test(journal, a_threads_change_during_the_save_stands, .fini = fini_tmp)
{
	struct moat_sched orig = { SCHED_BATCH, 5, 0 }, theirs = { SCHED_BATCH, 9, 0 };
	struct moat_sched want = { SCHED_IDLE, 0, 0 };
	struct moat_journal *j;
	char file[PATH_MAX];
	struct moat_task t;
	struct tcg cg;
	pid_t p;

	cgroup_and_dir("sched-race", &cg);
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	p = tcg_spawn(&cg, tcg_pick_cpu(), work_forker, NULL);
	cr_assert_gt(p, 0);
	cr_assert(forker_ready(p), "process %d never got ready", (int)p);
	cr_assert_eq(moat_sched_set(p, &orig), 0);
	cr_assert_eq(moat_journal_open(file, &j), 0);
	cr_assert_eq(moat_task_read(p, &t), 0);

	race_pid = p;
	race_sched = &theirs;
	race = the_app_renices;
	cr_assert_eq(moat_ktask_write(j, cg.dir, &t, &want, NULL), 0);
	cr_assert_null(race, "the change saved no journal");
	expect_sched(p, &theirs, "moat's change over the thread's own");
	cr_assert_eq(moat_journal_restore(j, cg.dir), 0);
	expect_sched(p, &theirs, "a restore undid the thread's own change");
	moat_journal_free(j);
}

/*
 * A pass's threads cost one journal save, not one to three each (a pod
 * that forks hundreds a second cost hundreds of fsyncs a second), and
 * each is on disk before it changes; a save that fails changes none and
 * keeps no record of them.
 */
Test(journal, a_pass_of_threads_is_one_save, .fini = fini_tmp)
{
	struct moat_sched orig = { SCHED_OTHER, 3, 0 }, want = { SCHED_BATCH, 3, 0 };
	struct moat_ktask_op op[4] = { 0 };
	struct moat_journal *j, *again;
	char file[PATH_MAX];
	struct tcg cg;
	pid_t p[4];
	size_t i;

	cgroup_and_dir("sched-batch", &cg);
	snprintf(file, sizeof(file), "%s/journal", tmp_dir);
	for (i = 0; i < 4; i++) {
		p[i] = tcg_spawn(&cg, tcg_pick_cpu(), work_forker, NULL);
		cr_assert_gt(p[i], 0);
		cr_assert(forker_ready(p[i]), "process %d never got ready", (int)p[i]);
		cr_assert_eq(moat_sched_set(p[i], &orig), 0);
		cr_assert_eq(moat_task_read(p[i], &op[i].t), 0);
		op[i].want = want;
	}
	cr_assert_eq(moat_journal_open(file, &j), 0);

	/* the save refused: nothing changed, nothing recorded */
	renames = 0;
	rename_errno = EIO;
	cr_expect_eq(moat_ktask_write_all(j, cg.dir, op, 4), -EIO);
	rename_errno = 0;
	cr_expect_eq(renames, 1, "%u saves tried, not one", renames);
	cr_expect_eq(j->n, 0, "%zu threads recorded by a save that failed", j->n);
	for (i = 0; i < 4; i++) {
		cr_expect_eq(op[i].err, -EIO);
		expect_sched(p[i], &orig, "changed though the save failed");
	}

	/* one thread gone; the three others changed after one save */
	tcg_kill(p[3]);
	renames = 0;
	cr_assert_eq(moat_ktask_write_all(j, cg.dir, op, 4), 0);
	cr_expect_eq(renames, 1, "%u saves for four threads, not one", renames);
	cr_expect_eq(op[3].err, -ENOENT);
	for (i = 0; i < 3; i++) {
		cr_expect_eq(op[i].err, 0, "thread %zu: %s", i, strerror(-op[i].err));
		cr_expect(op[i].changed);
		expect_sched(p[i], &want, "in the batch");
	}
	/* again, each with moat's value already: nothing to save */
	renames = 0;
	cr_assert_eq(moat_ktask_write_all(j, cg.dir, op, 3), 0);
	cr_expect_eq(renames, 0, "%u saves where nothing changed", renames);
	for (i = 0; i < 3; i++)
		cr_expect(!op[i].err && !op[i].changed, "thread %zu: err %d, changed %d",
			  i, op[i].err, op[i].changed);
	cr_assert_eq(moat_journal_open(file, &again), 0);
	cr_expect_eq(again->n, 3, "%zu entries on disk, not the three threads'", again->n);
	for (i = 0; i < again->n; i++)
		cr_expect_str_eq(again->e[i].orig, "0/3/0");
	/* from the file, as after a crash */
	cr_assert_eq(moat_journal_restore(again, cg.dir), 0);
	for (i = 0; i < 3; i++)
		expect_sched(p[i], &orig, "restored");
	moat_journal_free(again);
	moat_journal_free(j);
}
