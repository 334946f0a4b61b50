/* SPDX-License-Identifier: MIT */
/*
 * udp — sending: a batch of datagrams, sent with one sendmmsg per flush, where runs of
 * datagrams to one peer of one length (every full-MTU packet of a message; a burst of equal
 * small messages) leave as one UDP_SEGMENT (GSO) send each.
 *
 * The kernel (or the device) only cuts a GSO send every gso_size bytes: each segment is one
 * whole RoCEv2 packet with its own BTH and ICRC, as nic/ built it. What changes is the IPv4
 * Identification: segment k leaves with k (icrc.h), so segment k is re-sealed for k here,
 * and sealed back for 0 if the run has to go datagram by datagram after all.
 *
 * THE SLOT. The batch's next free entry, tx_iov[tx_n], is lent whole to a builder
 * (emu_udp_tx_slot: FREE -> LENT) and sealed back with the datagram in it
 * (emu_udp_send_slot: LENT -> queued; the next entry is the new slot, FREE). Copies per
 * payload byte on this side for nic/'s packets, built in the slot with the payload read
 * from the client's memory straight into it: one, by the kernel into an skb (so two on the
 * way out, with the gather). emu_udp_send's datagrams, built elsewhere (the wire injector's
 * copies, tests), are copied into the slot first; that takes a lent slot back (FREE).
 */
#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "udp_int.h"

static void tx_fail(struct emu_udp *u, int e)
{
	u->st.tx_errors++;
	if (e == EMSGSIZE)
		u->st.tx_err_emsgsize++;
	else if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS)
		u->st.tx_err_again++;
}

static void tx_sent(struct emu_udp *u, size_t len)
{
	u->st.tx_pkts++;
	u->st.tx_bytes += len;
}

static bool same_peer(const struct emu_udp *u, unsigned a, unsigned b)
{
	return u->tx_namelen[a] == u->tx_namelen[b] &&
	       !memcmp(&u->tx_names[a], &u->tx_names[b], u->tx_namelen[a]);
}

/* How many datagrams from i on can leave as one GSO send: one peer, one length (a shorter
 * datagram may end the run: the kernel lets the last segment be short), within the limits. */
static unsigned gso_run(const struct emu_udp *u, unsigned i)
{
	size_t seg = u->tx_iov[i].iov_len, total = seg;
	unsigned n = 1;

	if (!u->gso)
		return 1;
	while (i + n < u->tx_n && n < GSO_MAX_SEGS) {
		size_t len = u->tx_iov[i + n].iov_len;

		if (len > seg || total + len > GSO_MAX_BYTES || !same_peer(u, i, i + n))
			break;
		total += len;
		n++;
		if (len < seg)
			break;
	}
	return n;
}

/* IPv4: segment k of a run is sealed for Identification k (nic/ sealed it for 0); calling
 * this again undoes it (the correction is an XOR). */
static void reseal_run(struct emu_udp *u, unsigned first, unsigned n)
{
	if (u->family != AF_INET)
		return;
	for (unsigned k = 1; k < n; k++)
		roce_icrc4_reseal_id(&u->icrc_ids, (uint16_t)k, u->tx_iov[first + k].iov_base,
				     u->tx_iov[first + k].iov_len);
}

/* Send g of the flush: its datagrams, with a UDP_SEGMENT control message when more than one. */
static void build_send(struct emu_udp *u, unsigned g, unsigned first, unsigned n)
{
	struct msghdr *h = &u->tx_gm[g].msg_hdr;
	struct cmsghdr *c;
	uint16_t seg = (uint16_t)u->tx_iov[first].iov_len;

	*h = (struct msghdr){ .msg_name = &u->tx_names[first],
		.msg_namelen = u->tx_namelen[first], .msg_iov = &u->tx_iov[first],
		.msg_iovlen = n };
	u->tx_gfirst[g] = first;
	u->tx_gcount[g] = n;
	if (n == 1)
		return;
	h->msg_control = u->tx_ctl[g].buf;
	h->msg_controllen = sizeof(u->tx_ctl[g].buf);
	c = CMSG_FIRSTHDR(h);
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	reseal_run(u, first, n);
}

static void build_sends(struct emu_udp *u)
{
	u->tx_ng = 0;
	for (unsigned i = 0, n; i < u->tx_n; i += n) {
		n = gso_run(u, i);
		build_send(u, u->tx_ng++, i, n);
	}
}

static void send_done(struct emu_udp *u, unsigned g)
{
	for (unsigned k = 0; k < u->tx_gcount[g]; k++)
		tx_sent(u, u->tx_iov[u->tx_gfirst[g] + k].iov_len);
	if (u->tx_gcount[g] > 1)
		u->st.tx_gso_sends++;
}

/* A run the kernel would not segment goes datagram by datagram, sealed for Identification
 * 0 again. EIO/EOPNOTSUPP: the egress cannot do it at all (no checksum offload, an old
 * kernel), so GSO is off from now on; anything else (EINVAL: a segment over the MTU) is this
 * run's, and the single sends count the datagrams' own errors. */
static void send_singly(struct emu_udp *u, unsigned g, int e)
{
	unsigned first = u->tx_gfirst[g], n = u->tx_gcount[g];

	if (e == EIO || e == EOPNOTSUPP) {
		u->gso = false;
		u->st.tx_gso_refused++;
		emu_log(EMU_LOG_WARN, "%s: UDP segmentation offload refused (%s): sending datagram "
			"by datagram from now on", u->name, strerror(e));
	}
	reseal_run(u, first, n);
	for (unsigned k = first; k < first + n; k++) {
		ssize_t rc;

		do
			rc = sendto(u->fd, u->tx_iov[k].iov_base, u->tx_iov[k].iov_len, MSG_DONTWAIT,
				    &u->tx_names[k].sa, u->tx_namelen[k]);
		while (rc < 0 && errno == EINTR);
		if (rc < 0)
			tx_fail(u, errno);
		else
			tx_sent(u, u->tx_iov[k].iov_len);
	}
}

