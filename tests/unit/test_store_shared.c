/*
 * test_store_shared.c — one SQLite store handle shared by several threads
 * with no lock of the caller's (store.h: a handle serializes itself, as the
 * gate's threads, its bridge and its console use it): every kind of call
 * at once (store_hammer.h), on a ledger file and on one in memory; and a
 * watch waiting on one thread while another writes through the handle.
 *
 * Owns: nothing outside its temporary directory.  Must not: depend on the
 * network or on files outside the repository.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store_hammer.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void test_shared_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/tg_shared_XXXXXX", db[64], err[512], why[512] = "";
	tgi_store *s = NULL;
	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/ledger.db", dir);
	if (tgi_store_open(db, 0, &s, err, sizeof err) < 0)
		fail_msg("open: %s", err);
	hammer_run(s, why, sizeof why);
	tgi_store_close(s);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (why[0])
		fail_msg("%s", why);
}

static void test_shared_memory(void **state)
{
	(void)state;
	char err[512], why[512] = "";
	tgi_store *s = NULL;
	if (tgi_store_open("(none)", TGI_STORE_MEMORY, &s, err, sizeof err) < 0)
		fail_msg("open: %s", err);
	hammer_run(s, why, sizeof why);
	tgi_store_close(s);
	if (why[0])
		fail_msg("%s", why);
}

struct waiter {
	tgi_watch *w;
	int        woke;    /* tgi_store_watch_wait's answer */
	double     waited;  /* ms */
};

static void *wait_thread(void *arg)
{
	struct waiter *a = arg;
	double t0 = tgi_now_ms();
	a->woke = tgi_store_watch_wait(a->w, 10000);
	a->waited = tgi_now_ms() - t0;
	return NULL;
}

/* A watch waiting on one thread holds up no call on the handle: another
 * thread's write goes through at once, and wakes the watch. */
static void test_watch_apart(void **state)
{
	(void)state;
	char dir[] = "/tmp/tg_shared_XXXXXX", db[64], err[512];
	tgi_store *s = NULL;
	struct waiter a = {0};
	pthread_t t;
	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/ledger.db", dir);
	if (tgi_store_open(db, 0, &s, err, sizeof err) < 0)
		fail_msg("open: %s", err);
	assert_int_equal(tgi_store_watch_open(s, TGI_WATCH_EVENTS, &a.w, err, sizeof err), 0);
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &a), 0);
	usleep(50 * 1000);   /* the waiter is in its wait */
	double t0 = tgi_now_ms();
	tgi_event ev = {.type = "mcp.tool.changed", .ts_ms = tgi_unix_ms()};
	assert_int_equal(tgi_store_event(s, NULL, &ev, err, sizeof err), 0);
	double took = tgi_now_ms() - t0;
	pthread_join(t, NULL);
	tgi_store_watch_close(a.w);
	tgi_store_close(s);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (took > 2000)
		fail_msg("the write waited %.0f ms behind the watch", took);
	assert_int_equal(a.woke, 1);
	if (a.waited > 5000)
		fail_msg("the watch woke after %.0f ms", a.waited);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_file),
		cmocka_unit_test(test_shared_memory),
		cmocka_unit_test(test_watch_apart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
