/*
 * listen.c — the TCP listener of the HTTP servers (listen.h): resolve,
 * refuse a non-loopback address unless allowed, bind, listen.
 *
 * Owns: the socket until it is returned listening.  Must not: parse
 * HOST:PORT or know what is served on the socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/listen.h"
#include "util/util.h"

const char *tgi_shown(char out[TGI_SHOWN_MAX + 4], const char *v)
{
	tgi_sanitize_n(out, TGI_SHOWN_MAX + 4, v ? v : "", v ? strlen(v) : 0, TGI_SHOWN_MAX);
	return out;
}

static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

static int is_wildcard(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

int tgi_listen(const tgi_listen_opts *o, tgi_listener *out, char *err, size_t errlen)
{
	char a[TGI_SHOWN_MAX + 4];
	memset(out, 0, sizeof *out);
	out->fd = -1;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *list;
	int rc = getaddrinfo(o->host, o->serv, &hints, &list);
	if (rc != 0) {
		tgi_snprintf(err, errlen, "cannot listen on %s: %s", tgi_shown(a, o->spec),
		             gai_strerror(rc));
		return -1;
	}
	const struct addrinfo *ai = list;
	while (ai && !o->any && !is_loopback(ai->ai_addr))
		ai = ai->ai_next;
	if (!ai) {
		freeaddrinfo(list);
		tgi_snprintf(err, errlen, "refusing to listen on %s: it is not a loopback address "
		             "(allow that with %s)", tgi_shown(a, o->spec), o->any_flag);
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int on = 1;
	out->v6 = ai->ai_family == AF_INET6;
	out->loopback = is_loopback(ai->ai_addr);
	out->wildcard = is_wildcard(ai->ai_addr);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
		if (out->v6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
	}
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		if (errno == EADDRINUSE && o->inuse_flag)
			tgi_snprintf(err, errlen, "%s is already in use; choose another with %s",
			             tgi_shown(a, o->spec), o->inuse_flag);
		else
			tgi_snprintf(err, errlen, "cannot listen on %s: %s", tgi_shown(a, o->spec),
			             strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(list);
		return -1;
	}
	freeaddrinfo(list);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	out->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                           : ((struct sockaddr_in *)&ss)->sin_port);
	out->fd = fd;
	return 0;
}
