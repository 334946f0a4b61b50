/* SPDX-License-Identifier: MIT */
/*
 * json — the tools' --json output, written as a stream of calls (open an object, put a
 * number, close it) and built with json-c, which owns escaping, number formatting and
 * printing. Keys are passed as NULL inside arrays. The document is printed when its
 * outermost object or array closes.
 */
#ifndef ODPEMU_TOOLS_JSON_H
#define ODPEMU_TOOLS_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_DEPTH 16

struct json_object;

struct jw {
	FILE *f;
	int depth;
	struct json_object *level[JW_DEPTH];	/* the open objects and arrays, outermost first */
};

void jw_init(struct jw *w, FILE *f);
void jw_obj(struct jw *w, const char *key);
void jw_arr(struct jw *w, const char *key);
/* Close the innermost object or array; closing the outermost prints the document and a
 * newline. */
void jw_end(struct jw *w);
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
/* Non-finite values are written as null (JSON has no NaN). */
void jw_dbl(struct jw *w, const char *key, double v);
void jw_str(struct jw *w, const char *key, const char *s);
void jw_bool(struct jw *w, const char *key, bool v);

#endif
