/* SPDX-License-Identifier: MIT */
/*
 * onesided — MPI one-sided communication across the cluster: each rank exposes a window
 * on a freshly malloc'd buffer (freed with the window at the end of the iteration: the
 * registration-cache pattern), MPI_Put()s a 256 KiB pattern into the next rank's window
 * and MPI_Get()s the previous rank's own pattern back, fenced, every byte checked.
 * Exit 0 when every check of every rank passed.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN (256u * 1024)
#define ITERS 10

static uint8_t pattern(int owner, int iter, size_t i, int salt)
{
	return (uint8_t)(owner * 37 + iter * 11 + i * 7 + (i >> 10) + salt);
}

int main(int argc, char **argv)
{
	int rank, size, errors = 0, all = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int it = 0; it < ITERS; it++) {
		int next = (rank + 1) % size, prev = (rank + size - 1) % size;
		/* the window: the first half receives puts, the second holds our own pattern */
		uint8_t *win_buf = malloc(2 * LEN), *out = malloc(LEN), *got = malloc(LEN);
		size_t bad_put = 0, bad_get = 0;
		MPI_Win win;

		if (!win_buf || !out || !got)
			MPI_Abort(MPI_COMM_WORLD, 2);
		memset(win_buf, 0, LEN);
		for (size_t i = 0; i < LEN; i++) {
			win_buf[LEN + i] = pattern(rank, it, i, 1);
			out[i] = pattern(rank, it, i, 0);
		}
		MPI_Win_create(win_buf, 2 * LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
		MPI_Win_fence(0, win);
		MPI_Put(out, LEN, MPI_BYTE, next, 0, LEN, MPI_BYTE, win);
		MPI_Get(got, LEN, MPI_BYTE, prev, LEN, LEN, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		for (size_t i = 0; i < LEN; i++) {
			bad_put += win_buf[i] != pattern(prev, it, i, 0);
			bad_get += got[i] != pattern(prev, it, i, 1);
		}
		if ((bad_put || bad_get) && errors++ < 5)
			fprintf(stderr, "rank %d: iteration %d: %zu bytes put wrong, %zu got wrong\n",
				rank, it, bad_put, bad_get);
		MPI_Win_free(&win);
		free(win_buf);
		free(out);
		free(got);
	}
	MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("onesided: %d ranks, %d x 256 KiB put and get through fresh windows: %s\n",
		       size, ITERS, all ? "FAILED" : "all data checks passed");
	MPI_Finalize();
	return all ? 1 : 0;
}
