/*
 * test_store_group.c — group commit of records (src/store/group.c): threads
 * sharing one SQLite handle at synchronous=FULL.
 *
 *   - every record answered is committed when it is answered: a child
 *     process records from 4 threads and tells the parent each op id as
 *     its record returns; the parent kills it (SIGKILL) in the middle and
 *     finds every op id it was told in the ledger;
 *   - records written in one batch fail alone: with the handle's lock
 *     held, a leader waits and 4 records queue behind it, among them a
 *     duplicate op id and a record with no status; when the lock goes, the
 *     4 are one batch: the 2 bad ones fail with their own sentences, the
 *     2 good ones are in the ledger, each with its events' seqs;
 *   - many threads at once: every record is in the ledger once and some
 *     were grouped.
 *
 * Owns: nothing outside its temporary directories.  Must not: depend on
 * the network or on files outside the repository.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/impl.h"
#include "util/util.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void make_dir(char *dir, char *db, size_t cap)
{
	strcpy(dir, "/tmp/tg_group_XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(db, cap, "%s/ledger.db", dir);
}

/* Record op id (status st, NULL for none) with three events: the answer,
 * err set on failure; seq[3] gets the events' seqs. */
static int record_one(tgi_store *s, const char *id, const char *st, char *err, size_t errlen,
                      int64_t seq[3])
{
	int64_t t = tgi_unix_ms();
	tgi_op_record op = { .op_id = id, .tool = "write_file", .principal = "local", .status = st,
	                     .args_redacted = "{\"path\":\"a.txt\"}", .envelope = "{\"ok\":true}",
	                     .started_ms = t, .duration_ms = 0.1 };
	tgi_event ev[3] = { { "tool.call.received", "decode", NULL, t, 0 },
	                    { "tool.call.started", "execute", NULL, t, 0 },
	                    { "tool.call.persisted", "persist", NULL, t, 0 } };
	int rc = tgi_store_record(s, &op, ev, 3, NULL, TGI_SETTLE_NONE, err, errlen);
	if (seq)
		for (int i = 0; i < 3; i++)
			seq[i] = ev[i].seq;
	return rc;
}

/* Is op id in the ledger at db (a handle of its own)? */
static int in_ledger(tgi_store *s, const char *id)
{
	char err[512];
	json_t *out = NULL;
	tgi_log_filter f = { .op_id = id, .limit = 10 };
	if (tgi_store_ops(s, &f, &out, err, sizeof err) < 0)
		fail_msg("ops: %s", err);
	int n = (int)json_array_size(out);
	json_decref(out);
	return n;
}

/* ---- answered means committed, across a SIGKILL ---- */

#define KILL_THREADS 4

typedef struct {
	tgi_store *s;
	int        fd;
} kill_arg;

static void *kill_worker(void *arg)
{
	kill_arg *a = arg;
	for (;;) {
		char id[37], err[512], line[40];
		tgi_uuidv7(id);
		if (record_one(a->s, id, "persisted", err, sizeof err, NULL) < 0)
			_exit(3);
		snprintf(line, sizeof line, "%s\n", id);
		if (write(a->fd, line, 37) != 37)   /* atomic: shorter than PIPE_BUF */
			_exit(4);
	}
	return NULL;
}

static void test_answered_survive_kill(void **state)
{
	(void)state;
	char dir[64], db[96], err[512];
	int p[2];
	make_dir(dir, db, sizeof db);
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		tgi_store *s;
		if (tgi_store_open(db, TGI_STORE_SYNC_FULL, &s, err, sizeof err) < 0)
			_exit(2);
		pthread_t th[KILL_THREADS];
		kill_arg a = { s, p[1] };
		for (int i = 0; i < KILL_THREADS; i++)
			pthread_create(&th[i], NULL, kill_worker, &a);
		for (;;)
			pause();
	}
	close(p[1]);
	/* read answers until enough came, then kill at once */
	size_t cap = 600, n = 0, got = 0;
	char *buf = malloc(cap * 37 + 37);
	while (n < 300) {
		ssize_t r = read(p[0], buf + got, cap * 37 - got);
		if (r < 0 && errno == EINTR)
			continue;
		assert_true(r > 0);
		got += (size_t)r;
		n = got / 37;
	}
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	assert_true(WIFSIGNALED(st));
	close(p[0]);
	tgi_store *s;
	if (tgi_store_open(db, 0, &s, err, sizeof err) < 0)
		fail_msg("open after kill: %s", err);
	for (size_t i = 0; i < n; i++) {
		char id[37];
		memcpy(id, buf + i * 37, 36);
		id[36] = '\0';
		if (in_ledger(s, id) != 1)
			fail_msg("op %s was answered and is not in the ledger", id);
	}
	tgi_store_close(s);
	free(buf);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- one batch, bad records among good ones ---- */

typedef struct {
	tgi_store  *s;
	char        id[37];
	const char *status;
	int         rc;
	char        err[512];
	int64_t     seq[3];
} rec_arg;

static void *rec_worker(void *arg)
{
	rec_arg *a = arg;
	a->rc = record_one(a->s, a->id, a->status, a->err, sizeof a->err, a->seq);
	return NULL;
}

