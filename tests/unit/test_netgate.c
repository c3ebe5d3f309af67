/*
 * test_netgate.c — network by host wired to the gate (src/exec/netgate.h).
 *
 * The gate's proxy starts on the first attach only, once, when many runs
 * attach at once from several threads; a run refuses without a gate, for a
 * profile without hosts, and for a list the proxy cannot read (naming the
 * entry).  Requests handed to a run's sandbox (pid 0: no forwarder): an
 * allowed one is no denial; refusals are kept one record per (why, method,
 * host, port) with a count, taken once; past TGI_NETRUN_MAX distinct ones
 * the last record counts the rest; ending the run detaches its sandboxes
 * and gives what is left.  The sentence for the model names the host.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exec/netgate.h"
#include "util/util.h"

static void profile_of(tgi_sb_profile *p, const char *const *hosts)
{
	tgi_sb_profile_init(p, TGI_SANDBOX_WORKSPACE_WRITE);
	p->net = TGI_NET_HOSTS;
	for (; *hosts; hosts++)
		tgi_strv_push(&p->hosts, tgi_strdup(*hosts));
}

/* Send a request head through sb; the status line's code, or -1. */
static int ask(tgi_netsb *sb, const char *head)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(tgi_netproxy_hand(sb, sv[1]), 0);
	assert_int_equal(write(sv[0], head, strlen(head)), (ssize_t)strlen(head));
	char buf[512];
	size_t n = 0;
	double deadline = tgi_now_ms() + 5000;
	while (n < sizeof buf - 1 && !memmem(buf, n, "\r\n", 2) && tgi_now_ms() < deadline) {
		struct pollfd pf = {.fd = sv[0], .events = POLLIN};
		if (poll(&pf, 1, 100) <= 0)
			continue;
		ssize_t r = read(sv[0], buf + n, sizeof buf - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(sv[0]);
	buf[n] = '\0';
	int code = -1;
	return sscanf(buf, "HTTP/1.1 %d", &code) == 1 ? code : -1;
}

static void test_refusals(void **state)
{
	(void)state;
	char err[512];
	tgi_sb_profile p, on, bad;
	profile_of(&p, (const char *const[]){"allowed.test:80", NULL});
	profile_of(&bad, (const char *const[]){"bad host!", NULL});
	tgi_sb_profile_init(&on, TGI_SANDBOX_WORKSPACE_WRITE);
	on.net = TGI_NET_ON;

	tgi_netrun *r = tgi_netrun_new(NULL);           /* a plan's: attaches nothing */
	assert_int_equal(tgi_netrun_attach(r, 0, &p, err, sizeof err), -1);
	assert_non_null(strstr(err, "no network run"));
	assert_null(tgi_netrun_end(r));
	assert_int_equal(tgi_netrun_attach(NULL, 0, &p, err, sizeof err), -1);

	tgi_netgate *ng = tgi_netgate_new(NULL);
	r = tgi_netrun_new(ng);
	assert_int_equal(tgi_netrun_attach(r, 0, &on, err, sizeof err), -1);
	assert_non_null(strstr(err, "no list of hosts"));
	assert_int_equal(tgi_netrun_attach(r, 0, &bad, err, sizeof err), -1);
	assert_non_null(strstr(err, "bad host!"));
	assert_null(tgi_netrun_sandbox(r, 0));
	assert_null(tgi_netrun_end(r));
	tgi_netgate_free(ng);
	tgi_sb_profile_free(&p);
	tgi_sb_profile_free(&on);
	tgi_sb_profile_free(&bad);
}

typedef struct many {
	tgi_netgate          *ng;
	const tgi_sb_profile *p;
	int                   ok;
} many;

static void *attach_one(void *arg)
{
	many *m = arg;
	char err[512];
	for (int i = 0; i < 4; i++) {
		tgi_netrun *r = tgi_netrun_new(m->ng);
		if (tgi_netrun_attach(r, 0, m->p, err, sizeof err) == 0 &&
		    tgi_netrun_attach(r, 0, m->p, err, sizeof err) == 0 && tgi_netrun_sandbox(r, 1))
			__atomic_add_fetch(&m->ok, 1, __ATOMIC_RELAXED);
		json_decref(tgi_netrun_end(r));
	}
	return NULL;
}

/* The proxy starts on first need, once, whatever the threads do. */
static void test_lazy_concurrent(void **state)
{
	(void)state;
	tgi_sb_profile p;
	profile_of(&p, (const char *const[]){"allowed.test", NULL});
	tgi_netgate *ng = tgi_netgate_new(NULL);
	tgi_netproxy_stats st;
	tgi_netgate_stats(ng, &st);
	assert_int_equal(st.sandboxes, 0);
	many m = {ng, &p, 0};
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, attach_one, &m), 0);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(m.ok, 32);
	tgi_netgate_stats(ng, &st);
	assert_int_equal(st.sandboxes, 0);                  /* every run detached */
	tgi_netgate_free(ng);
	tgi_netgate_free(NULL);
	tgi_sb_profile_free(&p);
}

