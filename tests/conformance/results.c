/* SPDX-License-Identifier: MIT */
/* Reading unittest's verbose output (Python 3.11, as run_tests.py -v prints it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

const char *conf_outcome_name(enum conf_outcome o)
{
	static const char *const names[CONF_OUTCOMES] = { "pass", "skip", "fail", "error" };

	return o < CONF_OUTCOMES ? names[o] : "?";
}

/* A test's header line: "test_x (tests.m.C.test_x)" at the start of a line. Its length up
 * to and with the ')' or 0. */
static size_t header_len(const char *line, size_t len)
{
	const char *open = memchr(line, '(', len), *close;

	if (strncmp(line, "test", 4) || !open || strncmp(open, "(tests.", 7))
		return 0;
	close = memchr(open, ')', len - (size_t)(open - line));
	return close ? (size_t)(close - line) + 1 : 0;
}

/* A result at the end of a line, alone or after " ... ": its outcome (and the skip reason
 * copied into *reason), or -1. */
static int result_of(const char *line, size_t len, char **reason)
{
	static const struct { const char *word; enum conf_outcome o; } words[] = {
		{ "ok", CONF_PASS }, { "FAIL", CONF_FAIL }, { "ERROR", CONF_ERROR },
		{ "expected failure", CONF_PASS }, { "unexpected success", CONF_FAIL },
	};
	const char *p = line, *dots;

	while ((dots = memmem(p, len - (size_t)(p - line), " ... ", 5)))
		p = dots + 5;		/* the last " ... " (a description may hold one) */
	len -= (size_t)(p - line);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (len == strlen(words[i].word) && !memcmp(p, words[i].word, len))
			return (int)words[i].o;
	if (len > 10 && !memcmp(p, "skipped ", 8) && (p[8] == '\'' || p[8] == '"') &&
	    p[len - 1] == p[8]) {
		*reason = strndup(p + 9, len - 10);
		return CONF_SKIP;
	}
	return -1;
}

static void add(struct conf_results *r, const char *id, size_t id_len)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		struct conf_test *t = realloc(r->t, cap * sizeof(*t));

		if (!t)
			return;
		r->t = t;
		r->cap = cap;
	}
	r->t[r->n++] = (struct conf_test){ .id = strndup(id, id_len), .outcome = CONF_OUTCOMES };
}

void conf_parse(const char *out, struct conf_results *r)
{
	struct conf_test *cur = NULL;

	memset(r, 0, sizeof(*r));
	r->ran = -1;
	for (const char *line = out; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line), h = header_len(line, len);
		char *reason = NULL;
		int o;

		if (h) {
			add(r, line, h);
			cur = r->n ? &r->t[r->n - 1] : NULL;
		}
		if (cur && cur->outcome == CONF_OUTCOMES && (o = result_of(line, len, &reason)) >= 0) {
			cur->outcome = (enum conf_outcome)o;
			cur->reason = reason;
		}
		if (!strncmp(line, "Ran ", 4))
			r->ran = strtol(line + 4, NULL, 10);
		line = nl ? nl + 1 : line + len;
	}
}

void conf_free(struct conf_results *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->t[i].id);
		free(r->t[i].reason);
	}
	free(r->t);
	memset(r, 0, sizeof(*r));
}