static void wait_queued(tgi_store *s, size_t n)
{
	for (int i = 0; i < 5000 && tgi_group_queued(s) < n; i++)
		usleep(1000);
	assert_int_equal(tgi_group_queued(s), n);
}

static int leading(tgi_store *s)
{
	pthread_mutex_lock(&s->group.mu);
	int on = s->group.leading;
	pthread_mutex_unlock(&s->group.mu);
	return on;
}

static void test_fail_alone(void **state)
{
	(void)state;
	char dir[64], db[96], err[512], dup[37];
	tgi_store *s;
	make_dir(dir, db, sizeof db);
	if (tgi_store_open(db, TGI_STORE_SYNC_FULL, &s, err, sizeof err) < 0)
		fail_msg("open: %s", err);
	tgi_uuidv7(dup);
	assert_int_equal(record_one(s, dup, "persisted", err, sizeof err, NULL), 0);

	rec_arg lead = { .s = s, .status = "persisted" }, a[4];
	tgi_uuidv7(lead.id);
	const char *sts[4] = { "persisted", "persisted", NULL, "persisted" };
	pthread_t lt, th[4];
	/* the leader takes its batch (itself) and waits for the handle's lock */
	tgi_store_enter(s);
	pthread_create(&lt, NULL, rec_worker, &lead);
	for (int i = 0; i < 5000 && !leading(s); i++)
		usleep(1000);
	/* the four queue behind it: one batch */
	for (int i = 0; i < 4; i++) {
		a[i] = (rec_arg){ .s = s, .status = sts[i] };
		if (i == 1)
			memcpy(a[i].id, dup, 37);
		else
			tgi_uuidv7(a[i].id);
		pthread_create(&th[i], NULL, rec_worker, &a[i]);
	}
	wait_queued(s, 4);
	pthread_mutex_lock(&s->group.mu);
	uint64_t batches = s->group.batches;
	pthread_mutex_unlock(&s->group.mu);
	tgi_store_leave(s, 0);
	pthread_join(lt, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);

	assert_int_equal(lead.rc, 0);
	pthread_mutex_lock(&s->group.mu);
	assert_int_equal(s->group.batches, batches + 1);
	pthread_mutex_unlock(&s->group.mu);
	/* the duplicate and the one with no status fail, each with its sentence */
	assert_int_equal(a[1].rc, -1);
	assert_non_null(strstr(a[1].err, "already in the ledger"));
	assert_int_equal(a[2].rc, -1);
	assert_non_null(strstr(a[2].err, "status"));
	assert_int_equal(a[1].seq[0], 0);
	/* the others are in, with their events */
	for (int i = 0; i < 4; i += 3) {
		if (a[i].rc)
			fail_msg("record %d of the batch failed: %s", i, a[i].err);
		assert_int_equal(in_ledger(s, a[i].id), 1);
		assert_true(a[i].seq[0] > 0 && a[i].seq[1] == a[i].seq[0] + 1 &&
		            a[i].seq[2] == a[i].seq[1] + 1);
	}
	/* in the order they queued, which the threads' start does not fix */
	assert_true(a[3].seq[0] > a[0].seq[2] || a[0].seq[0] > a[3].seq[2]);
	assert_int_equal(in_ledger(s, a[2].id), 0);
	assert_int_equal(in_ledger(s, dup), 1);
	tgi_store_close(s);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- many threads: each record once ---- */

#define MANY_THREADS 8
#define MANY_EACH    40

typedef struct {
	tgi_store *s;
	char       ids[MANY_EACH][37];
	int        failed;
} many_arg;

static void *many_worker(void *arg)
{
	many_arg *a = arg;
	char err[512];
	for (int i = 0; i < MANY_EACH; i++) {
		tgi_uuidv7(a->ids[i]);
		if (record_one(a->s, a->ids[i], "persisted", err, sizeof err, NULL) < 0)
			a->failed++;
	}
	return NULL;
}

static void test_many(void **state)
{
	(void)state;
	char dir[64], db[96], err[512];
	tgi_store *s;
	make_dir(dir, db, sizeof db);
	if (tgi_store_open(db, TGI_STORE_SYNC_FULL, &s, err, sizeof err) < 0)
		fail_msg("open: %s", err);
	static many_arg a[MANY_THREADS];
	pthread_t th[MANY_THREADS];
	for (int i = 0; i < MANY_THREADS; i++) {
		a[i] = (many_arg){ .s = s };
		pthread_create(&th[i], NULL, many_worker, &a[i]);
	}
	for (int i = 0; i < MANY_THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < MANY_THREADS; i++) {
		assert_int_equal(a[i].failed, 0);
		for (int k = 0; k < MANY_EACH; k++)
			assert_int_equal(in_ledger(s, a[i].ids[k]), 1);
	}
	pthread_mutex_lock(&s->group.mu);
	uint64_t grouped = s->group.grouped;
	pthread_mutex_unlock(&s->group.mu);
	print_message("grouped %llu of %d records\n", (unsigned long long)grouped,
	              MANY_THREADS * MANY_EACH);
	tgi_store_close(s);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fail_alone),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_answered_survive_kill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
