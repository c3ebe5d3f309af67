/*
 * netproxy.c — what the network proxy adds (src/exec/netproxy.h): the
 * latency of setting up one CONNECT tunnel, and the relay's throughput,
 * against plain TCP on loopback measured in the same run.
 *
 *   build/bench/netproxy [rounds] [megabytes]
 *
 * Setup (medians of rounds, default 300): connect, one byte there and back,
 * close.  "direct": TCP to the server.  "proxy": a socketpair handed to the
 * proxy (tgi_netproxy_hand), CONNECT, 200, the byte.  "forwarder": from a
 * process in its own network (and user) namespace, TCP to 127.0.0.1:3128,
 * through the forwarder and the proxy, as a sandboxed command sees it
 * (skipped where namespaces cannot be made).
 * Throughput (best of 3, default 256 MiB): the server sends, the client
 * reads to the end ("down"), and the other way ("up").
 *
 * Owns: its server thread, proxy and child.  Must not: touch anything else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/netproxy.h"
#include "util/util.h"

#define MAX_ROUNDS 5000
#define CHUNK      (64 * 1024)

static unsigned server_port;

/* ---- the server: each connection says what it wants in its first byte:
 * 'E' echo one byte; 'D' + 8 bytes n: send n bytes; 'U' + 8 bytes n: read
 * n bytes, answer 'k' ---- */

static int read_n(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t r = read(fd, c, n);
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

static int write_n(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *serve_one(void *arg)
{
	int c = (int)(intptr_t)arg;
	char op;
	uint64_t n = 0;
	static char chunk[CHUNK];
	if (read_n(c, &op, 1) == 0) {
		if (op == 'E')
			write_n(c, "e", 1);
		else if ((op == 'D' || op == 'U') && read_n(c, &n, 8) == 0) {
			char *buf = malloc(CHUNK);
			for (uint64_t left = n; left;) {
				size_t k = left < CHUNK ? (size_t)left : CHUNK;
				if (op == 'D' ? write_n(c, chunk, k) : read_n(c, buf, k))
					break;
				left -= k;
			}
			free(buf);
			if (op == 'U')
				write_n(c, "k", 1);
		}
	}
	close(c);
	return NULL;
}

static void *server_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		int one = 1;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		pthread_t t;
		pthread_create(&t, NULL, serve_one, (void *)(intptr_t)c);
		pthread_detach(t);
	}
}

static void server_start(void)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 512) < 0) {
		perror("server");
		exit(1);
	}
	socklen_t sl = sizeof sa;
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	server_port = ntohs(sa.sin_port);
	pthread_t t;
	pthread_create(&t, NULL, server_main, (void *)(intptr_t)lfd);
	pthread_detach(t);
}

/* ---- clients ---- */

static int tcp_to(unsigned port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(s);
		return -1;
	}
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return s;
}

/* CONNECT to the server over s; 0 once the 200 is read. */
static int tunnel(int s)
{
	char head[96], reply[39];
	int n = snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", server_port);
	if (write_n(s, head, (size_t)n) || read_n(s, reply, sizeof reply) ||
	    memcmp(reply, "HTTP/1.1 200", 12))
		return -1;
	return 0;
}

static tgi_netsb *hand_sb;   /* "proxy" mode: the sandbox connections are handed to */

/* One connection: direct (mode 0), handed to the proxy (1), through the
 * forwarder (2).  -1 on failure. */
static int open_conn(int mode)
{
	if (mode == 0)
		return tcp_to(server_port);
	int s;
	if (mode == 1) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return -1;
		if (tgi_netproxy_hand(hand_sb, sv[1]) < 0) {
			close(sv[0]);
			return -1;
		}
		s = sv[0];
	} else {
		s = tcp_to(TGI_NETPROXY_PORT);
		if (s < 0)
			return -1;
	}
	if (tunnel(s) < 0) {
		close(s);
		return -1;
	}
	return s;
}

static double setup_once(int mode)
{
	double t0 = tgi_now_ms();
	int s = open_conn(mode);
	char b;
	if (s < 0 || write_n(s, "E", 1) || read_n(s, &b, 1)) {
		fprintf(stderr, "setup failed (mode %d)\n", mode);
		exit(1);
	}
	close(s);
	return tgi_now_ms() - t0;
}

