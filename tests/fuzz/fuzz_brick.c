/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the brick's wire codec (brick/wire.h): every input is decoded
 * as a request (what odpemu-brick does with each SEND) and as a reply (what the initiator's
 * library does). Besides "no crash, no out-of-bounds read" (ASan, UBSan): whatever decodes
 * must encode back to the same bytes, since decoding is strict and a field or reserved
 * byte the decoder let through unchecked would differ. The extents get room for one more
 * than a message can hold, so only BRICK_MSG_MAX stops an oversized LIST reply. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct brick_extent ext[BRICK_LIST_MAX + 1];
	static uint8_t again[BRICK_MSG_MAX];
	struct brick_reply p;
	struct brick_req q;

	if (brick_wire_decode_req(data, size, &q) == BRICK_OK &&
	    (brick_wire_encode_req(&q, again, sizeof(again)) != (int)size ||
	     memcmp(again, data, size)))
		abort();
	if (brick_wire_decode_reply(data, size, &p, ext, BRICK_LIST_MAX + 1) == 0 &&
	    (brick_wire_encode_reply(&p, again, sizeof(again)) != (int)size ||
	     memcmp(again, data, size)))
		abort();
	return 0;
}
