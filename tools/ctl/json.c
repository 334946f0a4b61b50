/* SPDX-License-Identifier: MIT */
/* json — the streaming calls of json.h on top of json-c's object tree. */
#include "json.h"

#include <json-c/json.h>
#include <math.h>

void jw_init(struct jw *w, FILE *f)
{
	w->f = f;
	w->depth = 0;
}

/* Attach v to the innermost open level (by key in an object, appended in an array); the
 * first value opened becomes the document. */
static void put(struct jw *w, const char *key, struct json_object *v)
{
	struct json_object *parent = w->depth ? w->level[w->depth - 1] : NULL;

	if (!parent)
		json_object_put(v);	/* a scalar outside any document: nothing to attach to */
	else if (json_object_is_type(parent, json_type_array))
		json_object_array_add(parent, v);
	else
		json_object_object_add(parent, key ? key : "", v);
}

static void open_level(struct jw *w, const char *key, struct json_object *v)
{
	if (w->depth == JW_DEPTH) {
		json_object_put(v);
		return;
	}
	if (w->depth)
		put(w, key, json_object_get(v));	/* the parent holds one reference */
	w->level[w->depth++] = v;
}

void jw_obj(struct jw *w, const char *key)
{
	open_level(w, key, json_object_new_object());
}

void jw_arr(struct jw *w, const char *key)
{
	open_level(w, key, json_object_new_array());
}

void jw_end(struct jw *w)
{
	struct json_object *v;

	if (!w->depth)
		return;
	v = w->level[--w->depth];
	if (!w->depth)
		fprintf(w->f, "%s\n", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PRETTY |
			JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(v);
}

void jw_u64(struct jw *w, const char *key, uint64_t v)
{
	put(w, key, json_object_new_uint64(v));
}

void jw_i64(struct jw *w, const char *key, int64_t v)
{
	put(w, key, json_object_new_int64(v));
}

void jw_dbl(struct jw *w, const char *key, double v)
{
	put(w, key, isfinite(v) ? json_object_new_double(v) : json_object_new_null());
}

void jw_str(struct jw *w, const char *key, const char *s)
{
	put(w, key, json_object_new_string(s ? s : ""));
}

void jw_bool(struct jw *w, const char *key, bool v)
{
	put(w, key, json_object_new_boolean(v));
}
