/* SPDX-License-Identifier: MIT */
/*
 * ring — each rank sends a 1 MiB message to the next and receives one from the previous,
 * `iters` times, the buffers freed and allocated again between iterations (the pattern that
 * stales a registration cache: the same addresses may come back with other pages), every
 * byte checked. Then MPI_Allreduce and MPI_Alltoall on such buffers, checked. Exit 0 when
 * every check of every rank passed. argv[1]: iters (default 20).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG (1u << 20)
#define ITERS_DEFAULT 20

static int iters = ITERS_DEFAULT;	/* argv[1] may say more */

static int rank, size, errors;

static uint8_t pattern(int from, int iter, size_t i)
{
	return (uint8_t)(from * 31 + iter * 7 + i * 13 + (i >> 12));
}

static void check(int ok, const char *what, int iter)
{
	if (!ok && errors++ < 5)
		fprintf(stderr, "rank %d: %s wrong at iteration %d\n", rank, what, iter);
}

static void ring(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;

	for (int it = 0; it < iters; it++) {
		uint8_t *out = malloc(MSG), *in = malloc(MSG);
		size_t bad = 0;

		if (!out || !in)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (size_t i = 0; i < MSG; i++)
			out[i] = pattern(rank, it, i);
		memset(in, 0, MSG);
		MPI_Sendrecv(out, MSG, MPI_BYTE, next, it, in, MSG, MPI_BYTE, prev, it,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (size_t i = 0; i < MSG; i++)
			bad += in[i] != pattern(prev, it, i);
		check(!bad, "ring message", it);
		free(out);
		free(in);
	}
}

static void allreduce(void)
{
	const int n = MSG / sizeof(int64_t);

	for (int it = 0; it < iters / 4; it++) {
		int64_t *v = malloc(MSG), *sum = malloc(MSG);
		size_t bad = 0;

		if (!v || !sum)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (int i = 0; i < n; i++)
			v[i] = (int64_t)rank * i + it;
		MPI_Allreduce(v, sum, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		for (int i = 0; i < n; i++)
			bad += sum[i] != (int64_t)size * (size - 1) / 2 * i + (int64_t)size * it;
		check(!bad, "allreduce", it);
		free(v);
		free(sum);
	}
}

static void alltoall(void)
{
	const size_t chunk = 64 * 1024;

	for (int it = 0; it < iters / 4; it++) {
		uint8_t *out = malloc(chunk * size), *in = malloc(chunk * size);
		size_t bad = 0;

		if (!out || !in)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (int r = 0; r < size; r++)
			for (size_t i = 0; i < chunk; i++)
				out[r * chunk + i] = pattern(rank * 64 + r, it, i);
		MPI_Alltoall(out, (int)chunk, MPI_BYTE, in, (int)chunk, MPI_BYTE, MPI_COMM_WORLD);
		for (int r = 0; r < size; r++)
			for (size_t i = 0; i < chunk; i++)
				bad += in[r * chunk + i] != pattern(r * 64 + rank, it, i);
		check(!bad, "alltoall", it);
		free(out);
		free(in);
	}
}

int main(int argc, char **argv)
{
	int all = 0;

	MPI_Init(&argc, &argv);
	if (argc > 1 && atoi(argv[1]) > 0)
		iters = atoi(argv[1]);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	ring();
	allreduce();
	alltoall();
	MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("ring: %d ranks, %d x 1 MiB ring, allreduce, alltoall: %s\n", size, iters,
		       all ? "FAILED" : "all data checks passed");
	MPI_Finalize();
	return all ? 1 : 0;
}
