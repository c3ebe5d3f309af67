/*
 * test_cond.c — the timed condition-variable waits (src/util/util.c:
 * tgi_cond_init, tgi_cond_wait_ms, tgi_cond_wait_until): a timeout elapses
 * after about its milliseconds, a deadline in the past returns at once, a
 * signal wakes a waiter long before its timeout, and a condition variable
 * not made by tgi_cond_init still times out on time (the wait names its
 * clock).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "util/util.h"

static void test_timeout_elapses(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	tgi_cond_init(&cv);
	pthread_mutex_lock(&mu);
	double t0 = tgi_now_ms();
	int rc = tgi_cond_wait_ms(&cv, &mu, 60);
	double took = tgi_now_ms() - t0;
	pthread_mutex_unlock(&mu);
	assert_int_equal(rc, ETIMEDOUT);
	assert_true(took >= 59);
	assert_true(took < 2000);
	pthread_cond_destroy(&cv);
}

static void test_deadline(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	tgi_cond_init(&cv);
	pthread_mutex_lock(&mu);
	double t0 = tgi_now_ms();
	int rc = 0;
	while (rc != ETIMEDOUT)   /* a spurious wake waits again for the same deadline */
		rc = tgi_cond_wait_until(&cv, &mu, t0 + 40);
	double took = tgi_now_ms() - t0;
	assert_true(took >= 39);
	assert_true(took < 2000);
	/* a deadline already past: at once */
	t0 = tgi_now_ms();
	assert_int_equal(tgi_cond_wait_until(&cv, &mu, t0 - 1000), ETIMEDOUT);
	assert_int_equal(tgi_cond_wait_ms(&cv, &mu, 0), ETIMEDOUT);
	assert_true(tgi_now_ms() - t0 < 500);
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&cv);
}

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	int             flag;
} shared;

static void *signaller(void *arg)
{
	shared *s = arg;
	usleep(30 * 1000);
	pthread_mutex_lock(&s->mu);
	s->flag = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void test_signal_wakes(void **state)
{
	shared s = {.mu = PTHREAD_MUTEX_INITIALIZER};
	tgi_cond_init(&s.cv);
	pthread_t th;
	pthread_mutex_lock(&s.mu);
	double t0 = tgi_now_ms();
	assert_int_equal(pthread_create(&th, NULL, signaller, &s), 0);
	while (!s.flag)
		assert_int_equal(tgi_cond_wait_ms(&s.cv, &s.mu, 10000), 0);
	double took = tgi_now_ms() - t0;
	pthread_mutex_unlock(&s.mu);
	pthread_join(th, NULL);
	assert_true(took < 5000);
	/* the same with a deadline */
	s.flag = 0;
	pthread_mutex_lock(&s.mu);
	t0 = tgi_now_ms();
	assert_int_equal(pthread_create(&th, NULL, signaller, &s), 0);
	while (!s.flag)
		assert_int_equal(tgi_cond_wait_until(&s.cv, &s.mu, t0 + 10000), 0);
	took = tgi_now_ms() - t0;
	pthread_mutex_unlock(&s.mu);
	pthread_join(th, NULL);
	assert_true(took < 5000);
	pthread_cond_destroy(&s.cv);
}

/* A default (CLOCK_REALTIME) condition variable given a monotonic deadline
 * waited about 56 years on pthread_cond_timedwait; the wait names its clock. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 30)
static void test_default_cv_times_out(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	pthread_mutex_lock(&mu);
	double t0 = tgi_now_ms();
	int rc = 0;
	while (rc != ETIMEDOUT)
		rc = tgi_cond_wait_until(&cv, &mu, t0 + 40);
	double took = tgi_now_ms() - t0;
	pthread_mutex_unlock(&mu);
	assert_true(took >= 39);
	assert_true(took < 2000);
}
#endif

int main(void)
{
	alarm(60);   /* a wait on the wrong clock does not end: fail rather than hang */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeout_elapses),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_signal_wakes),
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 30)
		cmocka_unit_test(test_default_cv_times_out),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
