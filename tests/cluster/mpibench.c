/* SPDX-License-Identifier: MIT */
/*
 * mpibench — the loops of a small MPI benchmark (Debian has no OSU package): between
 * rank 0 and the first rank on another host (--map-by node puts rank 1 there), ping-pong
 * latency of 8 B and streaming bandwidth of 1 MiB messages; over all ranks, the time of
 * an MPI_Allreduce of 1 MiB and of an MPI_Alltoall of 64 KiB per rank pair. Each figure
 * is the mean over its iterations after warm-up, printed by rank 0 as `name: value unit`.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP 10

static int rank, size;

static double pingpong_us(void *buf, int len, int iters)
{
	double t0 = 0;

	for (int i = 0; i < iters + WARMUP; i++) {
		if (i == WARMUP)
			t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(buf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(buf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) * 1e6 / iters / 2;
}

/* MB/s of `iters` messages of len streamed from 0 to 1 in windows of 16. */
static double stream_mbs(void *buf, int len, int iters)
{
	MPI_Request req[16];
	double t0 = 0;
	char ack;

	for (int i = 0; i < iters + 1; i++) {
		if (i == 1)
			t0 = MPI_Wtime();
		for (int w = 0; w < 16; w++) {
			if (rank == 0)
				MPI_Isend(buf, len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[w]);
			else if (rank == 1)
				MPI_Irecv(buf, len, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[w]);
		}
		if (rank <= 1)
			MPI_Waitall(16, req, MPI_STATUSES_IGNORE);
		if (rank == 0)
			MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		else if (rank == 1)
			MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
	}
	return (double)len * 16 * iters / (MPI_Wtime() - t0) / 1e6;
}

static double allreduce_us(int bytes, int iters)
{
	double *in = calloc(1, bytes), *out = calloc(1, bytes), t0 = 0;

	for (int i = 0; i < iters + WARMUP; i++) {
		if (i == WARMUP) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		MPI_Allreduce(in, out, bytes / (int)sizeof(double), MPI_DOUBLE, MPI_SUM,
			      MPI_COMM_WORLD);
	}
	t0 = (MPI_Wtime() - t0) * 1e6 / iters;
	free(in);
	free(out);
	return t0;
}

static double alltoall_us(int per_pair, int iters)
{
	char *in = calloc((size_t)size, per_pair), *out = calloc((size_t)size, per_pair);
	double t0 = 0;

	for (int i = 0; i < iters + WARMUP; i++) {
		if (i == WARMUP) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		MPI_Alltoall(out, per_pair, MPI_BYTE, in, per_pair, MPI_BYTE, MPI_COMM_WORLD);
	}
	t0 = (MPI_Wtime() - t0) * 1e6 / iters;
	free(in);
	free(out);
	return t0;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 100;
	void *buf;
	double lat, bw, ar, a2a;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || iters < 1 || !(buf = calloc(1, 1 << 20)))
		MPI_Abort(MPI_COMM_WORLD, 2);
	lat = pingpong_us(buf, 8, iters * 10);
	bw = stream_mbs(buf, 1 << 20, iters / 5 + 1);
	ar = allreduce_us(1 << 20, iters);
	a2a = alltoall_us(64 * 1024, iters);
	if (rank == 0)
		printf("latency_8B_us: %.2f\nbandwidth_1MiB_MBps: %.1f\n"
		       "allreduce_1MiB_us: %.1f\nalltoall_64KiB_us: %.1f\n", lat, bw, ar, a2a);
	free(buf);
	MPI_Finalize();
	return 0;
}
