/*
 * netproxy.h — network by host: a filtering HTTP proxy that the gate runs,
 * reached from inside a sandbox's private network namespace.
 *
 * A sandbox with `network: [api.github.com:443, registry.npmjs.org]` keeps
 * its own network namespace (bubblewrap --unshare-net: a loopback device and
 * nothing else).  Programs in it reach the outside only through a proxy at
 * http://127.0.0.1:3128 inside that namespace, announced by the variables of
 * tgi_netproxy_env.  Three parts, one file each:
 *
 *   netallow.c   the allow-list: entries `host` (ports 80 and 443),
 *                `host:port`, `*.example.com[:port]` (subdomains at any
 *                depth, not the apex), IP literals `10.0.0.5[:port]`,
 *                `[::1][:port]` (matched only by a request for that literal);
 *                names compared case-insensitively after IDNA mapping
 *                (NFKC + case folding, punycode) with one trailing dot
 *                dropped.  Host normalisation, shared with the parser.
 *   nethead.c    the request head: `CONNECT host:port HTTP/1.x` and
 *                absolute-form plain HTTP (`GET http://host[:port]/path
 *                HTTP/1.x`), bounded in size; the rewrite of a plain request
 *                to origin-form (Host replaced, proxy and hop-by-hop headers
 *                dropped, `Connection: close`).
 *   netproxy.c   the proxy: one thread per gate serving every sandbox, in
 *                the gate's own network namespace.  It takes connections
 *                handed to it as fds, reads one head (bounded in size and
 *                time), judges it against the sandbox's allow-list, resolves
 *                the host (getaddrinfo on a few resolver threads, so a slow
 *                lookup holds up nothing else), connects with a timeout and
 *                relays both ways with fixed buffers until either side is
 *                done.  Anything else gets a short HTTP error and is closed.
 *   netforward.c the forwarder: a child process that joins the user and
 *                network namespaces of the sandbox's first process, listens
 *                on 127.0.0.1:3128 there and passes each accepted connection
 *                to the proxy (SCM_RIGHTS over a socketpair made before the
 *                fork).  After setup it has no capabilities, no_new_privs, is
 *                not dumpable, holds three fds (listener, socketpair, the
 *                sandbox's pidfd) and a seccomp filter allowing only accept,
 *                sendmsg, ppoll, close and exit.  It exits when the sandbox's
 *                first process is gone or the gate closes its end.
 *
 * What a sandbox must do to use it (bubblewrap):
 *   1. compile the profile's host list once (tgi_netallow_new: errors name
 *      the entry), at configuration load;
 *   2. run bwrap with --unshare-net (and its user namespace), plus
 *      --info-fd A --block-fd B; the seccomp program must allow AF_INET and
 *      AF_INET6 sockets in this mode (the private namespace is the wall);
 *   3. give the command the environment of tgi_netproxy_env;
 *   4. read "child-pid" from A (tgi_netproxy_info_pid parses it), then
 *      tgi_netproxy_attach(proxy, pid, allow, on_event, arg): it returns
 *      once the forwarder listens;
 *   5. write one byte to B: the command starts;
 *   6. after the command is reaped, tgi_netproxy_detach.
 *   If attach fails, kill bwrap and report it: the command must not run.
 *
 * Owns: the proxy thread, its resolver threads, every connection handed to
 * it and the upstream sockets it opens, the forwarders it forks and reaps.
 * Must not: decide which hosts a profile allows (configuration), record
 * events (the callback's owner does), touch the sandbox's filesystem, or
 * let a sandbox reach anything but the hosts of its own list.
 */
#ifndef TGI_NETPROXY_H
#define TGI_NETPROXY_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>

#define TGI_NETPROXY_PORT    3128
#define TGI_NETPROXY_URL     "http://127.0.0.1:3128"
#define TGI_NETHOST_MAX      256    /* a normalised host with its NUL */

/* The environment a sandboxed command gets in host-list mode: HTTP_PROXY,
 * HTTPS_PROXY, ALL_PROXY (and lower-case) = TGI_NETPROXY_URL, NO_PROXY =
 * localhost,127.0.0.1, NODE_USE_ENV_PROXY=1 (Node's fetch and http honour
 * the others only with it).  NULL-terminated, static. */
