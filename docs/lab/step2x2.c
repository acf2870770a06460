// step2x2.c: what the machine allows for one data-parallel training step laid out as 2 hosts x 2 ranks,
// in plain C with single-threaded OpenBLAS, to set beside Cohort's "hier" engine and PyTorch DDP. Lab
// tool, not shipped. Model and step as Cohort's `bench train`: MLP 784-1024-1024-10 with biases
// (1,863,690 floats), batch 64 per rank (16 fixed random batches per rank, in turn, as Cohort's benchmark), softmax cross-entropy,
// SGD lr 0.01. One run per host: it forks its 2 ranks (or 1: --ranks-per-host 1, world 2, the leaders'
// exchange alone, what a TCP allreduce between two ranks costs), whose gradient buffers lie in a shared mapping;
// the ranks of local index 0 (leaders) talk over TCP. Modes (per step, after the backward pass):
//   full         hierarchical allreduce, mean over 4: within the host each rank averages its half of
//                both buffers into both; the leaders exchange whole buffers and fold; the other rank
//                copies the leader's buffer
//   full-reduce  the same, but the first stage writes the halves into the leader's buffer only
//   sync         no averaging: a barrier, one float between the leaders, a barrier (compute + sync)
//   none         no communication (the TCP connection only aligns start and end)
// Build: gcc -std=c11 -O3 -march=native -Wall -Wextra -o step2x2 step2x2.c -l:libopenblas.so.0 -lm
// Run:   OPENBLAS_NUM_THREADS=1 ./step2x2 HOST(0|1) PEER_ADDR PORT STEPS MODE [--json FILE]
//          [--sockbuf BYTES (0: kernel autotuning)] [--timeout SECONDS (60)] [--ranks-per-host 1|2 (2)]
//        or beside Cohort and DDP in two network namespaces: RUNS="c-full c-sync ..." scripts/bench-two-hosts.sh
// Host 0 writes Cohort's training-benchmark JSON: seconds from a start aligned over all 4 ranks after 20
// warm-up steps until host 1's end report arrives; cpu_ms_per_step over all 4 ranks; loss_first and
// loss_last are rank 0's loss at the very first (warm-up) step and at the last step.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// No cblas.h on this machine: OpenBLAS's own prototypes (its enums are ints).
enum { RowMajor = 101, NoTrans = 111, Trans = 112 };
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
void openblas_set_num_threads(int n);
char *openblas_get_config(void);

enum { B = 64, IN = 784, H = 1024, OUT = 10, WARM = 20, NB = 16 };
enum { OW1 = 0, OB1 = OW1 + H * IN, OW2 = OB1 + H, OB2 = OW2 + H * H, OW3 = OB2 + H, OB3 = OW3 + OUT * H,
       NP = OB3 + OUT };  // parameter (and gradient) layout; NP = 1,863,690
enum Mode { FULL, FULL_REDUCE, SYNC, NONE };
static const char *mode_names[] = {"full", "full-reduce", "sync", "none"};

typedef struct {                         // shared by the host process and its 2 ranks
  _Atomic uint32_t gen, arrived, failed; // barrier generation and arrivals; a rank failed
  double cpu[2], peer_cpu, seconds;      // CPU seconds per rank, host 1's sum; wall time (host 0)
  float loss_first, loss_last;
  int params_equal;                      // full modes: equal on both ranks of both hosts
  float g[2][NP];                        // the ranks' gradient buffers
} Shared;

