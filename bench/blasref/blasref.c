/* blasref: times one BLAS/LAPACK library's dgemm or dgetrf (whichever library it is linked
 * with: bench/linalg.sh links it with Intel MKL's libmkl_rt), for the linear-algebra table.
 *
 *   blasref dgemm|dgetrf N REPS   ->   one JSON line, the median of REPS timed calls after one
 *                                      untimed call; threads from MKL_NUM_THREADS and the like.
 *
 * Column-major N x N matrices of uniform values in [-0.5, 0.5), the Fortran interface (every
 * BLAS/LAPACK has it), dgetrf on a fresh copy each call. The matrices ask for transparent huge
 * pages, as the DPS apps' operands do (dense/src/huge.rs): the library is compared on the
 * memory the apps give their own calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
            const int*, const double*, const int*, const double*, double*, const int*);
void dgetrf_(const int*, const int*, double*, const int*, int*, int*);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* n doubles on transparent huge pages where the kernel offers them, or NULL. */
static double* huge_matrix(size_t n) {
  void* p = NULL;
  if (posix_memalign(&p, 2u << 20, n * sizeof(double))) return NULL;
  madvise(p, n * sizeof(double), MADV_HUGEPAGE); /* refused where there are none: no harm */
  return p;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[1], "dgemm") && strcmp(argv[1], "dgetrf")) || atoi(argv[2]) < 1 || atoi(argv[3]) < 1) {
    fprintf(stderr, "usage: blasref dgemm|dgetrf N REPS\n");
    return 2;
  }
  const int gemm = !strcmp(argv[1], "dgemm"), n = atoi(argv[2]), reps = atoi(argv[3]);
  const size_t nn = (size_t)n * (size_t)n;
  double *a = huge_matrix(nn), *b = huge_matrix(nn), *c = huge_matrix(nn);
  double* t = malloc((size_t)(reps + 1) * sizeof(double));
  int* ipiv = malloc((size_t)n * sizeof(int));
  if (!a || !b || !c || !t || !ipiv) {
    fprintf(stderr, "blasref: cannot allocate three %d x %d matrices\n", n, n);
    return 1;
  }
  unsigned s = 12345;
  for (size_t i = 0; i < nn; i++) {
    s = s * 1103515245u + 12345u;
    a[i] = (double)(s >> 8) / 16777216.0 - 0.5;
  }
  for (size_t i = 0; i < nn; i++) b[i] = a[(i * 7) % nn];
  const double one = 1.0, zero = 0.0;
  int info = 0;
  for (int r = 0; r <= reps; r++) {
    double start;
    if (gemm) {
      start = now();
      dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
    } else {
      memcpy(c, a, nn * sizeof(double));
      start = now();
      dgetrf_(&n, &n, c, &n, ipiv, &info);
    }
    t[r] = now() - start;
  }
  if (info != 0) {
    fprintf(stderr, "blasref: dgetrf returned info %d\n", info);
    return 1;
  }
  qsort(t + 1, (size_t)reps, sizeof(double), by_value);
  const double median = t[1 + reps / 2], flops = (gemm ? 2.0 : 2.0 / 3.0) * (double)n * (double)n * (double)n;
  printf("{\"op\":\"%s\",\"n\":%d,\"reps\":%d,\"seconds\":%.6g,\"gflops\":%.3f}\n", argv[1], n, reps, median, flops / median / 1e9);
  return 0;
}
