/*
 * netforward.c — the forwarder: a child of the gate that listens on
 * 127.0.0.1:3128 inside one sandbox's network namespace and passes every
 * connection it accepts to the proxy, which lives outside.
 *
 * The gate forks it (the gate has threads: the child makes raw system
 * calls only, no allocation, no locks, until it dies).  In the child:
 *   1. every signal blocked; every fd closed but the sandbox's pidfd and
 *      the socketpair end; cwd "/";
 *   2. setns(pidfd, CLONE_NEWUSER | CLONE_NEWNET): both at once, from the
 *      pidfd, so a reused pid cannot be joined by mistake.  The user
 *      namespace is left out when the sandbox has none of its own (root
 *      running bubblewrap without one): setns refuses to re-enter ours.
 *      Joining is allowed to root (CAP_SYS_ADMIN over every namespace) and
 *      to an unprivileged gate, which owns the user namespace bubblewrap
 *      made for it and so holds every capability in it (user_namespaces(7));
 *      the forked child is single-threaded and shares no fs, as setns(2)
 *      requires for a user namespace;
 *   3. a network namespace that is still the gate's is refused (the target
 *      was not sandboxed: listening there would open the proxy to the host);
 *   4. a TCP socket bound to 127.0.0.1:3128 with IP_FREEBIND (bubblewrap
 *      brings the loopback device up after it reports the pid) and listening;
 *   5. capabilities dropped (bounding set and all sets), no_new_privs, not
 *      dumpable, then a seccomp filter that allows ppoll, accept4, sendmsg,
 *      close, exit, exit_group, rt_sigreturn and restart_syscall and kills
 *      on anything else (x86-64 and aarch64; on other machines the filter
 *      is left out);
 *   6. it reports {stage, errno} (0, 0 when it listens) on the socketpair
 *      and loops: accept, send the fd (one byte + SCM_RIGHTS), close its copy.
 * It exits when the sandbox's first process exits (its pidfd turns
 * readable) or when the proxy's end of the socketpair is closed (the sandbox
 * was detached, or the gate died); tgi_netproxy_detach kills and reaps it
 * in any case.  It cannot come back to the gate's namespaces, which is why
 * connecting out happens in the gate.
 *
 * Owns: the forwarder until its pid is returned.  Must not: allocate or
 * take locks in the child, or keep any fd of the gate's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/netforward.h"
#include "exec/netproxy.h"
#include "util/util.h"

#define READY_MS  5000
#define BACKLOG   128

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

typedef enum {
	ST_OK, ST_SETNS, ST_SHARED, ST_SOCKET, ST_BIND, ST_LISTEN, ST_PRIVS, ST_SECCOMP, ST_NSCHECK
} stage;

static const char *const stage_text[] = {
	[ST_OK] = "",
	[ST_SETNS] = "join the sandbox's user and network namespaces",
	[ST_SHARED] = ("find a network namespace of the sandbox's own (it shares the gate's: "
	               "bubblewrap must run with --unshare-net)"),
	[ST_SOCKET] = "make its listening socket",
	[ST_BIND] = "bind 127.0.0.1:3128 in the sandbox",
	[ST_LISTEN] = "listen on 127.0.0.1:3128 in the sandbox",
	[ST_PRIVS] = "drop its privileges",
	[ST_SECCOMP] = "install its seccomp filter",
	[ST_NSCHECK] = "read its own network namespace",
};

typedef struct report {
	int32_t stage;
	int32_t err;
} report;

/* ---- the seccomp filter (built at compile time: nothing to allocate) ---- */

#if defined(__x86_64__)
#define FWD_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FWD_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef FWD_ARCH
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
static const struct sock_filter filter[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FWD_ARCH, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),   /* the x32 ABI */
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif
	ALLOW(SYS_ppoll), ALLOW(SYS_accept4), ALLOW(SYS_sendmsg), ALLOW(SYS_close),
	ALLOW(SYS_exit), ALLOW(SYS_exit_group), ALLOW(SYS_rt_sigreturn),
	ALLOW(SYS_restart_syscall),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};
#endif

/* ---- the child: raw system calls only ---- */

static void die(void) __attribute__((noreturn));
static void die(void)
{
	syscall(SYS_exit_group, 1);
	__builtin_unreachable();
}

static int send_report(int hand, stage s, int e)
{
	report r = {.stage = s, .err = e};
	struct iovec iov = {.iov_base = &r, .iov_len = sizeof r};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	return (int)syscall(SYS_sendmsg, hand, &m, MSG_NOSIGNAL);
}

static void fail(int hand, stage s, int e) __attribute__((noreturn));
static void fail(int hand, stage s, int e)
{
	send_report(hand, s, e ? e : EINVAL);
	die();
}

static void close_range_(unsigned lo, unsigned hi)
{
	if (lo > hi)
		return;
	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
	for (unsigned fd = lo; fd <= hi && fd < 65536; fd++)
		syscall(SYS_close, fd);
}

/* Close every fd but the n (<= 3) in keep. */
static void close_others(int *keep, int n)
{
	for (int i = 1; i < n; i++)          /* sort: n is tiny */
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned from = 0;
	for (int i = 0; i < n; i++) {
		if ((unsigned)keep[i] > from)
			close_range_(from, (unsigned)keep[i] - 1);
		from = (unsigned)keep[i] + 1;
	}
	close_range_(from, ~0U);
}