static Shared *S;
static int host, local = -1, nlocal = 2;  // local: -1 in the host process
static enum Mode mode;
static double timeout_s = 60, barrier_s = 60;  // barrier_s: longer while the leaders connect

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "step2x2 host %d%s: ", host, local < 0 ? "" : local ? " rank 1" : " leader");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (S) { atomic_store(&S->failed, 1); syscall(SYS_futex, &S->gen, FUTEX_WAKE, 1, NULL, NULL, 0); }
  exit(1);
}
static double clock_s(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

// Barrier of the 2 local ranks: spin ~50 us with sched_yield, then sleep on a futex in 10 ms slices.
static void barrier(void) {
  if (nlocal == 1) return;
  uint32_t g = atomic_load(&S->gen);
  if (atomic_fetch_add(&S->arrived, 1) == 1) {
    atomic_store(&S->arrived, 0);
    atomic_fetch_add(&S->gen, 1);
    syscall(SYS_futex, &S->gen, FUTEX_WAKE, 1, NULL, NULL, 0);
    return;
  }
  double t0 = now(), t;
  while (atomic_load(&S->gen) == g) {
    if (atomic_load(&S->failed)) die("the other local rank failed");
    if ((t = now() - t0) > barrier_s) die("barrier: the other local rank did not arrive within %.0f s", barrier_s);
    if (t < 50e-6) { sched_yield(); continue; }
    struct timespec slice = {0, 10000000};
    syscall(SYS_futex, &S->gen, FUTEX_WAIT, g, &slice, NULL, 0);
  }
}

// Send n bytes and receive n bytes at once (as exchange.c), bounded by the timeout.
static void xchg(int fd, const void *out, void *in, size_t n) {
  size_t so = 0, ri = 0;
  double t0 = now();
  while (so < n || ri < n) {
    struct pollfd p = {fd, (so < n ? POLLOUT : 0) | (ri < n ? POLLIN : 0), 0};
    int r = poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) die("poll: %s", strerror(errno));
    if (r <= 0) {
      if (atomic_load(&S->failed)) die("the other local rank failed");
      if (now() - t0 > timeout_s) die("exchange with the other host: no completion within %.0f s", timeout_s);
      continue;
    }
    if (so < n) {
      ssize_t k = send(fd, (const char *)out + so, n - so, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k > 0) so += k;
      else if (errno != EAGAIN && errno != EWOULDBLOCK) die("send to the other host: %s", strerror(errno));
    }
    if (ri < n) {
      ssize_t k = recv(fd, (char *)in + ri, n - ri, MSG_DONTWAIT);
      if (k > 0) ri += k;
      else if (k == 0) die("the other host closed the connection");
      else if (errno != EAGAIN && errno != EWOULDBLOCK) die("recv from the other host: %s", strerror(errno));
    }
  }
}

