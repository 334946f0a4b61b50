/* SPDX-License-Identifier: MIT */
/*
 * UD multicast (IBA 10.5.2.4, 9.6.1.1; Linux rxe_mcast.c and rxe_rcv_mcast_pkt): the
 * device's groups, each a multicast GID and the QPs attached to it, and the delivery of a
 * packet sent to a group: one copy per attached QP, each a UD receive of its own.
 * A few hundred groups at most (attr.max_mcast_grp): a packet finds its group by a scan
 * of an array, which costs less than the hash it would need.
 */
#include "nic_int.h"

struct nic_mcg {
	struct nic_gid mgid;
	unsigned nqp;
	struct nic_qp *qp[];		/* attr.max_mcast_qp_attach */
};

bool nic_gid_is_mcast(const struct nic_gid *g)
{
	if (nic_gid_is_v4(g))
		return (g->raw[12] & 0xF0) == 0xE0;	/* 224.0.0.0/4 */
	return g->raw[0] == 0xFF;
}

static struct nic_mcg *find(const struct nic *nic, const struct nic_gid *mgid, uint32_t *at)
{
	for (uint32_t i = 0; i < nic->nmcg; i++)
		if (!memcmp(&nic->mcg[i]->mgid, mgid, sizeof(*mgid))) {
			if (at)
				*at = i;
			return nic->mcg[i];
		}
	return NULL;
}

static int find_qp(const struct nic_mcg *g, const struct nic_qp *qp)
{
	for (unsigned i = 0; i < g->nqp; i++)
		if (g->qp[i] == qp)
			return (int)i;
	return -1;
}

static void member(struct nic *nic, const struct nic_gid *mgid, bool joined)
{
	if (nic->cfg.ports.mcast_member)
		nic->cfg.ports.mcast_member(nic->cfg.ports.ctx, mgid, joined);
}

/* A new, empty group (the array holds max_mcast_grp pointers from the first group on). */
static struct nic_mcg *group_new(struct nic *nic, const struct nic_gid *mgid)
{
	struct nic_mcg *g;

	if (nic->nmcg >= nic->attr.max_mcast_grp)
		return NULL;	/* rxe_get_mcg: -ENOMEM past max_mcast_grp */
	if (!nic->mcg && !(nic->mcg = calloc(nic->attr.max_mcast_grp, sizeof(*nic->mcg))))
		return NULL;
	g = calloc(1, sizeof(*g) + nic->attr.max_mcast_qp_attach * sizeof(g->qp[0]));
	if (!g)
		return NULL;
	g->mgid = *mgid;
	nic->mcg[nic->nmcg++] = g;
	return g;
}

int nic_mcast_attach(struct nic_qp *qp, const struct nic_gid *mgid)
{
	struct nic *nic;
	struct nic_mcg *g;
	bool fresh;

	if (!qp || !mgid)
		return -EINVAL;
	nic = qp->nic;
	if (!nic->attr.max_mcast_grp)
		return -EOPNOTSUPP;
	if (qp->type != ODPEMU_QPT_UD || !nic_gid_is_mcast(mgid))
		return -EINVAL;		/* ib_attach_mcast */
	g = find(nic, mgid, NULL);
	if (g && find_qp(g, qp) >= 0)
		return 0;
	if ((g && g->nqp >= nic->attr.max_mcast_qp_attach) ||
	    nic->mcast_attached >= nic->attr.max_total_mcast_qp_attach)
		return -ENOMEM;		/* rxe_attach_mcg */
	fresh = !g;
	if (!g && !(g = group_new(nic, mgid)))
		return -ENOMEM;
	g->qp[g->nqp++] = qp;
	qp->mcast_groups++;
	nic->mcast_attached++;
	if (fresh)
		member(nic, mgid, true);
	return 0;
}

static void group_del(struct nic *nic, uint32_t at)
{
	struct nic_mcg *g = nic->mcg[at];

	nic->mcg[at] = nic->mcg[--nic->nmcg];
	member(nic, &g->mgid, false);
	free(g);
}

/* Take qp out of group at (it is there at index i). */
static void unlink_qp(struct nic *nic, uint32_t at, int i)
{
	struct nic_mcg *g = nic->mcg[at];

	g->qp[i] = g->qp[--g->nqp];	/* the last takes its place: the array stays dense */
	nic->mcast_attached--;
	if (!g->nqp)
		group_del(nic, at);
}

int nic_mcast_detach(struct nic_qp *qp, const struct nic_gid *mgid)
{
	struct nic_mcg *g;
	uint32_t at;
	int i;

	if (!qp || !mgid)
		return -EINVAL;
	if (!(g = find(qp->nic, mgid, &at)) || (i = find_qp(g, qp)) < 0)
		return -EINVAL;		/* uverbs: not attached */
	qp->mcast_groups--;
	unlink_qp(qp->nic, at, i);
	return 0;
}

void nic_mcast_qp_gone(struct nic_qp *qp)
{
	struct nic *nic = qp->nic;

	/* From the end: unlink_qp may move the last group into a freed place. */
	for (uint32_t at = nic->nmcg; at-- > 0 && qp->mcast_groups;) {
		int i = find_qp(nic->mcg[at], qp);

		if (i >= 0) {
			qp->mcast_groups--;
			unlink_qp(nic, at, i);
		}
	}
}

void nic_mcast_free(struct nic *nic)
{
	for (uint32_t i = 0; i < nic->nmcg; i++)
		free(nic->mcg[i]);
	free(nic->mcg);
	nic->mcg = NULL;
	nic->nmcg = 0;
}

unsigned nic_qp_mcast_groups(const struct nic_qp *qp)
{
	return qp ? qp->mcast_groups : 0;
}

unsigned nic_mcast_members(const struct nic *nic, const struct nic_gid *mgid)
{
	const struct nic_mcg *g = find(nic, mgid, NULL);

	return g ? g->nqp : 0;
}

void nic_rx_mcast(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		  uint16_t sport, const struct nic_gid *mgid, uint64_t now)
{
	int32_t dqpn = nic_rx_begin(nic, pkt, len, src, sport, mgid, now);
	struct nic_mcg *g;

	if (dqpn < 0)
		return;
	if ((uint32_t)dqpn != ROCE_MCAST_QPN)
		return nic_drop(nic, NULL, NIC_DROP_NO_QP);	/* IBA 9.6.1.1 */
	nic->ctr.mcast_pkts_received++;
	if (!(g = find(nic, mgid, NULL)))
		return nic_drop(nic, NULL, NIC_DROP_MCAST_NO_GROUP);
	/* Ports never call back into the nic (nic.h THREADING): the group holds still. */
	for (unsigned i = 0; i < g->nqp; i++) {
		nic->ctr.mcast_copies++;
		nic_rx_qp(nic, g->qp[i], pkt, len, src, mgid);
	}
	nic_run(nic);
}