extern const char *const tgi_netproxy_env[];

/* ---- hosts ---- */

typedef enum { TGI_NETHOST_NAME, TGI_NETHOST_IPV4, TGI_NETHOST_IPV6 } tgi_nethost_kind;

/*
 * Normalise a host of n bytes into out (cap >= TGI_NETHOST_MAX): a DNS name
 * lower-cased without its trailing dot (labels of [a-z0-9_-], 1..63 bytes,
 * no '-' at either end, 253 bytes in all), a dotted-quad IPv4 address, or
 * an IPv6 address written in brackets (out without them, canonical).  With
 * unicode, non-ASCII names are mapped as IDNA does (NFKC, case folding,
 * punycode); without it they are refused.  Numbers in any other form
 * (`127.1`, `0x7f000001`, `017700000001`), which resolvers would read as
 * addresses, are refused.  0 with *kind set, or -1 with a short reason in
 * *why (static).
 */
int tgi_nethost_norm(const char *in, size_t n, int unicode, char *out, size_t cap,
                     tgi_nethost_kind *kind, const char **why);

/* ---- the allow-list (netallow.c) ---- */

typedef struct tgi_netallow tgi_netallow;

/*
 * Compile n entries (strings as in the configuration).  0 with *out (a
 * reference the caller drops with tgi_netallow_unref), or -1 with a
 * sentence naming the entry in err.  An empty list allows nothing.  At
 * most 1024 entries.
 */
int  tgi_netallow_new(const char *const *entries, size_t n, tgi_netallow **out, char *err,
                      size_t errlen);
tgi_netallow *tgi_netallow_ref(tgi_netallow *a);   /* a new reference; thread-safe */
void tgi_netallow_unref(tgi_netallow *a);          /* NULL is a no-op; thread-safe */

typedef enum {
	TGI_NETALLOW_YES,       /* an entry names this host (or address) and port */
	TGI_NETALLOW_WILDCARD,  /* only a wildcard entry covers it */
	TGI_NETALLOW_NO_HOST,
	TGI_NETALLOW_NO_PORT    /* some entry names the host, for other ports */
} tgi_netallow_verdict;

/* Is host (normalised by tgi_nethost_norm, of that kind) at port allowed?
 * A name allowed only by a wildcard may not reach loopback, link-local
 * (cloud metadata), unspecified or multicast addresses (the proxy drops
 * them from what it resolved): whoever controls a subdomain's DNS could
 * point it there.  A name listed exactly may: the operator named it. */
tgi_netallow_verdict tgi_netallow_match(const tgi_netallow *a, const char *host,
                                        tgi_nethost_kind kind, unsigned port);

struct sockaddr;
/* Is this an address a name allowed only by a wildcard must not reach:
 * unspecified, loopback, link-local (169.254/16, fe80::/10, the old
 * site-local fec0::/10), multicast,
 * broadcast, IPv4-mapped forms of these, and the cloud metadata services
 * outside those ranges (100.100.100.200, fd00:ec2::254)?  Families other
 * than IPv4 and IPv6 are.  1 or 0. */
int tgi_netaddr_special(const struct sockaddr *sa);

/* The entries as normalised ("api.github.com:443", "*.npmjs.org:80,443"),
 * for doctor.  New reference. */
json_t *tgi_netallow_json(const tgi_netallow *a);

/* ---- the request head (nethead.c) ---- */

/* Why a request was refused or failed: name, HTTP status, code, sentence.
 * Append-only. */
