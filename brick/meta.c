/* SPDX-License-Identifier: MIT */
/*
 * meta — the brick's allocation map (see meta.h).
 *
 * In memory the map is an array of (id, slot) sorted by id, searched by bisection, and a
 * bitmap of the used slots. On disk it is the log of meta.h. Records are written with
 * pwrite at the offset their seq gives, never with O_APPEND, so a write that failed
 * partway is overwritten by the next one even when cutting it back failed too.
 *
 * Replay does not apply the records one by one: inserting into the sorted array in log
 * order would be quadratic. It checks each record alone, then the history of every slot
 * and of every id (sorted by slot, then by id: O(n log n)), and takes the live map
 * straight out of the history sorted by id.
 */
#include "meta.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>	/* rename */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define BLOCK (2ull << 20)		/* a block id's alignment and an extent's unit */
#define REC_SIZE 32u
#define REC_CRC_OFF 28u			/* the crc covers the bytes before it */
#define META_VERSION 1u
#define READ_RECS 2048u			/* records per read on replay: 64 KiB */
#define WRITE_RECS 128u			/* records per write on compaction: 4 KiB */
#define COMPACT_MIN 1024u		/* meta.h: compact above 1024 records ... */
#define COMPACT_RATIO 4u		/* ... and above 4 per live block */
/* A cap so that seq (u32) never wraps: compaction keeps the log within 4 records per
 * live block or COMPACT_MIN + 1 records, below 2^32 for 2^29 slots (1 PiB of blocks). */
#define META_MAX_SLOTS (1ull << 29)

enum rec_type { REC_HEADER = 1, REC_ALLOC = 2, REC_FREE = 3 };

struct rec {
	uint16_t type, rsvd;
	uint64_t addr, slot;
	uint32_t seq;
};

struct entry {
	uint64_t addr, slot;
};

/* One alloc or free of the log, as replay sorts it: by key (the slot, then the id), then
 * by seq, so each slot's and each id's history are runs in log order. */
struct change {
	uint64_t key, addr, slot;
	uint32_t seq;
	uint16_t type;
};

struct brick_meta {
	int fd;
	char *path, *tmp, *dir;		/* the log, its compaction copy, its directory */
	bool dir_dirty;			/* the log's name is not durable yet */
	uint64_t slots, records;	/* records: in the log, the header included */
	struct entry *map;		/* sorted by addr */
	uint64_t count, cap;
	uint64_t *used;			/* bitmap of slots; the bits past `slots` set */
	uint64_t low_word;		/* no word of `used` below it has a free bit */
};

static_assert(REC_CRC_OFF + 4 == REC_SIZE, "the crc ends the record");

/* ---- records ---------------------------------------------------------------------- */

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint32_t rec_crc(const uint8_t *p)
{
	return (uint32_t)crc32(0L, p, REC_CRC_OFF);
}

static void rec_encode(const struct rec *r, uint8_t *p)
{
	put_le(p, BRICK_META_MAGIC, 4);
	put_le(p + 4, r->type, 2);
	put_le(p + 6, r->rsvd, 2);
	put_le(p + 8, r->addr, 8);
	put_le(p + 16, r->slot, 8);
	put_le(p + 24, r->seq, 4);
	put_le(p + REC_CRC_OFF, rec_crc(p), 4);
}

/* False when the bytes are not a record at all (magic or crc wrong): damage a tear can
 * leave. A record that passes but says something impossible is checked later. */
static bool rec_decode(const uint8_t *p, struct rec *r)
{
	if (get_le(p, 4) != BRICK_META_MAGIC || get_le(p + REC_CRC_OFF, 4) != rec_crc(p))
		return false;
	r->type = (uint16_t)get_le(p + 4, 2);
	r->rsvd = (uint16_t)get_le(p + 6, 2);
	r->addr = get_le(p + 8, 8);
	r->slot = get_le(p + 16, 8);
	r->seq = (uint32_t)get_le(p + 24, 4);
	return true;
}

static bool aligned(uint64_t addr)
{
	return addr % BLOCK == 0;
}

/* ---- file helpers ----------------------------------------------------------------- */

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n, len -= (size_t)n, off += n;
	}
	return 0;
}

