/*
 * netforward.h — the forwarder that puts the proxy's port inside a
 * sandbox's network namespace (src/exec/netforward.c).  Used by
 * tgi_netproxy_attach (netproxy.c) only; netproxy.h describes the whole.
 *
 * Owns: the forwarder process until it is handed to the caller.  Must not:
 * read what passes through (it only passes fds), or outlive the sandbox.
 */
#ifndef TGI_NETFORWARD_H
#define TGI_NETFORWARD_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Fork the forwarder for the sandbox whose first process is target: it
 * joins target's user namespace (when it is not ours) and network
 * namespace, listens on 127.0.0.1:TGI_NETPROXY_PORT and sends each accepted
 * connection over hand_fd (a SOCK_SEQPACKET socket: one byte and one fd a
 * message).  The first message on hand_fd, read here from proxy_fd (its
 * peer) before anything else reads it, says that it listens or why it
 * could not.  Returns the forwarder's pid (the caller kills and reaps it),
 * or -1 with err (nothing left running).  Takes hand_fd (closed here in
 * every case: the child keeps its own copy).
 */
pid_t tgi_netfwd_start(pid_t target, int hand_fd, int proxy_fd, char *err, size_t errlen);

#endif
