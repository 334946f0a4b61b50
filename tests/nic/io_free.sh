#!/bin/sh
# nic/ must stay I/O-free and deterministic (DESIGN.md "The four ports of nic/"): no
# syscalls, threads, sockets, clocks or randomness. Fails listing every offending line.
set -u
dir=${1:?usage: io_free.sh NICDIR}
calls='socket|bind|connect|send|sendto|sendmsg|recv|recvfrom|recvmsg|read|write|pread|pwrite|open|openat|close|ioctl|mmap|munmap|poll|select|epoll_[a-z_]+|io_uring_[a-z_]+|clock_gettime|gettimeofday|time|nanosleep|usleep|sleep|pthread_[a-z_]+|thrd_[a-z_]+|fork|exec[lvpe]*|syscall|getrandom|rand|srand|random|getpid|kill|signal|sigaction'
headers='pthread|threads|unistd|time|signal|poll|fcntl|netinet/[a-z]+|arpa/[a-z]+|sys/[a-z_]+|liburing|netlink/[a-z/]+'
bad=$(grep -nE "(^|[^A-Za-z0-9_.>])($calls)[[:space:]]*\(" "$dir"/*.c "$dir"/*.h | grep -vE '^\S+:[0-9]+:\s*(/?\*|//)')
inc=$(grep -nE "#[[:space:]]*include[[:space:]]*<($headers)\.h>" "$dir"/*.c "$dir"/*.h)
if [ -n "$bad$inc" ]; then
	echo "nic/ must not do I/O, start threads or read clocks:"
	[ -n "$bad" ] && echo "$bad"
	[ -n "$inc" ] && echo "$inc"
	exit 1
fi
echo "nic/: no syscalls, threads, sockets, clocks or randomness ($(ls "$dir"/*.c | wc -l) sources)"