static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)		/* 0: the file shrank under us */
			return n < 0 ? -errno : -EIO;
		p += n, len -= (size_t)n, off += n;
	}
	return 0;
}

/* A rename or a creation is durable only once its directory is synced. */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

/* ---- the in-memory map ------------------------------------------------------------ */

/* The index of the first entry with an id >= addr (count: none). */
static uint64_t lower_bound(const struct brick_meta *m, uint64_t addr)
{
	uint64_t lo = 0, hi = m->count;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (m->map[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool find(const struct brick_meta *m, uint64_t addr, uint64_t *i)
{
	*i = lower_bound(m, addr);
	return *i < m->count && m->map[*i].addr == addr;
}

/* Room for one more entry, made before the log is written so that an answered change
 * can always be applied in memory. */
static int map_reserve(struct brick_meta *m)
{
	uint64_t cap = m->cap ? 2 * m->cap : 64;
	struct entry *e;

	if (m->count < m->cap)
		return 0;
	if (!(e = realloc(m->map, cap * sizeof(*e))))
		return -ENOMEM;
	m->map = e;
	m->cap = cap;
	return 0;
}

static void slot_mark(struct brick_meta *m, uint64_t slot, bool used)
{
	uint64_t bit = 1ull << (slot % 64);

	if (used) {
		m->used[slot / 64] |= bit;
	} else {
		m->used[slot / 64] &= ~bit;
		if (slot / 64 < m->low_word)
			m->low_word = slot / 64;
	}
}

/* The lowest free slot, or UINT64_MAX when all are used. */
static uint64_t lowest_free(struct brick_meta *m)
{
	uint64_t words = (m->slots + 63) / 64;

	while (m->low_word < words && m->used[m->low_word] == UINT64_MAX)
		m->low_word++;
	if (m->low_word == words)
		return UINT64_MAX;
	return m->low_word * 64 + (uint64_t)__builtin_ctzll(~m->used[m->low_word]);
}

static void map_insert(struct brick_meta *m, uint64_t i, uint64_t addr, uint64_t slot)
{
	memmove(&m->map[i + 1], &m->map[i], (m->count - i) * sizeof(m->map[0]));
	m->map[i] = (struct entry){ addr, slot };
	m->count++;
	slot_mark(m, slot, true);
}

static void map_remove(struct brick_meta *m, uint64_t i)
{
	slot_mark(m, m->map[i].slot, false);
	m->count--;
	memmove(&m->map[i], &m->map[i + 1], (m->count - i) * sizeof(m->map[0]));
}

/* ---- writing the log -------------------------------------------------------------- */

/* Append one record and make it durable. On failure the log is cut back to where it
 * was, so nothing changed: -EIO (the cause is the file system's, and the caller can do
 * nothing about which one it was). */
static int log_append(struct brick_meta *m, uint16_t type, uint64_t addr, uint64_t slot)
{
	off_t end = (off_t)(m->records * REC_SIZE);
	uint8_t buf[REC_SIZE];

	if (m->dir_dirty) {
		if (sync_dir(m->dir))
			return -EIO;
		m->dir_dirty = false;
	}
	if (m->records > UINT32_MAX)	/* seq would wrap: META_MAX_SLOTS keeps it away */
		return -EIO;
	rec_encode(&(struct rec){ .type = type, .addr = addr, .slot = slot,
				  .seq = (uint32_t)m->records }, buf);
	if (pwrite_all(m->fd, buf, sizeof(buf), end) || fdatasync(m->fd)) {
		if (ftruncate(m->fd, end) == 0)
			(void)fdatasync(m->fd);
		return -EIO;
	}
	m->records++;
	return 0;
}

/* The live map as a log (the header, then one alloc per block in id order) into fd. */
static int write_map(const struct brick_meta *m, int fd)
{
	uint8_t buf[WRITE_RECS * REC_SIZE];
	uint64_t total = m->count + 1, done = 0;

	while (done < total) {
		uint64_t n = total - done < WRITE_RECS ? total - done : WRITE_RECS;
		int rc;

		for (uint64_t k = 0; k < n; k++) {
			uint64_t seq = done + k;
			struct rec r = { .type = REC_HEADER, .addr = m->slots,
					 .slot = META_VERSION, .seq = (uint32_t)seq };

			if (seq) {
				r.type = REC_ALLOC;
				r.addr = m->map[seq - 1].addr;
				r.slot = m->map[seq - 1].slot;
			}
			rec_encode(&r, buf + k * REC_SIZE);
		}
		if ((rc = pwrite_all(fd, buf, n * REC_SIZE, (off_t)(done * REC_SIZE))))
			return rc;
		done += n;
	}
	return 0;
}

static bool compaction_due(const struct brick_meta *m)
{
	return m->records > COMPACT_MIN && m->records > COMPACT_RATIO * m->count;
}

/* Rewrite the log as the live map: a new file, synced, renamed over the old one. A crash
 * at any point leaves one of the two logs under the name, and both hold the same map.
 * 0 once the new log is in place (its name is synced now or before the next append), or
 * -errno with the old log still in use. */
static int compact(struct brick_meta *m)
{
	int fd = open(m->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), rc;

	if (fd < 0)
		return -errno;
	rc = write_map(m, fd);
	if (!rc && fdatasync(fd))
		rc = -errno;
	if (!rc && rename(m->tmp, m->path))
		rc = -errno;
	if (rc) {
		close(fd);
		unlink(m->tmp);
		return rc;
	}
	close(m->fd);
	m->fd = fd;
	m->records = m->count + 1;
	m->dir_dirty = sync_dir(m->dir) != 0;	/* else log_append retries it */
	return 0;
}

/* ---- replay ----------------------------------------------------------------------- */

/* A record that passed its crc, checked alone: 0, or -EINVAL (a header for another slot
 * count), -EPROTONOSUPPORT (another format version), -EBADMSG (anything else wrong). */
static int check_record(const struct brick_meta *m, const struct rec *r, uint64_t i)
{
	if (r->seq != i || r->rsvd)
		return -EBADMSG;
	if (i == 0) {
		if (r->type != REC_HEADER)
			return -EBADMSG;
		if (r->addr != m->slots)
			return -EINVAL;
		return r->slot == META_VERSION ? 0 : -EPROTONOSUPPORT;
	}
	if (r->type != REC_ALLOC && r->type != REC_FREE)
		return -EBADMSG;
	return aligned(r->addr) && r->slot < m->slots ? 0 : -EBADMSG;
}

/* Read the n whole records of the log, check each alone and collect the changes (all but
 * the header) into ch. A record that is not one (bad magic or crc) is the torn tail when
 * it is the file's last (no partial record after it), and corruption anywhere else: a
 * tear is one record, since a record is written only once the one before it is durable.
 * rep->records counts the good ones, rep->torn_bytes what follows them. */
static int read_records(struct brick_meta *m, uint64_t n, uint64_t rem, struct change *ch,
			uint64_t *nch, struct brick_meta_report *rep)
{
	uint8_t *buf = malloc(READ_RECS * REC_SIZE);
	int rc = buf ? 0 : -ENOMEM;

	rep->torn_bytes = rem;
	for (uint64_t i = 0; i < n && !rc; i++) {
		struct rec r;

		if (i % READ_RECS == 0) {
			uint64_t k = n - i < READ_RECS ? n - i : READ_RECS;

			if ((rc = pread_all(m->fd, buf, k * REC_SIZE, (off_t)(i * REC_SIZE))))
				break;
		}
		if (!rec_decode(buf + i % READ_RECS * REC_SIZE, &r)) {
			rc = i + 1 == n && !rem ? 0 : -EBADMSG;
			rep->torn_bytes = rc ? 0 : REC_SIZE;
			break;
		}
		if ((rc = check_record(m, &r, i)))
			break;
		if (i)
			ch[(*nch)++] = (struct change){ .addr = r.addr, .slot = r.slot,
							.seq = r.seq, .type = r.type };
		rep->records = i + 1;
	}
	free(buf);
	return rc;
}

static int change_cmp(const void *a, const void *b)
{
	const struct change *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort the changes by slot (by_slot) or by id, and check that each one's history
 * alternates alloc, free, alloc ..., every free naming what the alloc before it did.
 * Together the two orders say exactly what replaying in log order would: an alloc finds
 * its slot and its id free, a free finds the id in that slot. Returns the seq of the
 * first change that breaks this, UINT32_MAX + 1 when none does. */
static uint64_t check_history(struct change *ch, uint64_t n, bool by_slot)
{
	uint64_t first_bad = UINT32_MAX + 1ull;

	for (uint64_t i = 0; i < n; i++)
		ch[i].key = by_slot ? ch[i].slot : ch[i].addr;
	qsort(ch, n, sizeof(*ch), change_cmp);
	for (uint64_t i = 0; i < n; i++) {
		const struct change *c = &ch[i];
		const struct change *prev = i && ch[i - 1].key == c->key ? c - 1 : NULL;
		bool ok;

		if (c->type == REC_ALLOC)
			ok = !prev || prev->type == REC_FREE;
		else
			ok = prev && prev->type == REC_ALLOC &&
			     (by_slot ? prev->addr == c->addr : prev->slot == c->slot);
		if (!ok && c->seq < first_bad)
			first_bad = c->seq;
	}
	return first_bad;
}

/* The live map from the changes sorted by id: each id whose last change is an alloc. */
static int build_map(struct brick_meta *m, const struct change *ch, uint64_t n)
{
	uint64_t live = 0;

	for (uint64_t i = 0; i < n; i++)
		live += ch[i].type == REC_ALLOC && (i + 1 == n || ch[i + 1].key != ch[i].key);
	m->cap = live > 64 ? live : 64;
	if (!(m->map = malloc(m->cap * sizeof(*m->map))))
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++)
		if (ch[i].type == REC_ALLOC && (i + 1 == n || ch[i + 1].key != ch[i].key))
			map_insert(m, m->count, ch[i].addr, ch[i].slot);
	return 0;
}

/* Read and check the whole log and build the map, writing nothing: 0 with rep->records
 * and rep->torn_bytes, or -errno (rep->records: the good records before the problem). */
static int replay(struct brick_meta *m, struct brick_meta_report *rep)
{
	struct stat sb;
	struct change *ch;
	uint64_t n, nch = 0, bad;
	int rc;

	if (fstat(m->fd, &sb))
		return -errno;
	n = (uint64_t)sb.st_size / REC_SIZE;
	if (!(ch = malloc((n ? n : 1) * sizeof(*ch))))
		return -ENOMEM;
	rc = read_records(m, n, (uint64_t)sb.st_size % REC_SIZE, ch, &nch, rep);
	if (!rc) {
		uint64_t by_slot = check_history(ch, nch, true);
		uint64_t by_addr = check_history(ch, nch, false);	/* leaves ch by id */

		if ((bad = by_slot < by_addr ? by_slot : by_addr) <= UINT32_MAX) {
			rep->records = bad;	/* its seq: the good records before it */
			rep->torn_bytes = 0;
			rc = -EBADMSG;
		}
	}
	if (!rc)
		rc = build_map(m, ch, nch);
	if (rc)
		rep->torn_bytes = 0;	/* nothing was cut */
	free(ch);
	m->records = rep->records;
	return rc;
}

/* ---- open and close --------------------------------------------------------------- */

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static int meta_new(const char *path, uint64_t slots, struct brick_meta **out)
{
	struct brick_meta *m = calloc(1, sizeof(*m));
	uint64_t words = (slots + 63) / 64;

	if (!m)
		return -ENOMEM;
	*out = m;
	m->fd = -1;
	m->slots = slots;
	m->path = strdup(path);
	m->dir = dir_of(path);
	m->used = calloc(words, sizeof(*m->used));
	if (m->path && (m->tmp = malloc(strlen(path) + sizeof(".tmp"))))
		strcat(strcpy(m->tmp, path), ".tmp");
	if (!m->path || !m->dir || !m->used || !m->tmp)
		return -ENOMEM;
	if (slots % 64)		/* the bits past the last slot: never free */
		m->used[words - 1] = ~0ull << (slots % 64);
	return 0;
}

/* Open the log, replay it, cut a torn tail, and give a log without a header one. */
static int log_open(struct brick_meta *m, struct brick_meta_report *rep)
{
	int rc;

	if ((m->fd = open(m->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -errno;
	if ((rc = replay(m, rep)))
		return rc;
	if (rep->torn_bytes &&
	    (ftruncate(m->fd, (off_t)(m->records * REC_SIZE)) || fdatasync(m->fd)))
		return -errno;
	if (m->records)
		return 0;
	/* A new log (or one whose header was torn: then nothing was ever answered). */
	rep->created = true;
	m->dir_dirty = true;
	return log_append(m, REC_HEADER, m->slots, META_VERSION);
}

int brick_meta_open(const char *path, uint64_t slots, struct brick_meta **out,
		    struct brick_meta_report *rep)
{
	struct brick_meta_report r = { 0 };
	struct brick_meta *m = NULL;
	int rc = -EINVAL;

	if (path && out && slots && slots <= META_MAX_SLOTS)
		rc = meta_new(path, slots, &m);
	if (!rc)
		rc = log_open(m, &r);
	/* Compaction only saves space: when it fails, the old log serves as well. */
	if (!rc && compaction_due(m))
		r.compacted = compact(m) == 0;
	if (rep)
		*rep = r;
	if (rc) {
		brick_meta_close(m);
		return rc;
	}
	*out = m;
	return 0;
}

void brick_meta_close(struct brick_meta *m)
{
	if (!m)
		return;
	if (m->fd >= 0)
		close(m->fd);
	free(m->path);
	free(m->tmp);
	free(m->dir);
	free(m->map);
	free(m->used);
	free(m);
}

/* ---- the operations --------------------------------------------------------------- */

int brick_meta_alloc(struct brick_meta *m, uint64_t addr, uint64_t *slot)
{
	uint64_t i, s;
	int rc;

	if (!aligned(addr))
		return -EINVAL;
	if (find(m, addr, &i))
		return -EEXIST;
	if ((s = lowest_free(m)) == UINT64_MAX)
		return -ENOSPC;
	if ((rc = map_reserve(m)) || (rc = log_append(m, REC_ALLOC, addr, s)))
		return rc;
	map_insert(m, i, addr, s);
	if (slot)
		*slot = s;
	return 0;
}

int brick_meta_free(struct brick_meta *m, uint64_t addr, uint64_t *slot)
{
	uint64_t i, s;
	int rc;

	if (!aligned(addr))
		return -EINVAL;
	if (!find(m, addr, &i))
		return -ENOENT;
	s = m->map[i].slot;
	if ((rc = log_append(m, REC_FREE, addr, s)))
		return rc;
	map_remove(m, i);
	if (slot)
		*slot = s;
	/* The free is durable already; compaction only saves space, its failure is not
	 * the caller's. */
	if (compaction_due(m))
		(void)compact(m);
	return 0;
}

int brick_meta_lookup(const struct brick_meta *m, uint64_t addr, uint64_t *slot)
{
	uint64_t i;

	if (!aligned(addr))
		return -EINVAL;
	if (!find(m, addr, &i))
		return -ENOENT;
	if (slot)
		*slot = m->map[i].slot;
	return 0;
}

bool brick_meta_slot_used(const struct brick_meta *m, uint64_t slot)
{
	return slot < m->slots && (m->used[slot / 64] >> (slot % 64) & 1);
}

uint64_t brick_meta_count(const struct brick_meta *m) { return m->count; }
uint64_t brick_meta_slots(const struct brick_meta *m) { return m->slots; }

/* The index past the run of consecutive ids that starts at index i. */
static uint64_t run_end(const struct brick_meta *m, uint64_t i)
{
	while (++i < m->count && m->map[i].addr - m->map[i - 1].addr == BLOCK)
		;
	return i;
}

uint32_t brick_meta_extents(const struct brick_meta *m, uint64_t from,
			    struct brick_extent *ext, uint32_t max, uint64_t *next)
{
	uint64_t i = lower_bound(m, from);
	uint32_t n = 0;

	while (i < m->count && n < max) {
		uint64_t j = run_end(m, i);

		ext[n++] = (struct brick_extent){ .addr = m->map[i].addr,
						  .length = (j - i) * BLOCK };
		i = j;
	}
	if (next)
		*next = i == m->count ? 0 : n ? ext[n - 1].addr + ext[n - 1].length : from;
	return n;
}
