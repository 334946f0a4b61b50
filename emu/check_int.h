/* SPDX-License-Identifier: MIT */
/* check — the probes of check.c's rows (check_probe.c), one per row, each an
 * emu_check_probe_fn: true when the feature works here, what was seen in detail. */
#ifndef ODPEMU_EMU_CHECK_INT_H
#define ODPEMU_EMU_CHECK_INT_H

#include <stdbool.h>
#include <stddef.h>

bool emu_check_probe_udp_socket(char *detail, size_t len);
bool emu_check_probe_io_uring(char *detail, size_t len);
bool emu_check_probe_poll_multishot(char *detail, size_t len);
bool emu_check_probe_coop_taskrun(char *detail, size_t len);
bool emu_check_probe_buf_ring(char *detail, size_t len);
bool emu_check_probe_recvmsg_multishot(char *detail, size_t len);
bool emu_check_probe_sync_cancel(char *detail, size_t len);
bool emu_check_probe_udp_gso(char *detail, size_t len);
bool emu_check_probe_udp_gro(char *detail, size_t len);
bool emu_check_probe_udp_buffers(char *detail, size_t len);
bool emu_check_probe_procmap_query(char *detail, size_t len);
bool emu_check_probe_process_vm(char *detail, size_t len);
bool emu_check_probe_ptrace_scope(char *detail, size_t len);
bool emu_check_probe_userfaultfd(char *detail, size_t len);
bool emu_check_probe_uffd_wp_shmem(char *detail, size_t len);
bool emu_check_probe_uffd_wp_async(char *detail, size_t len);
bool emu_check_probe_seccomp_notify(char *detail, size_t len);
bool emu_check_probe_pidfd_open(char *detail, size_t len);
bool emu_check_probe_map_files(char *detail, size_t len);
bool emu_check_probe_cachestat(char *detail, size_t len);
bool emu_check_probe_netns(char *detail, size_t len);

#endif
