/*
 * listen.c — a TCP listener on 127.0.0.1 for tests/integration/sandbox.sh:
 * it takes any free port, writes the number to PORTFILE (whole, by a
 * rename), accepts and closes every connection until SIGTERM (or 60 s),
 * then prints how many connections it accepted.
 *
 *   listen PORTFILE        stdout: "N\n" at the end
 *
 * Owns: its socket.  Must not: read from or write to a connection, or
 * outlive 60 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* Accept and close whatever is waiting; how many. */
static int drain(int s)
{
	int n = 0, c;
	while ((c = accept4(s, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		close(c);
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: listen PORTFILE\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);

	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 16) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) < 0) {
		perror("listen");
		return 1;
	}
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 ||
	    rename(tmp, argv[1]) < 0) {
		perror(argv[1]);
		return 1;
	}

	int accepted = 0;
	time_t end = time(NULL) + 60;
	while (!stop && time(NULL) < end) {
		struct pollfd p = {.fd = s, .events = POLLIN};
		if (poll(&p, 1, 200) > 0)
			accepted += drain(s);
	}
	accepted += drain(s);
	printf("%d\n", accepted);
	return 0;
}
