/* SPDX-License-Identifier: MIT */
/* odpemu-ctl devinfo — a device's attributes, as ibv_devinfo prints them: identity, port
 * state and MTU, GIDs; -v adds the limits, the ODP capabilities per transport and the
 * daemon's host feature report (a one-line summary without -v). */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "tooldev.h"

static void print_bits(const char *label, uint64_t bits, const char *const *names, int n)
{
	printf("\t%-26s", label);
	if (!bits)
		printf(" (none)");
	for (int i = 0; i < n; i++)
		if (bits & (1ull << i))
			printf(" %s", names[i]);
	printf("\n");
}

static void print_odp(const struct odpemu_odp_caps *c)
{
	static const char *const general[] = { "ODP_SUPPORT", "ODP_SUPPORT_IMPLICIT" };
	static const char *const transport[] = { "SEND", "RECV", "WRITE", "READ", "ATOMIC",
		"SRQ_RECV", "FLUSH", "ATOMIC_WRITE" };

	print_bits("general_odp_caps:", c->general_caps, general, 2);
	print_bits("rc_odp_caps:", c->per_transport_caps.rc_odp_caps, transport, 8);
	print_bits("uc_odp_caps:", c->per_transport_caps.uc_odp_caps, transport, 8);
	print_bits("ud_odp_caps:", c->per_transport_caps.ud_odp_caps, transport, 8);
}

static void print_limits(const struct odpemu_device_attr *a)
{
	printf("\t%-26s 0x%" PRIx64 "\n", "max_mr_size:", a->max_mr_size);
	printf("\t%-26s 0x%" PRIx64 "\n", "page_size_cap:", a->page_size_cap);
	printf("\t%-26s %d\n", "max_qp:", a->max_qp);
	printf("\t%-26s %d\n", "max_qp_wr:", a->max_qp_wr);
	printf("\t%-26s %d\n", "max_sge:", a->max_sge);
	printf("\t%-26s %d\n", "max_cq:", a->max_cq);
	printf("\t%-26s %d\n", "max_cqe:", a->max_cqe);
	printf("\t%-26s %d\n", "max_mr:", a->max_mr);
	printf("\t%-26s %d\n", "max_pd:", a->max_pd);
	printf("\t%-26s %d\n", "max_qp_rd_atom:", a->max_qp_rd_atom);
	printf("\t%-26s %d\n", "max_qp_init_rd_atom:", a->max_qp_init_rd_atom);
	printf("\t%-26s %d\n", "max_srq:", a->max_srq);
	printf("\t%-26s %d\n", "max_srq_wr:", a->max_srq_wr);
	printf("\t%-26s %d\n", "max_srq_sge:", a->max_srq_sge);
	printf("\t%-26s %u\n", "max_inline_data:", a->max_inline_data);
	printf("\t%-26s %u\n", "max_pkeys:", a->max_pkeys);
}

static void print_gids(struct odpemu_context *ctx, int len)
{
	for (int i = 0; i < len; i++) {
		union odpemu_gid gid;
		static const union odpemu_gid zero;
		char s[64];

		if (odpemu_query_gid(ctx, 1, i, &gid) || !memcmp(&gid, &zero, sizeof(gid)))
			continue;
		tool_gid_str(&gid, s, sizeof(s));
		printf("\t\t\tGID[%3d]:\t\t%s\n", i, s);
	}
}

static void print_port(struct odpemu_context *ctx, const struct odpemu_port_attr *p)
{
	printf("\t\tport:\t1\n");
	printf("\t\t\tstate:\t\t\tPORT_%s (%d)\n", odpemu_port_state_str(p->state), p->state);
	printf("\t\t\tmax_mtu:\t\t%s (%d)\n", odpemu_mtu_str(p->max_mtu), p->max_mtu);
	printf("\t\t\tactive_mtu:\t\t%s (%d)\n", odpemu_mtu_str(p->active_mtu), p->active_mtu);
	printf("\t\t\tlink_layer:\t\tEthernet\n");
	printf("\t\t\tnetdev:\t\t\t%s (mtu %u)\n", p->netdev, p->netdev_mtu);
	printf("\t\t\tfault_policy:\t\t%s\n", odpemu_fault_policy_str(p->fault_policy));
	print_gids(ctx, p->gid_tbl_len);
}

