/* SPDX-License-Identifier: MIT */
/*
 * maps — one walk over the VMAs of /proc/PID/maps (see maps.h): PROCMAP_QUERY where the
 * kernel has it (Linux 6.11+), the text otherwise. Three parts: the line parser, the two
 * sources, and the walk that picks one and keeps to [lo, hi).
 */
#include "maps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "mask.h"
#include "procmap.h"

/* ---- one line of the text ---- */

/* Lowercase hex, as the kernel prints it: at most 16 digits (64 bits). */
static const char *parse_hex(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	for (; p < end; p++, digits++) {
		char c = *p;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
			c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;

		if (d == 16)
			break;
		if (digits == 16)
			return NULL;
		v = v << 4 | d;
	}
	*out = v;
	return digits ? p : NULL;
}

/* Decimal (the inode: "%lu"), without overflowing 64 bits. */
static const char *parse_dec(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return NULL;
		v = v * 10 + d;
	}
	*out = v;
	return digits ? p : NULL;
}

/* The spaces between two fields: at least one. */
static const char *skip_spaces(const char *p, const char *end)
{
	if (!p || p == end || *p != ' ')
		return NULL;
	while (p < end && *p == ' ')
		p++;
	return p;
}

static int parse_perms(const char *p, unsigned *prot)
{
	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -EINVAL;
	*prot = (p[0] == 'r' ? IPC_VMA_R : 0) | (p[1] == 'w' ? IPC_VMA_W : 0) |
		(p[2] == 'x' ? IPC_VMA_X : 0) | (p[3] == 's' ? IPC_VMA_SHARED : 0);
	return 0;
}

/* "major:minor" in hex ("%02x:%02x"), each 32 bits at most. */
static const char *parse_dev(const char *p, const char *end, struct ipc_vma *v)
{
	uint64_t major, minor;

	p = parse_hex(p, end, &major);
	if (!p || p == end || *p++ != ':')
		return NULL;
	p = parse_hex(p, end, &minor);
	if (!p || major > UINT32_MAX || minor > UINT32_MAX)
		return NULL;
	v->dev_major = (uint32_t)major;
	v->dev_minor = (uint32_t)minor;
	return p;
}

/* fs/proc/task_mmu.c show_map_vma(): "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu " then, for
 * a named VMA, padding and the name. A path's newlines are escaped ("\012"), so a VMA is
 * one line. */
int ipc_maps_parse_line(const char *line, size_t len, struct ipc_vma *out)
{
	const char *p = line, *end = line + len;
	struct ipc_vma v = { 0 };

	p = parse_hex(p, end, &v.start);
	if (!p || p == end || *p++ != '-')
		return -EINVAL;
	p = parse_hex(p, end, &v.end);
	if (!p || end - p < 5 || *p++ != ' ' || parse_perms(p, &v.prot))
		return -EINVAL;
	p = skip_spaces(p + 4, end);
	p = p ? parse_hex(p, end, &v.offset) : NULL;
	p = skip_spaces(p, end);
	p = p ? parse_dev(p, end, &v) : NULL;
	p = skip_spaces(p, end);
	p = p ? parse_dec(p, end, &v.inode) : NULL;
	if (!p || (p < end && *p != ' ') || v.start >= v.end)
		return -EINVAL;
	while (p < end && *p == ' ')
		p++;
	v.name = p;
	v.name_len = (size_t)(end - p);
	*out = v;
	return 0;
}

/* ---- the text: pread from offset 0, consecutive offsets after that, so seq_file goes
 * on from where it stopped instead of walking the VMAs again for each read ---- */

/* The next line; 1, 0 at the end, -errno. A line longer than the buffer (a path of
 * thousands of bytes) is handed over cut at IPC_MAPS_TEXT_BUF bytes, which keeps every
 * field but the name whole; the rest of it is skipped. */
