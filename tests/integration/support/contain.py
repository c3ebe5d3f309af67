#!/usr/bin/env python3
# The attacks of tests/integration/containment.sh, run inside the sandbox
# as a file (the floor judges command lines, not what a script does): each
# prints one line per attempt, "NAME: ok" or "NAME: ERRNO" (or the data
# read), for the test to check.
#
#   contain.py write PATH VALUE        write VALUE into PATH
#   contain.py read PATH...            read each PATH (first 200 bytes)
#   contain.py keyread ID              keyctl(KEYCTL_READ) of a key
#   contain.py syscalls                the kernel's administrative calls
#   contain.py connect PATH...         connect() to unix sockets by path
#   contain.py abstract NAME           connect() to an abstract unix socket
#   contain.py tcp HOST PORT           connect() to a TCP listener
#   contain.py kill PID                kill(PID, SIGKILL)
#   contain.py tcp-listen OUT          serve TCP on 127.0.0.1 (OUT gets the port; outside)
#   contain.py listen PATH|@NAME OUT   serve a unix socket, one byte per client; OUT
#                                      gets "ready" once it listens (used outside)
#   contain.py plant-key DESC DATA     add a user key to @u, print its id (outside)
#   contain.py revoke-key ID           revoke it again (outside)
import ctypes
import errno
import os
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def err(e):
    return errno.errorcode.get(e, str(e))


def sysc(nr, *args):
    cargs = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(ctypes.c_long(nr), *cargs)
    return "ok" if r >= 0 else err(ctypes.get_errno())


def attempt(name, fn):
    try:
        r = fn()
        print(f"{name}: {r if r is not None else 'ok'}")
    except OSError as e:
        print(f"{name}: {err(e.errno)}")
    sys.stdout.flush()


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


def read(path):
    with open(path, "rb") as f:
        return "data " + f.read(200).decode("utf-8", "replace").replace("\n", "\\n")


# x86_64 numbers
NR = {
    "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "mount": 165, "umount2": 166, "pivot_root": 155, "fsopen": 430,
    "fsmount": 432, "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
    "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179,
    "userfaultfd": 323, "iopl": 172, "ioperm": 173, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "clone3": 435, "setns": 308,
    "unshare": 272, "syslog": 103, "open_by_handle_at": 304,
}
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000


def syscalls():
    nul = ctypes.c_void_p(0)
    bad = ctypes.c_char_p(b"/nonexistent-toolgate")
    tries = [
        ("keyctl", (0, 0)),                         # KEYCTL_GET_KEYRING_ID of nothing
        ("add_key", (ctypes.c_char_p(b"user"), ctypes.c_char_p(b"x"), nul, 0, -4)),
        ("request_key", (ctypes.c_char_p(b"user"), ctypes.c_char_p(b"x"), nul, 0)),
        ("bpf", (999, nul, 0)),
        ("perf_event_open", (nul, 0, -1, -1, 0)),
        ("kexec_load", (0, 0, nul, 0xffff)),
        ("kexec_file_load", (-1, -1, 0, nul, 0xffff)),
        ("init_module", (nul, 0, ctypes.c_char_p(b""))),
        ("finit_module", (-1, ctypes.c_char_p(b""), 0)),
        ("delete_module", (ctypes.c_char_p(b"toolgate-none"), 0)),
        ("mount", (bad, bad, nul, 0, nul)),
        ("umount2", (bad, 0)),
        ("pivot_root", (bad, bad)),
        ("fsopen", (ctypes.c_char_p(b"tmpfs"), 0)),
        ("fsmount", (-1, 0, 0)),
        ("move_mount", (-1, bad, -1, bad, 0)),
        ("open_tree", (-1, bad, 0)),
        ("mount_setattr", (-1, bad, 0, nul, 0)),
        ("swapon", (bad, 0)),
        ("swapoff", (bad,)),
        ("reboot", (0, 0, 0, nul)),                 # bad magic: EINVAL if it got through
        ("acct", (bad,)),
        ("quotactl", (0, bad, 0, nul)),
        ("userfaultfd", (0,)),
        ("iopl", (0,)),
        ("ioperm", (0, 0, 0)),
        ("io_uring_setup", (0, nul)),
        ("io_uring_enter", (-1, 0, 0, 0, nul, 0)),
        ("io_uring_register", (-1, 0, nul, 0)),
        ("clone3", (nul, 0)),
        ("setns", (-1, 0)),
        ("syslog", (10, nul, 0)),                   # SYSLOG_ACTION_SIZE_BUFFER
        ("open_by_handle_at", (-1, nul, 0)),
    ]
    for name, args in tries:
        print(f"{name}: {sysc(NR[name], *args)}")
    print(f"unshare-user: {sysc(NR['unshare'], CLONE_NEWUSER)}")
    print(f"unshare-mount: {sysc(NR['unshare'], CLONE_NEWNS)}")
    sys.stdout.flush()


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(path)
    s.settimeout(0.5)
    try:
        data = s.recv(16)
    except socket.timeout:
        data = b""
    s.close()
    return "ok " + data.decode(errors="replace")


def tcp(host, port):
    s = socket.create_connection((host, port), timeout=2)
    s.close()


def listen(where, out):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + where[1:] if where.startswith("@") else where)
    if not where.startswith("@"):
        os.chmod(where, 0o777)
    s.listen(8)
    with open(out, "w") as f:
        f.write("ready\n")
    while True:
        c, _ = s.accept()
        try:
            c.sendall(b"!")
            with open(out, "a") as f:
                f.write("client\n")
        finally:
            c.close()


def main(argv):
    what = argv[1]
    if what == "write":
        attempt("write " + argv[2], lambda: write(argv[2], argv[3]))
    elif what == "read":
        for p in argv[2:]:
            attempt("read " + p, lambda p=p: read(p))
    elif what == "ls":
        for p in argv[2:]:
            try:
                names = sorted(os.listdir(p))
            except OSError as e:
                print("ls " + p + ": " + err(e.errno))
                continue
            if names:
                print("\n".join(names))
    elif what == "keyread":
        buf = ctypes.create_string_buffer(256)
        print(f"keyread: {sysc(NR['keyctl'], 11, int(argv[2]), buf, 256)} {buf.value!r}")
    elif what == "syscalls":
        syscalls()
    elif what == "connect":
        for p in argv[2:]:
            attempt("connect " + p, lambda p=p: connect(p))
    elif what == "abstract":
        attempt("abstract " + argv[2], lambda: connect("\0" + argv[2]))
    elif what == "tcp":
        attempt(f"tcp {argv[2]}:{argv[3]}", lambda: tcp(argv[2], int(argv[3])))
    elif what == "kill":
        attempt("kill " + argv[2], lambda: os.kill(int(argv[2]), 9))
    elif what == "listen":
        listen(argv[2], argv[3])
    elif what == "tcp-listen":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        with open(argv[2], "w") as f:
            f.write(f"{s.getsockname()[1]}\n")
        while True:
            s.accept()[0].close()
    elif what == "plant-key":
        r = libc.syscall(ctypes.c_long(NR["add_key"]), ctypes.c_char_p(b"user"),
                         ctypes.c_char_p(argv[2].encode()), ctypes.c_char_p(argv[3].encode()),
                         ctypes.c_long(len(argv[3])), ctypes.c_long(-4))
        if r < 0:
            print("error " + err(ctypes.get_errno()))
            return 1
        print(r)
    elif what == "revoke-key":
        print(sysc(NR["keyctl"], 3, int(argv[2])))
    else:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