/* The daemon's host report (odpemu_query_host): -v every row, else one line. */
static void print_host(struct odpemu_context *ctx, bool verbose)
{
	static const char *const verdicts[] = { "available", "fallback", "missing" };
	struct odpemu_host_feature h[64];
	int n = odpemu_query_host(ctx, h, 64), absent = 0;

	if (n < 0) {
		printf("\t%-26s cannot read it: %s\n", "host:", strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++)
		absent += h[i].verdict != ODPEMU_HOST_AVAILABLE;
	if (!verbose) {
		printf("\t%-26s %d of %d features not available%s\n", "host:", absent, n,
		       absent ? " (-v: which; odpemud --check: the remedies)" : "");
		return;
	}
	printf("\thost (the daemon's, probed at its start; odpemud --check: the remedies):\n");
	for (int i = 0; i < n; i++)
		printf("\t\t%-27s %-9s %s\n", h[i].name,
		       h[i].verdict <= ODPEMU_HOST_MISSING ? verdicts[h[i].verdict] : "?",
		       h[i].detail);
}

static int one(struct odpemu_context *ctx, bool verbose)
{
	struct odpemu_device_attr a;
	struct odpemu_port_attr p;
	const char *name = odpemu_get_device_name(ctx->device);
	int rc = odpemu_query_device(ctx, &a);
	uint64_t guid;

	if (rc || (rc = odpemu_query_port(ctx, 1, &p))) {
		fprintf(stderr, "%s: cannot query %s: %s\n", CTL_PROG, name, strerror(rc));
		return 1;
	}
	printf("hca_id:\t%s\n", name);
	printf("\ttransport:\t\t\tRoCEv2 over UDP (odpemu)\n");
	printf("\tfw_ver:\t\t\t\t%s\n", a.fw_ver);
	guid = be64toh(a.node_guid);	/* the GID's interface id, in wire order */
	printf("\tnode_guid:\t\t\t%04x:%04x:%04x:%04x\n", (unsigned)(guid >> 48),
	       (unsigned)(guid >> 32 & 0xffff), (unsigned)(guid >> 16 & 0xffff),
	       (unsigned)(guid & 0xffff));
	printf("\tvendor_id:\t\t\t0x%06x\n", a.vendor_id);
	printf("\tvendor_part_id:\t\t\t%u\n", a.vendor_part_id);
	printf("\thw_ver:\t\t\t\t0x%x\n", a.hw_ver);
	printf("\tphys_port_cnt:\t\t\t%u\n", a.phys_port_cnt);
	if (verbose) {
		print_limits(&a);
		print_odp(&a.odp_caps);
		/* what a FLUSH means here (docs/emu.md "Persistent FLUSH"): the daemon's
		 * answer, in words, since no attribute carries it */
		printf("\t%-26s %s\n", "flush_global:", "visible when acknowledged (DMA is a "
		       "synchronous copy)");
		printf("\t%-26s %s\n", "flush_persistent:", "file-backed shared memory: "
		       "fdatasync'ed before the acknowledgement; anonymous or private memory: "
		       "visible only (nothing durable behind it)");
	} else {
		printf("\t%-26s %s\n", "odp:", !(a.odp_caps.general_caps & ODPEMU_ODP_SUPPORT) ?
		       "not supported" : a.odp_caps.general_caps & ODPEMU_ODP_SUPPORT_IMPLICIT ?
		       "explicit and implicit (details: -v)" : "explicit (details: -v)");
	}
	print_host(ctx, verbose);
	print_port(ctx, &p);
	return 0;
}

static int all_devices(bool verbose)
{
	struct odpemu_device **list = tool_devices(CTL_PROG, NULL);
	int rc = 0;

	if (!list)
		return 1;
	for (int i = 0; list[i]; i++) {
		struct odpemu_context *ctx = odpemu_open_device(list[i]);

		if (!ctx) {
			char why[512];

			fprintf(stderr, "%s: cannot open %s: %s\n", CTL_PROG,
				odpemu_get_device_name(list[i]),
				tool_open_why(list[i], errno, why, sizeof(why)));
			rc = 1;
			continue;
		}
		if (i)
			printf("\n");
		rc |= one(ctx, verbose);
		odpemu_close_device(ctx);
	}
	odpemu_free_device_list(list);
	return rc;
}

int ctl_devinfo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	const char *dev = NULL;
	bool verbose = false;
	struct odpemu_context *ctx;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'v': verbose = true; break;
		case 'h':
			printf("usage: %s devinfo [-d DEV] [-v]\n  every device (or DEV): identity, "
			       "port, GIDs; -v: limits, ODP caps per transport and the daemon's "
			       "host features\n", CTL_PROG);
			return 0;
		default: return ctl_usage_err("devinfo", "bad option");
		}
	}
	if (optind < argc)
		return ctl_usage_err("devinfo", "unexpected argument '%s'", argv[optind]);
	if (!dev)
		return all_devices(verbose);
	if (!(ctx = tool_open(CTL_PROG, dev)))
		return 1;
	rc = one(ctx, verbose);
	odpemu_close_device(ctx);
	return rc;
}