static int text_line(struct ipc_maps *m, const char **line, size_t *len)
{
	for (;;) {
		char *start = m->buf + m->pos, *nl = memchr(start, '\n', m->len - m->pos);
		ssize_t n;

		if (nl) {
			m->pos = (size_t)(nl + 1 - m->buf);
			if (m->skipping) {
				m->skipping = false;
				continue;
			}
			*line = start;
			*len = (size_t)(nl - start);
			return 1;
		}
		if (m->eof) {
			/* A last line without '\n' (never seen from the kernel). */
			*line = start;
			*len = m->len - m->pos;
			m->pos = m->len;
			return *len && !m->skipping;
		}
		if (m->pos == 0 && m->len == IPC_MAPS_TEXT_BUF) {
			bool cut = !m->skipping;

			m->skipping = true;
			m->pos = m->len;
			if (cut) {
				*line = m->buf;
				*len = IPC_MAPS_TEXT_BUF;
				return 1;
			}
		}
		memmove(m->buf, m->buf + m->pos, m->len - m->pos);
		m->len -= m->pos;
		m->pos = 0;
		n = pread(m->fd, m->buf + m->len, IPC_MAPS_TEXT_BUF - m->len, m->off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ESRCH ? 0 : -errno;	/* the process is gone */
		m->eof = n == 0;
		m->off += n;
		m->len += (size_t)n;
	}
}

/* The next VMA ending above m->at: the lines below are parsed and passed over. */
static int text_next(struct ipc_maps *m, struct ipc_vma *v)
{
	const char *line = NULL;
	size_t len = 0;
	int rc;

	while ((rc = text_line(m, &line, &len)) > 0) {
		m->lines++;
		if (ipc_maps_parse_line(line, len, v))
			return -EPROTO;
		if (v->end > m->at)
			return 1;
	}
	return rc;
}

/* ---- PROCMAP_QUERY: one ioctl per VMA ---- */

/* Our permission bits are the kernel's vma_flags (maps.h): query_next copies them. */
#define PROT_BITS	(IPC_VMA_R | IPC_VMA_W | IPC_VMA_X | IPC_VMA_SHARED)
_Static_assert(IPC_VMA_R == PMQ_READABLE && IPC_VMA_W == PMQ_WRITABLE &&
	       IPC_VMA_X == PMQ_EXECUTABLE && IPC_VMA_SHARED == PMQ_SHARED, "vma_flags bits");

/* The VMA covering m->at or the next one; 1, 0 (none: ENOENT; the process is gone:
 * ESRCH), -errno (-ENOTTY: a kernel before 6.11). */
static int query_next(struct ipc_maps *m, struct ipc_vma *v)
{
	struct odpemu_procmap_query q = {
		.size = sizeof(q), .query_flags = PMQ_COVERING_OR_NEXT, .query_addr = m->at,
		.vma_name_size = IPC_MAPS_NAME_MAX, .vma_name_addr = (uintptr_t)m->name,
	};
	int rc = ioctl(m->fd, ODPEMU_PROCMAP_QUERY, &q);

	if (rc && (errno == E2BIG || errno == ENAMETOOLONG)) {
		/* The name did not fit (E2BIG), or d_path found it longer than PATH_MAX
		 * (ENAMETOOLONG): the VMA without its name. */
		q.vma_name_size = 0;
		q.vma_name_addr = 0;
		rc = ioctl(m->fd, ODPEMU_PROCMAP_QUERY, &q);
	}
	if (rc)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno;
	*v = (struct ipc_vma){
		.start = q.vma_start, .end = q.vma_end, .offset = q.vma_offset,
		.prot = (unsigned)q.vma_flags & PROT_BITS,
		.dev_major = q.dev_major, .dev_minor = q.dev_minor, .inode = q.inode,
		.name = m->name,
		/* It counts the terminating zero; 0 for a VMA without a name. */
		.name_len = q.vma_name_size ? q.vma_name_size - 1 : 0,
	};
	return 1;
}

/* ---- the walk ---- */

/* ODPEMU_MASK names procmap_query (maps.h TEST SWITCH): one look at the environment per
 * process (a fork child inherits it), taken by whichever thread walks first (they all
 * compute the same answer). */
static bool masked_query(void)
{
	static _Atomic int state;	/* 0: not looked yet, 1: masked, 2: not */
	int s = state;

	if (!s) {
		s = ipc_mask_has(getenv("ODPEMU_MASK"), "procmap_query") ? 1 : 2;
		state = s;
	}
	return s == 1;
}

void ipc_maps_begin(struct ipc_maps *m, int fd, uint64_t lo, uint64_t hi)
{
	if (masked_query())
		m->text = true;
	m->fd = fd;
	m->at = lo;
	m->hi = hi;
	m->done = lo >= hi;
	m->off = 0;
	m->len = m->pos = 0;
	m->eof = m->skipping = false;
	m->lines = 0;
}

/* A refusal of the ioctl itself: ENOTTY where the maps file has none (before Linux 6.11),
 * EINVAL where something between us and it refuses the request as such. The text
 * answers the same question on every kernel. */
static bool no_query(int rc)
{
	return rc == -ENOTTY || rc == -EINVAL;
}

static int next_from_either(struct ipc_maps *m, struct ipc_vma *v)
{
	if (!m->text) {
		int rc = query_next(m, v);

		if (!no_query(rc))
			return rc;
		/* From here on, for this walk (from m->at: nothing of the text read yet) and
		 * the later ones. */
		m->text = true;
	}
	return text_next(m, v);
}

int ipc_maps_next(struct ipc_maps *m, struct ipc_vma *v)
{
	int rc;

	if (m->done)
		return 0;
	rc = next_from_either(m, v);
	if (rc > 0 && v->start >= m->hi)
		rc = 0;
	if (rc <= 0) {
		m->done = true;
		return rc;
	}
	m->at = v->end;
	/* The last VMA meeting the range: no need to ask on. */
	m->done = v->end >= m->hi;
	return 1;
}
