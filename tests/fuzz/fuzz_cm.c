/* SPDX-License-Identifier: MIT */
/* libFuzzer target for cm_mad_parse() (what odpemud's connection manager does with every
 * MAD a peer sends to QP1). Besides "no crash, no out-of-bounds read" (ASan): every MAD
 * parse accepts must build again, and what it builds must parse and build to the same
 * bytes (the codec's tables agree in both directions); a REQ's or SIDR_REQ's private data
 * goes through the rdma_cm IP header decoder as the CM will take it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cm_mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void ip_header(const struct cm_msg *m)
{
	struct sockaddr_storage src, dst;

	if (m->attr == CM_ATTR_REQ)
		(void)cm_ip_hdr_decode(m->u.req.private_data, CM_REQ_PRIVATE_LEN, &src, &dst);
	else if (m->attr == CM_ATTR_SIDR_REQ)
		(void)cm_ip_hdr_decode(m->u.sidr_req.private_data, CM_SIDR_REQ_PRIVATE_LEN, &src,
				       &dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t once[CM_MAD_LEN], twice[CM_MAD_LEN];
	struct cm_msg m, again;

	if (cm_mad_parse(data, size, &m))
		return 0;
	ip_header(&m);
	if (cm_mad_build(&m, once) || cm_mad_parse(once, sizeof(once), &again) ||
	    cm_mad_build(&again, twice) || memcmp(once, twice, sizeof(once)))
		abort();
	return 0;
}
