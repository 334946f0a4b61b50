/* SPDX-License-Identifier: MIT */
/* Event accounting as libibverbs does it: every CQ or async event handed to the
 * application must be acknowledged before its object may be destroyed, so a destroy never
 * frees an object another thread is still looking at through an event. */
#include "lib_int.h"

void lib_evc_init(struct lib_evc *e)
{
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	e->comp_got = e->comp_acked = e->async_got = e->async_acked = 0;
}

void lib_evc_fini(struct lib_evc *e)
{
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
}

void lib_evc_got(struct lib_evc *e, bool comp)
{
	pthread_mutex_lock(&e->lock);
	if (comp)
		e->comp_got++;
	else
		e->async_got++;
	pthread_mutex_unlock(&e->lock);
}

void lib_evc_ack(struct lib_evc *e, bool comp, uint32_t n)
{
	pthread_mutex_lock(&e->lock);
	if (comp)
		e->comp_acked += n;
	else
		e->async_acked += n;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void lib_evc_wait(struct lib_evc *e)
{
	pthread_mutex_lock(&e->lock);
	while (e->comp_acked < e->comp_got || e->async_acked < e->async_got)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
}