static const json_t *record(const json_t *a, const char *why, const char *method,
                            const char *host)
{
	size_t i;
	const json_t *d;
	json_array_foreach(a, i, d) {
		const char *h = json_string_value(json_object_get(d, "host"));
		if (!strcmp(json_string_value(json_object_get(d, "why")), why) &&
		    !strcmp(json_string_value(json_object_get(d, "method")), method) &&
		    (host ? h && !strcmp(h, host) : !h))
			return d;
	}
	return NULL;
}

static void test_denials(void **state)
{
	(void)state;
	char err[512], text[600];
	tgi_sb_profile p;
	profile_of(&p, (const char *const[]){"allowed.test:80", NULL});
	tgi_netgate *ng = tgi_netgate_new(NULL);
	tgi_netrun *r = tgi_netrun_new(ng);
	assert_int_equal(tgi_netrun_attach(r, 0, &p, err, sizeof err), 0);
	tgi_netsb *sb = tgi_netrun_sandbox(r, 0);
	assert_non_null(sb);
	assert_null(tgi_netrun_take(r));

	assert_int_equal(ask(sb, "GET http://evil.test/a HTTP/1.1\r\nHost: evil.test\r\n\r\n"), 403);
	assert_int_equal(ask(sb, "GET http://evil.test/b HTTP/1.1\r\nHost: evil.test\r\n\r\n"), 403);
	assert_int_equal(ask(sb, "CONNECT evil.test:443 HTTP/1.1\r\n\r\n"), 403);
	assert_int_equal(ask(sb, "CONNECT allowed.test:443 HTTP/1.1\r\n\r\n"), 403);
	assert_int_equal(ask(sb, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03xxxxxxxx"), 400);
	json_t *a = tgi_netrun_take(r);
	assert_int_equal(json_array_size(a), 4);
	const json_t *d = record(a, "host_denied", "GET", "evil.test");
	assert_non_null(d);
	assert_int_equal(json_integer_value(json_object_get(d, "count")), 2);
	assert_int_equal(json_integer_value(json_object_get(d, "port")), 80);
	assert_int_equal(json_integer_value(json_object_get(d, "status")), 403);
	tgi_netdenial_text(d, text, sizeof text);
	assert_string_equal(text, "the sandbox's network refused evil.test:80 (GET, 2 times): the "
	                    "sandbox's network policy does not allow this host");
	d = record(a, "port_denied", "CONNECT", "allowed.test");
	assert_non_null(d);
	assert_int_equal(json_integer_value(json_object_get(d, "port")), 443);
	assert_non_null(record(a, "host_denied", "CONNECT", "evil.test"));
	d = record(a, "not_http", "", NULL);
	assert_non_null(d);
	assert_true(json_is_null(json_object_get(d, "port")));
	tgi_netdenial_text(d, text, sizeof text);
	assert_non_null(strstr(text, "refused a connection: the connection did not start"));
	json_decref(a);
	assert_null(tgi_netrun_take(r));                    /* taken once */

	/* more distinct destinations than a run keeps */
	for (int i = 0; i < TGI_NETRUN_MAX + 5; i++) {
		char head[128];
		snprintf(head, sizeof head, "CONNECT h%d.test:443 HTTP/1.1\r\n\r\n", i);
		assert_int_equal(ask(sb, head), 403);
	}
	a = tgi_netrun_end(r);                              /* detaches, then gives the rest */
	assert_int_equal(json_array_size(a), TGI_NETRUN_MAX);
	d = json_array_get(a, TGI_NETRUN_MAX - 1);
	assert_int_equal(json_integer_value(json_object_get(d, "more")), 5);
	json_decref(a);
	tgi_netproxy_stats st;
	tgi_netgate_stats(ng, &st);
	assert_int_equal(st.sandboxes, 0);
	tgi_netgate_free(ng);
	tgi_sb_profile_free(&p);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_lazy_concurrent),
		cmocka_unit_test(test_denials),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
