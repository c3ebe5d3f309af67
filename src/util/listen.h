/*
 * listen.h — the TCP listener both HTTP servers start from (the console,
 * src/console/server.c; MCP over HTTP, src/mcp/http.c), loopback unless
 * the operator allowed more, and how both echo outside text in a sentence.
 *
 * Owns: resolving the host and port, choosing the first loopback address
 * (any address when allowed), socket/bind/listen, the port bound, and the
 * sentence for each way that fails.  Must not: parse HOST:PORT (each
 * server words its own usage), know HTTP, MHD or either server's state.
 */
#ifndef TGI_UTIL_LISTEN_H
#define TGI_UTIL_LISTEN_H

#include <stddef.h>

#define TGI_SHOWN_MAX 80   /* bytes of outside text echoed in a sentence */

/* v (NULL: "") as it may be echoed: at most TGI_SHOWN_MAX bytes, no control
 * characters.  Returns out. */
const char *tgi_shown(char out[TGI_SHOWN_MAX + 4], const char *v);

typedef struct tgi_listen_opts {
	const char *spec;       /* HOST:PORT as the operator wrote it, for sentences */
	const char *host;       /* to resolve: a numeric address or a name */
	const char *serv;       /* the port, decimal (0: any free one) */
	int         any;        /* a non-loopback address is allowed */
	const char *any_flag;   /* the option that allows one, named when refusing */
	const char *inuse_flag; /* named when the port is taken ("choose another
	                         * with"), or NULL for the system's sentence */
} tgi_listen_opts;

typedef struct tgi_listener {
	int      fd;       /* listening; non-blocking, close-on-exec; caller closes */
	unsigned port;     /* bound: the one asked, or the kernel's for 0 */
	int      v6;       /* an IPv6 socket (IPV6_V6ONLY) */
	int      loopback; /* bound to a loopback address */
	int      wildcard; /* bound to 0.0.0.0 or :: */
} tgi_listener;

/* Listen as o says into *out: 0, or -1 with a sentence in err. */
int tgi_listen(const tgi_listen_opts *o, tgi_listener *out, char *err, size_t errlen);

#endif