#define TGI_NETWHY_MAP(X)                                                             \
	X(OK, 200, "ok", "connected")                                                    \
	X(NOT_HTTP, 400, "not_http", "the connection did not start with an HTTP request") \
	X(MALFORMED, 400, "malformed", "the request head is malformed")                  \
	X(ORIGIN_FORM, 400, "origin_form",                                               \
	  "a request to this proxy names its host: CONNECT host:port, or an absolute "   \
	  "http:// URL")                                                                 \
	X(SCHEME, 400, "scheme",                                                         \
	  "only http:// URLs are forwarded as plain requests; use CONNECT for https")    \
	X(METHOD, 405, "method", "this method is not forwarded")                         \
	X(TOO_LARGE, 431, "too_large", "the request head is larger than the proxy accepts") \
	X(HEAD_TIMEOUT, 408, "head_timeout", "the request head did not arrive in time")  \
	X(HOST, 403, "host_denied", "the sandbox's network policy does not allow this host") \
	X(PORT, 403, "port_denied",                                                      \
	  "the sandbox's network policy does not allow this port for this host")         \
	X(BUSY, 503, "busy", "too many connections through the proxy")                   \
	X(RESOLVE, 502, "resolve_failed", "the host name could not be resolved")         \
	X(CONNECT, 502, "connect_failed", "the host refused or could not be reached")    \
	X(CONNECT_TIMEOUT, 504, "connect_timeout", "the host did not answer in time")    \
	X(ADDRESS, 403, "address_denied",                                                \
	  "the host resolves only to loopback, link-local or multicast addresses, which " \
	  "a wildcard entry does not reach")

typedef enum {
#define X(e, status, code, text) TGI_NETWHY_##e,
	TGI_NETWHY_MAP(X)
#undef X
} tgi_netwhy;

const char *tgi_netwhy_code(tgi_netwhy w);   /* "host_denied" */
const char *tgi_netwhy_text(tgi_netwhy w);   /* the sentence */
int         tgi_netwhy_status(tgi_netwhy w); /* 403 */

typedef enum {
	TGI_NETREQ_MORE,      /* a head may still come: read more (unless len reached max) */
	TGI_NETREQ_CONNECT,   /* CONNECT host:port */
	TGI_NETREQ_HTTP,      /* absolute-form http:// request */
	TGI_NETREQ_BAD        /* refused: why */
} tgi_netreq_kind;

typedef struct tgi_netreq {
	tgi_netreq_kind  kind;
	tgi_netwhy       why;            /* BAD: the reason */
	char             method[16];     /* as sent ("" until known) */
	char             host[TGI_NETHOST_MAX]; /* normalised ("" until known) */
	tgi_nethost_kind host_kind;
	unsigned         port;           /* CONNECT: as sent; HTTP: as sent or 80 (0 until known) */
	int              minor;          /* HTTP/1.<minor> */
	size_t           head_len;       /* bytes of the head, final CRLFCRLF included */
	size_t           path_off;       /* HTTP: the path and query in the input ... */
	size_t           path_len;       /* ... (0: "/") */
	int              query_only;     /* HTTP: the target had "?..." and no path: "/" first */
} tgi_netreq;

/*
 * Parse the first len bytes a client sent, of which at most max form the
 * head.  Returns r->kind.  MORE only while len < max and nothing seen so far
 * rules the request out (a first byte that starts no method is NOT_HTTP at
 * once); a head not complete within max bytes is BAD/TOO_LARGE.  Bytes
 * after the head (r->head_len) belong to the body or the tunnel.
 */
tgi_netreq_kind tgi_netreq_parse(const char *buf, size_t len, size_t max, tgi_netreq *r);

/* The bytes tgi_netreq_rewrite can add to a head: out needs head_len + this. */
#define TGI_NETREQ_REWRITE_EXTRA 320

/*
 * A plain request's head, rewritten for the origin server into out (cap
 * bytes): `METHOD /path HTTP/1.x`, `Host: host[:port]` (the URL's, not
 * the client's), the client's other headers but Host, Connection,
 * Keep-Alive, Proxy-Connection, Proxy-Authorization, Upgrade, TE, and
 * `Connection: close`, then the empty line.  buf/r as parsed (kind HTTP).
 * Its length, or -1 when cap is too small.
 */
long tgi_netreq_rewrite(const char *buf, const tgi_netreq *r, char *out, size_t cap);

/* ---- the proxy (netproxy.c) ---- */

typedef struct tgi_netproxy tgi_netproxy;