static void drop_send(struct emu_udp *u, unsigned g, int e)
{
	for (unsigned k = 0; k < u->tx_gcount[g]; k++)
		tx_fail(u, e);
}

void emu_udp_flush(struct emu_udp *u)
{
	unsigned g = 0;

	u->tx_slot = TX_SLOT_FREE;	/* a lent slot moves to entry 0: lend it again */
	build_sends(u);
	while (g < u->tx_ng) {
		int rc = sendmmsg(u->fd, u->tx_gm + g, u->tx_ng - g, MSG_DONTWAIT);
		int e = rc < 0 ? errno : EIO;
		bool full = e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS;

		if (rc > 0) {
			while (rc-- > 0)
				send_done(u, g++);
			continue;
		}
		if (e == EINTR)
			continue;
		if (u->tx_gcount[g] > 1 && !full) {
			send_singly(u, g++, e);
			continue;
		}
		/* Send g failed (the kernel reports the first failure only): drop it and go on.
		 * A full buffer will not drain while we loop: drop them all. */
		do
			drop_send(u, g, e);
		while (++g < u->tx_ng && full);
	}
	u->tx_n = 0;
}

/* A datagram too long for a batch slot: on its own, after what is queued. */
static void tx_single(struct emu_udp *u, const union sa *to, socklen_t tolen,
		      const uint8_t *pkt, size_t len)
{
	ssize_t rc;

	emu_udp_flush(u);
	do
		rc = sendto(u->fd, pkt, len, MSG_DONTWAIT, &to->sa, tolen);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		tx_fail(u, errno);
	else
		tx_sent(u, len);
}

/* Queue entry tx_n, whose bytes are in place, to dst:dport (dropped and counted if dst is
 * of the other family). */
static void queue_slot(struct emu_udp *u, const struct nic_gid *dst, uint16_t dport, size_t len)
{
	unsigned n = u->tx_n;

	if (!emu_udp_sockaddr(u, dst, dport ? dport : EMU_UDP_PORT, &u->tx_names[n],
			      &u->tx_namelen[n])) {
		tx_fail(u, EAFNOSUPPORT);
		return;
	}
	u->tx_iov[n].iov_len = len;
	if (++u->tx_n == EMU_UDP_TX_BATCH)
		emu_udp_flush(u);
}

void emu_udp_send(struct emu_udp *u, const struct nic_gid *dst, uint16_t dport,
		  const uint8_t *pkt, size_t len)
{
	union sa to;
	socklen_t tolen;

	u->tx_slot = TX_SLOT_FREE;	/* the copy lands in it */
	if (len <= EMU_UDP_MAX_DATAGRAM) {
		memcpy(u->tx_iov[u->tx_n].iov_base, pkt, len);
		queue_slot(u, dst, dport, len);
	} else if (!emu_udp_sockaddr(u, dst, dport ? dport : EMU_UDP_PORT, &to, &tolen)) {
		tx_fail(u, EAFNOSUPPORT);
	} else {
		tx_single(u, &to, tolen, pkt, len);
	}
}

uint8_t *emu_udp_tx_slot(struct emu_udp *u)
{
	/* Every queueing flushes a full batch, so tx_n < the batch here: entry tx_n is free. */
	u->tx_slot = TX_SLOT_LENT;
	return u->tx_iov[u->tx_n].iov_base;
}

void emu_udp_send_slot(struct emu_udp *u, const struct nic_gid *dst, uint16_t dport,
		       size_t len)
{
	if (u->tx_slot != TX_SLOT_LENT || len > EMU_UDP_MAX_DATAGRAM) {
		emu_log(EMU_LOG_ERR, "%s: a datagram of %zu bytes sealed in a slot that was %s: "
			"dropped (a bug of the caller)", u->name, len,
			u->tx_slot != TX_SLOT_LENT ? "not lent" : "too small");
		tx_fail(u, EINVAL);
		return;
	}
	u->tx_slot = TX_SLOT_FREE;
	queue_slot(u, dst, dport, len);
}

int emu_udp_tx_init(struct emu_udp *u)
{
	u->tx_flat = malloc((size_t)EMU_UDP_TX_BATCH * EMU_UDP_MAX_DATAGRAM);
	if (!u->tx_flat)
		return -ENOMEM;
	for (unsigned i = 0; i < EMU_UDP_TX_BATCH; i++)
		u->tx_iov[i].iov_base = u->tx_flat + (size_t)i * EMU_UDP_MAX_DATAGRAM;
	roce_icrc_ids_init(&u->icrc_ids);
	return 0;
}

void emu_udp_tx_fini(struct emu_udp *u)
{
	free(u->tx_flat);
	u->tx_flat = NULL;
}

/* Whether the socket takes UDP_SEGMENT (setting size 0 is a no-op that fails where the
 * kernel lacks it); cfg.no_gso keeps it off. */
void emu_udp_tx_probe(struct emu_udp *u)
{
	int zero = 0;

	u->gso = !u->cfg.no_gso &&
		 setsockopt(u->fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero)) == 0;
}

bool emu_udp_gso(const struct emu_udp *u)
{
	return u->gso;
}
