/* SPDX-License-Identifier: MIT */
/* mcast — one udp.c socket per joined group (mcast.h); a few hundred at most
 * (nic's max_mcast_grp), found by a scan. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mcast.h"
#include "say.h"
#include "udp.h"

struct group {
	struct emu_mcast *m;
	struct nic_gid gid;
	struct emu_udp *u;
	struct group *next;
};

struct emu_mcast {
	struct emu_loop *loop;
	struct emu_mcast_config cfg;
	struct group *groups;
	unsigned n;
};

int emu_mcast_new(struct emu_loop *loop, const struct emu_mcast_config *cfg,
		  struct emu_mcast **out)
{
	struct emu_mcast *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->loop = loop;
	m->cfg = *cfg;
	*out = m;
	return 0;
}

static void on_datagram(void *arg, const uint8_t *pkt, size_t len, const struct nic_gid *src,
			uint16_t sport)
{
	struct group *g = arg;

	g->m->cfg.deliver(g->m->cfg.deliver_arg, pkt, len, src, sport, &g->gid);
}

static struct group **find(struct emu_mcast *m, const struct nic_gid *gid)
{
	struct group **p = &m->groups;

	while (*p && memcmp(&(*p)->gid, gid, sizeof(*gid)))
		p = &(*p)->next;
	return p;
}

int emu_mcast_join(struct emu_mcast *m, const struct nic_gid *group, char *err, size_t errlen)
{
	/* A group's socket reads datagram by datagram on the recvmmsg path: a few of them
	 * must not cost the loop a provided-buffer ring each (io_uring has 64 groups). */
	struct emu_udp_config c = { .local = *group, .port = m->cfg.port, .group = true,
		.iface = m->cfg.iface, .ifindex = m->cfg.ifindex, .force_fallback = true,
		.no_gro = true, .no_gso = true, .rcvbuf = 1u << 20, .sndbuf = 4096,
		.deliver = on_datagram };
	struct group *g;
	int rc;

	if (*find(m, group))
		return 0;
	if (!(g = calloc(1, sizeof(*g)))) {
		emu_say(err, errlen, "out of memory for a multicast group");
		return -ENOMEM;
	}
	g->m = m;
	g->gid = *group;
	c.deliver_arg = g;
	if ((rc = emu_udp_open(m->loop, &c, &g->u, err, errlen))) {
		free(g);
		return rc;
	}
	g->next = m->groups;
	m->groups = g;
	m->n++;
	return 0;
}

static void group_close(struct group *g)
{
	emu_udp_close(g->u);
	free(g);
}

void emu_mcast_leave(struct emu_mcast *m, const struct nic_gid *group)
{
	struct group **p = find(m, group), *g = *p;

	if (!g)
		return;
	*p = g->next;
	m->n--;
	group_close(g);
}

void emu_mcast_free(struct emu_mcast *m)
{
	if (!m)
		return;
	while (m->groups) {
		struct group *g = m->groups;

		m->groups = g->next;
		group_close(g);
	}
	free(m);
}

unsigned emu_mcast_groups(const struct emu_mcast *m)
{
	return m ? m->n : 0;
}