typedef struct tgi_netproxy_opts {   /* 0: the default */
	size_t max_head;             /* bytes of a request head; 16384 (at most 16384) */
	int    head_timeout_ms;      /* for the head to arrive; 10000 */
	int    connect_timeout_ms;   /* resolve + connect; 10000 */
	int    idle_timeout_ms;      /* a tunnel with no byte either way; 300000 */
	int    max_tunnels;          /* connections at once, all sandboxes; 256 */
	int    max_per_sandbox;      /* connections at once, one sandbox; 64 */
	int    resolvers;            /* resolver threads at most; 4 */
} tgi_netproxy_opts;

/* Start the proxy thread.  NULL with err when it cannot.  Free with
 * tgi_netproxy_free after every sandbox is detached. */
tgi_netproxy *tgi_netproxy_new(const tgi_netproxy_opts *o, char *err, size_t errlen);
/* Stops the thread and closes every connection; a resolver thread still in
 * getaddrinfo finishes on its own and frees what it holds.  NULL: no-op. */
void tgi_netproxy_free(tgi_netproxy *p);

/* What happened to one request, for the callback. */
typedef struct tgi_netevent {
	tgi_netwhy  why;          /* OK: a tunnel or request was opened */
	int         status;       /* the HTTP status the client got */
	const char *method;       /* "CONNECT", "GET"..., "" when none was read */
	const char *host;         /* normalised, "" when none was read */
	unsigned    port;         /* 0 when none was read */
} tgi_netevent;

/* Called on the proxy thread for every request: refused (why in 400..431,
 * 403 host/port/address, 503 busy), failed (502, 504) or opened (OK).  Borrowed
 * strings, valid during the call.  It must return quickly and must not
 * call tgi_netproxy_detach. */
typedef void (*tgi_netevent_fn)(void *arg, const tgi_netevent *ev);

/* One sandbox's place at the proxy: its allow-list, callback, connections
 * and forwarder. */
typedef struct tgi_netsb tgi_netsb;

/*
 * Attach a sandbox whose first process is pid (the "child-pid" bwrap's
 * --info-fd tells): fork the forwarder, which joins pid's user namespace
 * (when it is not the caller's) and network namespace and listens on
 * 127.0.0.1:TGI_NETPROXY_PORT there.  Returns once it listens (the command
 * may start), or NULL with err.  The pid's network namespace must not be
 * the caller's.  pid 0: no forwarder (connections come by tgi_netproxy_hand:
 * tests, benchmarks).  Takes a reference to allow; fn (may be NULL) and
 * arg are kept until detach returns.  Thread-safe; not from fn.
 */
tgi_netsb *tgi_netproxy_attach(tgi_netproxy *p, pid_t pid, tgi_netallow *allow,
                               tgi_netevent_fn fn, void *arg, char *err, size_t errlen);

/* Hand the proxy one connected stream socket as if a forwarder had
 * accepted it, for a sandbox attached with pid 0 (takes fd, closed in every
 * case: the proxy has its own copy).  0, or -errno (-EBADF: the sandbox has
 * a forwarder). */
int  tgi_netproxy_hand(tgi_netsb *sb, int fd);

/* The forwarder's pid (0: none), for tests. */
pid_t tgi_netproxy_forwarder(const tgi_netsb *sb);

/* End a sandbox's place: close its connections, stop and reap its
 * forwarder, drop its allow-list.  After it returns fn is not called again
 * for it.  NULL is a no-op.  Thread-safe; not from fn. */
void tgi_netproxy_detach(tgi_netsb *sb);

/* The child-pid in what bwrap wrote to --info-fd (text, n bytes), or -1. */
pid_t tgi_netproxy_info_pid(const char *text, size_t n);

typedef struct tgi_netproxy_stats {
	int    sandboxes;         /* attached */
	int    connections;       /* open now */
	size_t accepted;          /* handed to the proxy, in all */
	size_t opened;            /* tunnels and requests connected */
	size_t refused;           /* answered 4xx/503 */
	size_t failed;            /* answered 502/504 */
} tgi_netproxy_stats;

void tgi_netproxy_get_stats(tgi_netproxy *p, tgi_netproxy_stats *st);

#endif