static void set_bufs(int fd, int bytes) {
  if (bytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
}

// Host 0's leader listens on 0.0.0.0:port; host 1's connects to peer, retrying up to 30 s.
static int connect_peer(const char *peer, int port, int sockbuf) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  int one = 1, fd;
  double t0 = now();
  if (host == 0) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    set_bufs(ls, sockbuf);
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(ls, (void *)&a, sizeof a) || listen(ls, 1)) die("listen on port %d: %s", port, strerror(errno));
    for (struct pollfd p = {ls, POLLIN, 0}; poll(&p, 1, 100) <= 0;) {
      if (atomic_load(&S->failed)) die("the other local rank failed");
      if (now() - t0 > timeout_s) die("host 1 did not connect to port %d within %.0f s", port, timeout_s);
    }
    if ((fd = accept(ls, NULL, NULL)) < 0) die("accept: %s", strerror(errno));
    close(ls);
  } else {
    if (inet_pton(AF_INET, peer, &a.sin_addr) != 1) die("bad peer address '%s'", peer);
    double limit = timeout_s < 30 ? timeout_s : 30;
    for (;;) {
      fd = socket(AF_INET, SOCK_STREAM, 0);
      set_bufs(fd, sockbuf);
      struct timeval tv = {1, 0};  // bounds one connect()
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (connect(fd, (void *)&a, sizeof a) == 0) break;
      int e = errno;
      close(fd);
      if (atomic_load(&S->failed)) die("the other local rank failed");
      if (now() - t0 > limit) die("could not connect to %s:%d within %.0f s: %s", peer, port, limit, strerror(e));
      usleep(50000);
    }
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static uint64_t rng;
static float frand(void) {  // xorshift64, [0,1)
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (rng >> 40) * (1.0f / 16777216.0f);
}

static void gemm(int ta, int tb, int m, int n, int k, const float *a, const float *b, float *c) {  // c = op(a)·op(b)
  cblas_sgemm(RowMajor, ta, tb, m, n, k, 1, a, ta == NoTrans ? k : m, b, tb == NoTrans ? n : k, 0, c, n);
}
static void add_bias(float *h, const float *b, int n, int relu) {
  for (int r = 0; r < B; r++)
    for (int j = 0; j < n; j++) { float v = h[r * n + j] + b[j]; h[r * n + j] = relu && v < 0 ? 0 : v; }
}
static void col_sum(const float *d, int n, float *out) {
  memset(out, 0, n * sizeof *out);
  for (int r = 0; r < B; r++) for (int j = 0; j < n; j++) out[j] += d[r * n + j];
}
static void relu_mask(float *d, const float *h) { for (int i = 0; i < B * H; i++) if (h[i] <= 0) d[i] = 0; }

typedef struct { float *p, *x, *h1, *h2, *z, *d2, *d1, *xs; int y[B], ys[NB][B]; } Net;

// Forward, loss, backward into g; returns the mean loss.
static float forward_backward(Net *m, float *g) {
  const float *p = m->p;
  gemm(NoTrans, Trans, B, H, IN, m->x, p + OW1, m->h1); add_bias(m->h1, p + OB1, H, 1);
  gemm(NoTrans, Trans, B, H, H, m->h1, p + OW2, m->h2); add_bias(m->h2, p + OB2, H, 1);
  gemm(NoTrans, Trans, B, OUT, H, m->h2, p + OW3, m->z); add_bias(m->z, p + OB3, OUT, 0);
  float loss = 0;
  for (int r = 0; r < B; r++) {  // softmax cross-entropy; z becomes dloss/dz
    float *z = m->z + r * OUT, mx = z[0], s = 0;
    for (int j = 1; j < OUT; j++) mx = fmaxf(mx, z[j]);
    float zy = z[m->y[r]] - mx;
    for (int j = 0; j < OUT; j++) s += z[j] = expf(z[j] - mx);
    loss += logf(s) - zy;
    for (int j = 0; j < OUT; j++) z[j] = (z[j] / s - (j == m->y[r])) / B;
  }
  gemm(Trans, NoTrans, OUT, H, B, m->z, m->h2, g + OW3); col_sum(m->z, OUT, g + OB3);
  gemm(NoTrans, NoTrans, B, H, OUT, m->z, p + OW3, m->d2); relu_mask(m->d2, m->h2);
  gemm(Trans, NoTrans, H, H, B, m->d2, m->h1, g + OW2); col_sum(m->d2, H, g + OB2);
  gemm(NoTrans, NoTrans, B, H, H, m->d2, p + OW2, m->d1); relu_mask(m->d1, m->h1);
  gemm(Trans, NoTrans, H, IN, B, m->d1, m->x, g + OW1); col_sum(m->d1, H, g + OB1);
  return loss / B;
}

static void communicate(int fd, float *tmp) {
  float *g0 = S->g[0], *g1 = S->g[1];
  if (mode == NONE) return;
  barrier();
  if (mode == SYNC) {
    float a = 1, b;
    if (local == 0) xchg(fd, &a, &b, sizeof a);
    barrier();
    return;
  }
  for (size_t i = local ? NP / 2 : 0, hi = nlocal == 1 ? 0 : local ? NP : NP / 2; i < hi; i++) {  // (1) within the host
    float v = (g0[i] + g1[i]) * 0.5f;
    g0[i] = v;
    if (mode == FULL) g1[i] = v;
  }
  barrier();
  if (local == 0) {  // (2) between the hosts
    xchg(fd, g0, tmp, NP * sizeof *g0);
    for (size_t i = 0; i < NP; i++) g0[i] = (g0[i] + tmp[i]) * 0.5f;
  }
  barrier();
  if (local == 1) memcpy(g1, g0, NP * sizeof *g0);  // (3) the leader's result to the other rank
  barrier();
}

static void rank_main(const char *peer, int port, int steps, int sockbuf) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  openblas_set_num_threads(1);
  Net m;
  float *mem = calloc(NP + NB * B * IN + 4 * B * H + B * OUT, sizeof(float)), *g = S->g[local], *tmp = NULL;
  float loss = 0, one = 1, peer_one;
  if (!mem) die("out of memory");
  m.p = mem; m.xs = m.p + NP; m.h1 = m.xs + NB * B * IN; m.h2 = m.h1 + B * H; m.z = m.h2 + B * H;
  m.d2 = m.z + B * OUT; m.d1 = m.d2 + B * H;
  rng = 0x9E3779B97F4A7C15ull;  // the same initial parameters on every rank (as PyTorch's Linear)
  int fan_in[] = {IN, IN, H, H, H, H}, off[] = {OW1, OB1, OW2, OB2, OW3, OB3, NP};
  for (int l = 0; l < 6; l++)
    for (int i = off[l]; i < off[l + 1]; i++) m.p[i] = (2 * frand() - 1) / sqrtf(fan_in[l]);
  rng = 0x2545F4914F6CDD1Dull * (2 * host + local + 1);  // each rank's own fixed batches
  for (int i = 0; i < NB * B * IN; i++) m.xs[i] = frand();
  for (int k = 0; k < NB; k++) for (int r = 0; r < B; r++) m.ys[k][r] = (int)(frand() * OUT);
  int fd = -1;
  if (local == 0) { fd = connect_peer(peer, port, sockbuf); if (!(tmp = malloc(NP * sizeof *tmp))) die("out of memory"); }
  barrier_s = timeout_s + 30;  // outlast the leader's connect, which fails with its own message
  barrier();
  barrier_s = timeout_s;
  double t0 = 0, c0 = 0;
  for (int it = 0; it < WARM + steps; it++) {
    if (it == WARM) {  // start aligned over all 4 ranks
      barrier();
      if (local == 0) xchg(fd, &one, &peer_one, sizeof one);
      barrier();
      t0 = now(); c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    }
    m.x = m.xs + (size_t)(it % NB) * B * IN;
    memcpy(m.y, m.ys[it % NB], sizeof m.y);
    loss = forward_backward(&m, g);
    if (it == 0 && local == 0) S->loss_first = loss;
    communicate(fd, tmp);
    for (size_t i = 0; i < NP; i++) m.p[i] -= 0.01f * g[i];
  }
  S->cpu[local] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (local == 1) memcpy(S->g[1], m.p, NP * sizeof *m.p);  // for the leader's check; gradients are done
  barrier();
  if (local == 0) {  // end report: this host's CPU seconds, a parameter checksum, the local check
    struct { double cpu, psum; int equal; } me = {S->cpu[0] + S->cpu[1], 0, nlocal == 1 || !memcmp(S->g[1], m.p, NP * sizeof *m.p)}, other;
    for (size_t i = 0; i < NP; i++) me.psum += m.p[i];
    xchg(fd, &me, &other, sizeof me);
    S->seconds = now() - t0;
    S->peer_cpu = other.cpu;
    S->loss_last = loss;
    S->params_equal = me.equal && other.equal && me.psum == other.psum;
    if (mode <= FULL_REDUCE && !me.equal) fprintf(stderr, "step2x2 host %d: WARNING: the two ranks' parameters differ\n", host);
    if (mode <= FULL_REDUCE && host == 0 && me.psum != other.psum)
      fprintf(stderr, "step2x2 host 0: WARNING: parameter checksums differ between the hosts (%.9g vs %.9g)\n", me.psum, other.psum);
  }
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s HOST(0|1) PEER_ADDR PORT STEPS MODE(full|full-reduce|sync|none) [--json FILE] "
                    "[--sockbuf BYTES] [--timeout SECONDS]\n", argv[0]);
    return 2;
  }
  host = atoi(argv[1]);
  const char *peer = argv[2], *json = NULL;
  int port = atoi(argv[3]), steps = atoi(argv[4]), sockbuf = 0;
  for (mode = FULL; mode <= NONE && strcmp(argv[5], mode_names[mode]); mode++) {}
  if (mode > NONE || (host != 0 && host != 1) || steps < 1 || port < 1) die("bad arguments (run without arguments for usage)");
  for (int i = 6; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--json")) json = argv[i + 1];
    else if (!strcmp(argv[i], "--sockbuf")) sockbuf = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--timeout")) barrier_s = timeout_s = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--ranks-per-host")) nlocal = atoi(argv[i + 1]);
    else die("unknown option %s", argv[i]);
  }
  if (nlocal < 1 || nlocal > 2) die("--ranks-per-host must be 1 or 2");
  Shared *s = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) die("mmap: %s", strerror(errno));
  S = s;
  for (int l = 0; l < nlocal; l++) {
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) { local = l; rank_main(peer, port, steps, sockbuf); return 0; }
  }
  int ok = 1, st;
  for (int n = 0; n < nlocal; n++) {  // a failed rank makes the other one stop at its next wait
    if (wait(&st) < 0) die("wait: %s", strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      ok = 0;
      if (WIFSIGNALED(st)) fprintf(stderr, "step2x2 host %d: a rank died of signal %d\n", host, WTERMSIG(st));
      atomic_store(&S->failed, 1);
      syscall(SYS_futex, &S->gen, FUTEX_WAKE, 1, NULL, NULL, 0);
    }
  }
  if (!ok) die("failed");
  if (host != 0) return 0;
  Dl_info dl = {0};
  dladdr((void *)cblas_sgemm, &dl);
  FILE *f = json ? fopen(json, "w") : stdout;
  if (!f) die("cannot write %s: %s", json, strerror(errno));
  double sec = S->seconds;
  fprintf(f, "{\n  \"engine\" : \"c-step2x2-%s\",\n  \"model\" : \"mlp\",\n  \"version\" : \"C, %s\",\n"
             "  \"world\" : %d,\n  \"threads_per_rank\" : 1,\n  \"steps\" : %d,\n  \"batch_per_rank\" : %d,\n"
             "  \"params\" : %d,\n  \"seconds\" : %.6f,\n  \"steps_per_s\" : %.3f,\n  \"samples_per_s\" : %.1f,\n"
             "  \"blas\" : [ \"%s\" ],\n  \"cpu_ms_per_step\" : %.3f,\n  \"loss_first\" : %.6f,\n  \"loss_last\" : %.6f",
          mode_names[mode], openblas_get_config(), 2 * nlocal, steps, B, NP, sec, steps / sec, 2.0 * nlocal * B * steps / sec,
          dl.dli_fname ? dl.dli_fname : "?", (S->cpu[0] + S->cpu[1] + S->peer_cpu) * 1e3 / steps,
          S->loss_first, S->loss_last);
  if (mode <= FULL_REDUCE) fprintf(f, ",\n  \"params_equal\" : %s", S->params_equal ? "true" : "false");
  fprintf(f, "\n}\n");
  return json && fclose(f) ? 1 : 0;
}