static int drop_privs(void)
{
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

static void child(int pidfd, int hand, dev_t net_dev, ino_t net_ino) __attribute__((noreturn));
static void child(int pidfd, int hand, dev_t net_dev, ino_t net_ino)
{
	sigset_t all;
	sigfillset(&all);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(uint64_t));
	int keep[2] = {pidfd, hand};
	close_others(keep, 2);
	if (chdir("/") < 0)
		fail(hand, ST_SETNS, errno);

	if (setns(pidfd, CLONE_NEWUSER | CLONE_NEWNET) < 0) {
		/* EINVAL: the sandbox is in our own user namespace; join its network only */
		if (errno != EINVAL || setns(pidfd, CLONE_NEWNET) < 0)
			fail(hand, ST_SETNS, errno);
	}
	struct stat st;
	if (stat("/proc/self/ns/net", &st) < 0)
		fail(hand, ST_NSCHECK, errno);
	if (st.st_dev == net_dev && st.st_ino == net_ino)
		fail(hand, ST_SHARED, EEXIST);

	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		fail(hand, ST_SOCKET, errno);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(lfd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(TGI_NETPROXY_PORT),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0)
		fail(hand, ST_BIND, errno);
	if (listen(lfd, BACKLOG) < 0)
		fail(hand, ST_LISTEN, errno);

	int r = drop_privs();
	if (r < 0)
		fail(hand, ST_PRIVS, -r);
#ifdef FWD_ARCH
	struct sock_fprog prog = {.len = (unsigned short)TGI_ARRAY_LEN(filter),
	                          .filter = (struct sock_filter *)filter};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		fail(hand, ST_SECCOMP, errno);
#endif
	/* from here on: ppoll, accept4, sendmsg, close, exit */
	if (send_report(hand, ST_OK, 0) < 0)
		die();

	for (;;) {
		struct pollfd pf[3] = {{.fd = lfd, .events = POLLIN}, {.fd = hand, .events = 0},
		                       {.fd = pidfd, .events = POLLIN}};
		long n = syscall(SYS_ppoll, pf, 3, NULL, NULL, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die();
		}
		if (pf[2].revents || (pf[1].revents & (POLLHUP | POLLERR | POLLNVAL)))
			syscall(SYS_exit_group, 0);
		if (!(pf[0].revents & POLLIN))
			continue;
		long c = syscall(SYS_accept4, lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
				/* out of something: breathe instead of spinning */
				struct timespec ts = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
				syscall(SYS_ppoll, NULL, 0, &ts, NULL, 0);
			}
			continue;
		}
		char byte = 0;
		struct iovec iov = {.iov_base = &byte, .iov_len = 1};
		union {
			struct cmsghdr h;
			char           b[CMSG_SPACE(sizeof(int))];
		} cm;
		memset(&cm, 0, sizeof cm);
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
		                   .msg_controllen = sizeof cm.b};
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		int cfd = (int)c;
		memcpy(CMSG_DATA(h), &cfd, sizeof cfd);
		long s;
		while ((s = syscall(SYS_sendmsg, hand, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
		int gone = s < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN);
		syscall(SYS_close, cfd);
		if (gone)
			syscall(SYS_exit_group, 0);
	}
}

/* ---- the parent ---- */

pid_t tgi_netfwd_start(pid_t target, int hand_fd, int proxy_fd, char *err, size_t errlen)
{
	struct stat self_net;
	if (stat("/proc/self/ns/net", &self_net) < 0) {
		close(hand_fd);
		tgi_snprintf(err, errlen, "cannot start the network forwarder: cannot read "
		             "/proc/self/ns/net (%s)", strerror(errno));
		return -1;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, target, 0);
	if (pidfd < 0) {
		close(hand_fd);
		tgi_snprintf(err, errlen, "cannot start the network forwarder: %s",
		             errno == ESRCH ? "the sandbox's process is gone"
		             : errno == ENOSYS ? "pidfd_open needs Linux 5.3 or later"
		             : strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		tgi_snprintf(err, errlen, "cannot start the network forwarder: fork: %s",
		             strerror(errno));
		close(pidfd);
		close(hand_fd);
		return -1;
	}
	if (pid == 0)
		child(pidfd, hand_fd, self_net.st_dev, self_net.st_ino);
	close(pidfd);
	close(hand_fd);     /* the child's alone now: its end shows when it is gone */

	/* its report: listening, or why not */
	report r = {.stage = -1, .err = 0};
	struct pollfd pf = {.fd = proxy_fd, .events = POLLIN};
	double deadline = tgi_now_ms() + READY_MS;
	int got = 0;
	for (;;) {
		double left = deadline - tgi_now_ms();
		if (left <= 0)
			break;
		int n = poll(&pf, 1, (int)left + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ssize_t k = recv(proxy_fd, &r, sizeof r, MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		got = k == (ssize_t)sizeof r;
		break;
	}
	if (got && r.stage == ST_OK)
		return pid;

	int status = 0;
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got && r.stage > 0 && (size_t)r.stage < TGI_ARRAY_LEN(stage_text))
		tgi_snprintf(err, errlen, "the network forwarder could not %s: %s",
		             stage_text[r.stage], strerror(r.err));
	else if (!got && tgi_now_ms() >= deadline)
		tgi_snprintf(err, errlen, "the network forwarder did not start within %d ms",
		             READY_MS);
	else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		tgi_snprintf(err, errlen, "the network forwarder was killed by signal %d before "
		             "it listened", WTERMSIG(status));
	else
		tgi_snprintf(err, errlen, "the network forwarder ended before it listened");
	return -1;
}