/* MiB/s of n bytes down (server to client) or up. */
static double transfer(int mode, int down, uint64_t n)
{
	int s = open_conn(mode);
	if (s < 0) {
		fprintf(stderr, "transfer: no connection (mode %d)\n", mode);
		exit(1);
	}
	char hdr[9];
	hdr[0] = down ? 'D' : 'U';
	memcpy(hdr + 1, &n, 8);
	char *buf = malloc(CHUNK);
	memset(buf, 'x', CHUNK);
	double t0 = tgi_now_ms();
	write_n(s, hdr, 9);
	int ok = 1;
	for (uint64_t left = n; left && ok;) {
		size_t k = left < CHUNK ? (size_t)left : CHUNK;
		if (down) {
			ssize_t r = read(s, buf, k);
			ok = r > 0;
			left -= ok ? (uint64_t)r : 0;
		} else {
			ok = write_n(s, buf, k) == 0;
			left -= k;
		}
	}
	char k;
	if (!down && ok)
		ok = read_n(s, &k, 1) == 0;
	double ms = tgi_now_ms() - t0;
	free(buf);
	close(s);
	if (!ok) {
		fprintf(stderr, "transfer failed (mode %d)\n", mode);
		exit(1);
	}
	return (double)n / (1024.0 * 1024.0) / (ms / 1000.0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

typedef struct figures {
	double p50, p99, down, up;
} figures;

static figures measure(int mode, int rounds, uint64_t bytes)
{
	static double t[MAX_ROUNDS];
	figures f = {0};
	for (int i = 0; i < 20; i++)          /* warm up */
		setup_once(mode);
	for (int i = 0; i < rounds; i++)
		t[i] = setup_once(mode);
	qsort(t, (size_t)rounds, sizeof *t, cmp_double);
	f.p50 = t[rounds / 2];
	f.p99 = t[(rounds * 99) / 100 < rounds ? (rounds * 99) / 100 : rounds - 1];
	for (int i = 0; i < 3; i++) {
		double d = transfer(mode, 1, bytes), u = transfer(mode, 0, bytes);
		f.down = d > f.down ? d : f.down;
		f.up = u > f.up ? u : f.up;
	}
	return f;
}

static void print(const char *name, figures f)
{
	printf("%-10s setup p50 %7.3f ms  p99 %7.3f ms   down %7.0f MiB/s   up %7.0f MiB/s\n", name,
	       f.p50, f.p99, f.down, f.up);
}

/* ---- the namespaced client ---- */

static int lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, "lo", 3);
	int r = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 ? 0 : -1;
	if (!r) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	if (s >= 0)
		close(s);
	return r;
}

/* In its own namespaces: "R" when ready; on the port number from ctl, the
 * figures as one struct on res. */
static void ns_child(int ctl, int res, int rounds, uint64_t bytes)
{
	char r = unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 && lo_up() == 0 ? 'R' : 'E';
	if (write(res, &r, 1) != 1 || r != 'R')
		_exit(1);
	unsigned port;
	if (read_n(ctl, &port, sizeof port))
		_exit(1);
	server_port = port;
	figures f = measure(2, rounds, bytes);
	write_n(res, &f, sizeof f);
	_exit(0);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	int mb = argc > 2 ? atoi(argv[2]) : 256;
	if (rounds < 10 || rounds > MAX_ROUNDS)
		rounds = 300;
	if (mb < 1 || mb > 4096)
		mb = 256;
	uint64_t bytes = (uint64_t)mb << 20;
	signal(SIGPIPE, SIG_IGN);

	/* the namespaced child first, while this process has one thread */
	int ctl[2], res[2];
	if (pipe(ctl) < 0 || pipe(res) < 0)
		return 1;
	pid_t kid = fork();
	if (kid == 0) {
		close(ctl[1]);
		close(res[0]);
		ns_child(ctl[0], res[1], rounds, bytes);
	}
	close(ctl[0]);
	close(res[1]);
	char ready = 0;
	if (read(res[0], &ready, 1) != 1)
		ready = 0;

	server_start();
	char err[256];
	char entry[64];
	snprintf(entry, sizeof entry, "127.0.0.1:%u", server_port);
	const char *entries[] = {entry};
	tgi_netallow *allow;
	tgi_netproxy *p = tgi_netproxy_new(NULL, err, sizeof err);
	if (!p || tgi_netallow_new(entries, 1, &allow, err, sizeof err) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	hand_sb = tgi_netproxy_attach(p, 0, allow, NULL, NULL, err, sizeof err);

	printf("%d rounds of setup (connect, one byte there and back, close); %d MiB each way, "
	       "best of 3\n", rounds, mb);
	print("direct", measure(0, rounds, bytes));
	print("proxy", measure(1, rounds, bytes));
	if (ready == 'R') {
		tgi_netsb *sb = tgi_netproxy_attach(p, kid, allow, NULL, NULL, err, sizeof err);
		if (!sb) {
			fprintf(stderr, "attach: %s\n", err);
			kill(kid, SIGKILL);
		} else {
			figures f;
			if (write_n(ctl[1], &server_port, sizeof server_port) == 0 &&
			    read_n(res[0], &f, sizeof f) == 0)
				print("forwarder", f);
			tgi_netproxy_detach(sb);
		}
	} else {
		printf("forwarder  skipped: cannot make a network namespace here\n");
	}
	close(ctl[1]);
	waitpid(kid, NULL, 0);
	tgi_netproxy_detach(hand_sb);
	tgi_netproxy_free(p);
	tgi_netallow_unref(allow);
	return 0;
}
