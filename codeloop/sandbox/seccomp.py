"""A seccomp filter for sandboxed programs: system calls no checked program needs.

bubblewrap loads it (`--seccomp FD`) right before it executes the command. Denied
calls fail with EPERM rather than killing the process, so a program that probes for
them gets an ordinary error. What is denied, and why:
- the kernel keyring (`add_key`, `request_key`, `keyctl`): keys are not namespaced;
  a program could read or plant keys that outlive the check;
- `ptrace`, `process_vm_readv`/`writev`, `pidfd_open`, `pidfd_getfd`,
  `pidfd_send_signal`, `process_madvise`, `kcmp`: no program under test debugs, signals
  or copies the descriptors of another (the Python test process is also non-dumpable,
  see `languages/python/box`; runtimes that try `pidfd_open` fall back to plain pids when it fails);
- `socket(AF_VSOCK, ...)`: vsock is not namespaced, so a sandbox without a network
  could still reach the host's or a VM's vsock services;
- `unshare`, `setns`, `mount`, `umount2`, `pivot_root`: no nested namespaces or
  mounts (bwrap's `--disable-userns` covers user namespaces as well);
- `sched_setaffinity`: a run the harness pinned to its worker's CPU (where no cgroup
  CPU quota applies) stays there;
- `bpf`, `perf_event_open`, `userfaultfd`, `io_uring_*`, `open_by_handle_at`,
  kexec, module loading, `syslog`, `acct`, `swapon`/`swapoff`, `reboot`:
  kernel attack surface no program needs;
and every call made through another ABI (x32, or i386 via `int 0x80`), whose
numbers this list would not match.

The filter is written for x86-64; on other machines no filter is loaded and
`available()` says so (the rest of the sandbox still applies). `bwrap_args()` hands
the filter over the way bubblewrap takes it: its option and the fd it reads.
"""

from __future__ import annotations

import functools
import os
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM = 1

DENIED_X86_64 = {
    "ptrace": 101,
    "syslog": 103,
    "sched_setaffinity": 203,
    "pivot_root": 155,
    "acct": 163,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "init_module": 175,
    "delete_module": 176,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "open_by_handle_at": 304,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "pidfd_send_signal": 424,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "kcmp": 312,
}
SOCKET_X86_64 = 41
AF_VSOCK = 40

# Classic BPF opcodes (linux/filter.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_JA = 0x05
_ARG0_LOW = 16
"""Offset of the low 32 bits of seccomp_data.args[0] (little-endian x86-64)."""


def available() -> bool:
    """Whether this machine gets the filter (x86-64 only)."""
    return platform.machine() in ("x86_64", "AMD64")


def _op(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.cache
def program() -> bytes:
    """The filter as raw `struct sock_filter` records, the format bwrap reads."""
    deny = SECCOMP_RET_ERRNO | EPERM
    numbers = sorted(DENIED_X86_64.values())
    ops = [
        _op(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _op(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _op(_RET_K, 0, 0, deny),  # another ABI (i386 through int 0x80)
        _op(_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        _op(_JGE_K, 0, 1, X32_SYSCALL_BIT),
        _op(_RET_K, 0, 0, deny),  # the x32 ABI
    ]
    # socket(2): to the argument check at the end; every other call: the list.
    ops.append(_op(_JEQ_K, 0, 1, SOCKET_X86_64))
    ops.append(_op(_JA, 0, 0, len(numbers) + 2))
    for index, number in enumerate(numbers):
        # Equal: jump to the deny at the end; otherwise test the next number.
        ops.append(_op(_JEQ_K, len(numbers) - index, 0, number))
    ops.append(_op(_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    ops.append(_op(_RET_K, 0, 0, deny))
    # socket(domain, ...): AF_VSOCK is denied, any other domain allowed.
    ops.append(_op(_LD_W_ABS, 0, 0, _ARG0_LOW))
    ops.append(_op(_JEQ_K, 1, 0, AF_VSOCK))
    ops.append(_op(_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    ops.append(_op(_RET_K, 0, 0, deny))
    return b"".join(ops)


def bwrap_args() -> tuple[list[str], tuple[int, ...]]:
    """bwrap's `--seccomp FD` and the fd holding the filter (nothing where unavailable).

    The caller hands the fd to bwrap (`pass_fds`) and closes its own copy once bwrap has
    started; the filter is made and delivered here, in one step of the run's set-up."""
    if not available():
        return [], ()
    fd = _pipe_holding(program())
    return ["--seccomp", str(fd)], (fd,)


def _pipe_holding(data: bytes) -> int:
    """The read end of a pipe that holds `data` and then ends (small data only: the
    filter, well under a pipe's buffer, so the write never blocks)."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read
