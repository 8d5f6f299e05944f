/* The compiled trace replay of cosim.bls.replay (`replay`), for its most common runs: FCFS
 * or EASY backfilling, first-fit hosts, a static queue order, decisions at every event.
 *
 * It is the Python replay, step for step, on plain arrays: at each tick the ends up to it
 * (popped from a binary heap in (tick, killed, job id) order), then the submissions (a job
 * larger than the machine rejected), then a pass if anything changed, and another pass while
 * jobs end at the tick they started. A pass is `cosim.bls.policies.none.plan` (the longest
 * prefix of the queue that fits) or `cosim.bls.policies.easy.plan` without priority jobs (the
 * head's shadow time and extra hosts by `easy.shadow`'s walk, then every later job that fits
 * and ends by the shadow time or within the extra hosts); hosts are taken by
 * `replay._first_fit` (the lowest free indices, run by run). The queue order comes in as one
 * rank per job (its key's place among all keys: keys are unique), so any static order is one
 * array. The running jobs are kept sorted by (expected end, job id), as `PassView.running`.
 *
 * In: int64 arrays in submission order (submit, run time, walltime, hosts, rank, job id, PEs),
 * the hosts of the machine, EASY or not, walltime kills or not, and a progress callable (or
 * None) called as the Python replay calls it. Out: a tuple of bytes objects holding int64
 * arrays (start, end, status 0 completed / 1 killed / 2 rejected, the outcome order, each
 * job's first run and run count, the runs' first hosts and counts, the first reservations as
 * job and tick, the allocation log's rows as job, first host, hosts and PEs on each, in the
 * order the Python replay logs them) and the counters (rounds, passes, facts, kills,
 * rejected). Python builds the outcomes and the allocation log from them
 * (`replay._replay_compiled`). `fcfs_starts` (at the end) is the strict-FCFS loop of the
 * unfair-jobs metric (cosim.output.metrics.fair_starts).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int64_t i64;

#define PROGRESS_EVERY 512 /* replay._PROGRESS_EVERY */

typedef struct { i64 *v; Py_ssize_t n, cap; } Vec;

static int vec_push(Vec *a, i64 x)
{
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? 2 * a->cap : 64;
        i64 *v = PyMem_Realloc(a->v, (size_t)cap * sizeof(i64));
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* allocation log rows: job, first host, hosts, PEs on each */
typedef struct { Vec job, first, hosts, pes; } Log;

static int log_row(Log *log, i64 job, i64 first, i64 hosts, i64 pes)
{
    return (vec_push(&log->job, job) < 0 || vec_push(&log->first, first) < 0
            || vec_push(&log->hosts, hosts) < 0 || vec_push(&log->pes, pes) < 0) ? -1 : 0;
}

typedef struct { i64 when, killed, id, job; } End; /* heap entry: (when, killed, id) order */

static int end_less(const End *a, const End *b)
{
    if (a->when != b->when) return a->when < b->when;
    if (a->killed != b->killed) return a->killed < b->killed;
    return a->id < b->id;
}

static void heap_push(End *h, Py_ssize_t *n, End x)
{
    Py_ssize_t i = (*n)++;
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!end_less(&x, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static End heap_pop(End *h, Py_ssize_t *n)
{
    End top = h[0], x = h[--(*n)];
    Py_ssize_t i = 0, m = *n;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && end_less(&h[c + 1], &h[c])) c++;
        if (!end_less(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    if (m) h[i] = x;
    return top;
}

typedef struct {
    Py_ssize_t n;
    const i64 *submit, *run, *wall, *hosts, *rank, *id, *pes;
} Jobs;

/* the first place in the queue `q` (qn jobs by rank) not below rank `r` */
static Py_ssize_t queue_find(const i64 *q, Py_ssize_t qn, const i64 *rank, i64 r)
{
    Py_ssize_t lo = 0, hi = qn;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (rank[q[mid]] < r) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

typedef struct { i64 e, id, job; } Running; /* PassView.running, sorted by (e, id) */

static Py_ssize_t running_find(const Running *r, Py_ssize_t n, i64 e, i64 id)
{ /* the first entry not below (e, id) */
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (r[mid].e < e || (r[mid].e == e && r[mid].id < id)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

typedef struct { i64 e, h; } Fresh;

static int fresh_cmp(const void *a, const void *b)
{
    const Fresh *x = a, *y = b;
    if (x->e != y->e) return x->e < y->e ? -1 : 1;
    return (x->h > y->h) - (x->h < y->h);
}

/* easy.shadow: (shadow time, extra hosts) of a head needing `need` hosts, `free` free after
 * the jobs `started` at this pass took theirs. */
static int shadow(const Jobs *J, const Running *run, Py_ssize_t n_run, const i64 *started,
                  Py_ssize_t n_started, Fresh *fresh, i64 now, i64 free, i64 need,
                  i64 *when_out, i64 *extra_out)
{
    i64 nxt = now + 1, avail = free, when = -1;
    Py_ssize_t k = 0, nf = n_started;
    for (Py_ssize_t s = 0; s < n_started; s++) {
        i64 j = started[s], w = J->wall[j];
        fresh[s].e = now + (w > 1 ? w : 1);
        fresh[s].h = J->hosts[j];
    }
    if (nf > 1) qsort(fresh, (size_t)nf, sizeof(Fresh), fresh_cmp);
    for (Py_ssize_t r = 0; r < n_run; r++) {
        i64 e = run[r].e, h = J->hosts[run[r].job];
        if (e <= now) e = nxt;
        while (k < nf && fresh[k].e <= e) {
            if (when >= 0 && fresh[k].e > when) goto done;
            avail += fresh[k].h;
            if (when < 0 && avail >= need) when = fresh[k].e;
            k++;
        }
        if (when >= 0 && e > when) goto done;
        avail += h;
        if (when < 0 && avail >= need) when = e;
    }
    while (k < nf) {
        if (when >= 0 && fresh[k].e > when) break;
        avail += fresh[k].h;
        if (when < 0 && avail >= need) when = fresh[k].e;
        k++;
    }
done:
    if (when < 0) {
        PyErr_Format(PyExc_ValueError, "a job of %lld hosts never fits (%lld hosts in all)",
                     (long long)need, (long long)avail);
        return -1;
    }
    *when_out = when;
    *extra_out = avail - need;
    return 0;
}

static int get_i64(PyObject *o, Py_buffer *b, Py_ssize_t n, const char *what)
{
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *f = b->format ? b->format : "";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (b->itemsize != 8 || (strcmp(f, "q") && strcmp(f, "l")) || b->len % 8
        || b->len / 8 != n) {
        PyBuffer_Release(b);
        PyErr_Format(PyExc_TypeError, "%s: %zd int64 values expected", what, n);
        return -1;
    }
    return 0;
}

static PyObject *bytes_of(const i64 *v, Py_ssize_t n)
{
    return PyBytes_FromStringAndSize((const char *)v, n * (Py_ssize_t)sizeof(i64));
}

static PyObject *replay(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[7], *progress;
    Py_ssize_t n;
    long long n_hosts_ll;
    int easy, kill;
    if (!PyArg_ParseTuple(args, "nOOOOOOOLppO", &n, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &n_hosts_ll, &easy, &kill, &progress))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return NULL;
    }
    const char *names[7] = {"submit", "runtime", "walltime", "hosts", "rank", "id", "pes"};
    Py_buffer buf[7];
    int got = 0;
    for (; got < 7; got++)
        if (get_i64(o[got], &buf[got], n, names[got]) < 0) break;
    PyObject *result = NULL;
    i64 n_hosts = n_hosts_ll;
    unsigned char *free_h = NULL;
    i64 *queue = NULL, *start = NULL, *end = NULL, *status = NULL, *order = NULL;
    i64 *run_at = NULL, *run_n = NULL, *starts = NULL;
    End *heap = NULL;
    Running *running = NULL;
    Fresh *fresh = NULL;
    Vec rf = {0}, rc = {0}, res_job = {0}, res_t = {0};
    Log log;
    memset(&log, 0, sizeof log);
    char *reserved = NULL;
    if (got < 7) goto out;
    if (n_hosts < 1) {
        PyErr_SetString(PyExc_ValueError, "n_hosts must be >= 1");
        goto out;
    }
    Jobs J = {n, buf[0].buf, buf[1].buf, buf[2].buf, buf[3].buf, buf[4].buf, buf[5].buf,
              buf[6].buf};
    for (Py_ssize_t j = 0; j < n; j++) { /* what Job guarantees, checked: no division by 0 */
        if (J.hosts[j] < 1 || J.pes[j] < 1 || J.run[j] < 0 || J.wall[j] < 0
            || J.submit[j] < 0) {
            PyErr_Format(PyExc_ValueError, "job %zd: hosts and PEs >= 1, times >= 0", j);
            goto out;
        }
    }
    size_t sz = (size_t)(n ? n : 1);
    free_h = PyMem_Malloc((size_t)n_hosts);
    queue = PyMem_Malloc(sz * sizeof(i64));
    start = PyMem_Malloc(sz * sizeof(i64));
    end = PyMem_Malloc(sz * sizeof(i64));
    status = PyMem_Malloc(sz * sizeof(i64));
    order = PyMem_Malloc(sz * sizeof(i64));
    run_at = PyMem_Malloc(sz * sizeof(i64));
    run_n = PyMem_Malloc(sz * sizeof(i64));
    starts = PyMem_Malloc(sz * sizeof(i64));
    heap = PyMem_Malloc(sz * sizeof(End));
    running = PyMem_Malloc(sz * sizeof(Running));
    fresh = PyMem_Malloc(sz * sizeof(Fresh));
    reserved = PyMem_Calloc(sz, 1);
    if (!free_h || !queue || !start || !end || !status || !order || !run_at || !run_n
        || !starts || !heap || !running || !fresh || !reserved) {
        PyErr_NoMemory();
        goto out;
    }
    memset(free_h, 1, (size_t)n_hosts);
    for (Py_ssize_t j = 0; j < n; j++) {
        start[j] = end[j] = -1;
        status[j] = -1;
        run_at[j] = run_n[j] = 0;
    }
    i64 n_free = n_hosts, rounds = 0, passes = 0, facts = 0, kills = 0, rejected = 0, last = 0;
    Py_ssize_t qn = 0, hn = 0, rn = 0, n_out = 0, i = 0;
    /* the queue is q[0..qn), inside queue[0..n): an insert raises (q - queue) + qn by one at
     * most (none when it shifts the front), a removal never raises it, so it stays at most
     * the number of inserts, at most n: a shift of the tail never writes past queue[n - 1] */
    i64 *q = queue;

    for (;;) {
        int have = 0;
        i64 t = 0;
        if (i < n) { t = J.submit[i]; have = 1; }
        if (hn && (!have || heap[0].when < t)) { t = heap[0].when; have = 1; }
        if (!have) break;
        rounds++;
        last = t;
        if (!(rounds % PROGRESS_EVERY)) {
            if (progress != Py_None) {
                PyObject *r = PyObject_CallFunction(progress, "Ln", (long long)t, n_out);
                if (!r) goto out;
                Py_DECREF(r);
            }
            if (PyErr_CheckSignals() < 0) goto out;
        }
        int dirty = 0;
        for (;;) {
            while (hn && heap[0].when <= t) { /* the ends up to t */
                End x = heap_pop(heap, &hn);
                i64 j = x.job, now = x.when, st = 0;
                if (x.killed) {
                    if (start[j] + J.run[j] <= t) now = start[j] + J.run[j];
                    else { now = t; st = 1; kills++; }
                }
                if (easy) { /* (only EASY reads the running jobs; FCFS keeps their count) */
                    Py_ssize_t at = running_find(running, rn, start[j] + J.wall[j], J.id[j]);
                    memmove(&running[at], &running[at + 1],
                            (size_t)(rn - at - 1) * sizeof(Running));
                }
                rn--;
                /* its allocation log rows (when it held its hosts for some time): the
                 * spread rule of cosim.platform.allocation.spread_runs, run by run */
                i64 base = J.pes[j] / J.hosts[j], more = J.pes[j] % J.hosts[j], seen = 0;
                for (i64 r = run_at[j]; r < run_at[j] + run_n[j]; r++) {
                    i64 f = rf.v[r], m = rc.v[r];
                    memset(free_h + f, 1, (size_t)m);
                    if (now <= start[j]) continue;
                    i64 k = more > seen ? (m < more - seen ? m : more - seen) : 0;
                    if (k && log_row(&log, j, f, k, base + 1) < 0) goto out;
                    if (m > k && base && log_row(&log, j, f + k, m - k, base) < 0) goto out;
                    seen += m;
                }
                n_free += J.hosts[j];
                end[j] = now;
                status[j] = st;
                order[n_out++] = j;
                facts++;
                dirty = 1;
            }
            while (i < n && J.submit[i] <= t) { /* the submissions up to t */
                i64 j = i++;
                if (J.hosts[j] > n_hosts) {
                    rejected++;
                    status[j] = 2;
                    order[n_out++] = j;
                    continue;
                }
                Py_ssize_t lo = queue_find(q, qn, J.rank, J.rank[j]);
                if (q > queue && lo < qn - lo) { /* the shorter side moves */
                    memmove(q - 1, q, (size_t)lo * sizeof(i64));
                    q--;
                } else {
                    memmove(q + lo + 1, q + lo, (size_t)(qn - lo) * sizeof(i64));
                }
                q[lo] = j;
                qn++;
                dirty = 1;
            }
            if (!(dirty && qn)) break;
            dirty = 0;
            passes++;
            /* the plan: starts[0..ns), and the head's reservation */
            Py_ssize_t ns = 0, k = 0;
            i64 free = n_free, head = -1, when = 0, extra = 0;
            while (k < qn && J.hosts[q[k]] <= free) {
                starts[ns++] = q[k];
                free -= J.hosts[q[k]];
                k++;
            }
            if (easy && k < qn) {
                head = q[k];
                if (shadow(&J, running, rn, starts, ns, fresh, t, free, J.hosts[head], &when,
                           &extra) < 0)
                    goto out;
                if (free > 0) {
                    for (Py_ssize_t m = k + 1; m < qn; m++) {
                        i64 j = q[m], h = J.hosts[j];
                        if (h > free) continue;
                        if (t + J.wall[j] <= when) {
                        } else if (h <= extra) {
                            extra -= h;
                        } else {
                            continue;
                        }
                        starts[ns++] = j;
                        free -= h;
                        if (free == 0) break;
                    }
                }
                if (!reserved[head]) {
                    reserved[head] = 1;
                    if (vec_push(&res_job, head) < 0 || vec_push(&res_t, when) < 0) goto out;
                }
            }
            for (Py_ssize_t s = 0; s < ns; s++) { /* start them, in the plan's order */
                i64 j = starts[s], need = J.hosts[j], at = 0;
                Py_ssize_t lo = queue_find(q, qn, J.rank, J.rank[j]);
                if (lo < qn - 1 - lo) { /* the shorter side moves: a head start is O(1) */
                    memmove(q + 1, q, (size_t)lo * sizeof(i64));
                    q++;
                } else {
                    memmove(q + lo, q + lo + 1, (size_t)(qn - lo - 1) * sizeof(i64));
                }
                if (!--qn) q = queue;
                run_at[j] = rf.n;
                while (need) { /* first fit, run by run */
                    const unsigned char *a = memchr(free_h + at, 1, (size_t)(n_hosts - at));
                    if (!a) {
                        PyErr_SetString(PyExc_RuntimeError, "first fit: too few free hosts");
                        goto out;
                    }
                    i64 f = a - free_h, b = f;
                    while (b < n_hosts && free_h[b]) b++;
                    i64 m = b - f < need ? b - f : need;
                    memset(free_h + f, 0, (size_t)m);
                    if (vec_push(&rf, f) < 0 || vec_push(&rc, m) < 0) goto out;
                    need -= m;
                    at = f + m;
                }
                run_n[j] = rf.n - run_at[j];
                n_free -= J.hosts[j];
                start[j] = t;
                i64 e = t + J.wall[j];
                if (easy) {
                    Py_ssize_t r = running_find(running, rn, e, J.id[j]);
                    memmove(&running[r + 1], &running[r], (size_t)(rn - r) * sizeof(Running));
                    running[r].e = e;
                    running[r].id = J.id[j];
                    running[r].job = j;
                }
                rn++;
                End x = {0, 0, J.id[j], j};
                if (kill && J.run[j] > J.wall[j]) { x.when = e; x.killed = 1; }
                else x.when = t + J.run[j];
                heap_push(heap, &hn, x);
                facts++;
            }
            if (!(hn && heap[0].when <= t)) break;
        }
    }
    if (qn || rn) {
        PyErr_SetString(PyExc_RuntimeError,
                        "simulation ended with jobs still queued or running");
        goto out;
    }
    if (progress != Py_None) {
        PyObject *r = PyObject_CallFunction(progress, "Ln", (long long)last, n_out);
        if (!r) goto out;
        Py_DECREF(r);
    }
    result = Py_BuildValue("(NNNNNNNNNNNNNN(LLLLL))", bytes_of(start, n), bytes_of(end, n),
                           bytes_of(status, n), bytes_of(order, n_out), bytes_of(run_at, n),
                           bytes_of(run_n, n), bytes_of(rf.v, rf.n), bytes_of(rc.v, rc.n),
                           bytes_of(res_job.v, res_job.n), bytes_of(res_t.v, res_t.n),
                           bytes_of(log.job.v, log.job.n), bytes_of(log.first.v, log.first.n),
                           bytes_of(log.hosts.v, log.hosts.n), bytes_of(log.pes.v, log.pes.n),
                           (long long)rounds, (long long)passes, (long long)facts,
                           (long long)kills, (long long)rejected);
out:
    for (int b = 0; b < got; b++) PyBuffer_Release(&buf[b]);
    PyMem_Free(free_h); PyMem_Free(queue); PyMem_Free(start); PyMem_Free(end);
    PyMem_Free(status); PyMem_Free(order); PyMem_Free(run_at); PyMem_Free(run_n);
    PyMem_Free(starts); PyMem_Free(heap); PyMem_Free(running); PyMem_Free(fresh);
    PyMem_Free(reserved); PyMem_Free(rf.v); PyMem_Free(rc.v); PyMem_Free(res_job.v);
    PyMem_Free(res_t.v); PyMem_Free(log.job.v); PyMem_Free(log.first.v);
    PyMem_Free(log.hosts.v); PyMem_Free(log.pes.v);
    return result;
}

/* fcfs_starts(n, submit, run, hosts, n_hosts): the start of each job under strict FCFS without
 * backfilling, the jobs in arrival order, each for `run` ticks on `hosts` of `n_hosts` hosts
 * (cosim.output.metrics.fair_starts, whose loop this is: a job starts at the first instant at
 * or after its submission and the previous start at which its hosts are free). The ends are
 * a binary heap by tick (the order among equal ticks frees the same hosts). Out: bytes of
 * int64 starts; ValueError when a job needs more hosts than the machine has. */
typedef struct { i64 when, hosts; } Busy;

static void busy_push(Busy *h, Py_ssize_t *n, Busy x)
{
    Py_ssize_t i = (*n)++;
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (h[p].when <= x.when) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static Busy busy_pop(Busy *h, Py_ssize_t *n)
{
    Busy top = h[0], x = h[--(*n)];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1].when < h[c].when) c++;
        if (x.when <= h[c].when) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = x;
    return top;
}

static PyObject *fcfs_starts(PyObject *self, PyObject *args)
{
    Py_ssize_t n;
    PyObject *o[3];
    long long n_hosts;
    if (!PyArg_ParseTuple(args, "nOOOL", &n, &o[0], &o[1], &o[2], &n_hosts)) return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return NULL;
    }
    Py_buffer buf[3];
    int got = 0;
    PyObject *result = NULL;
    i64 *start = NULL;
    Busy *heap = NULL;
    for (; got < 3; got++)
        if (get_i64(o[got], &buf[got], n, "fcfs_starts: submit, run and hosts") < 0)
            goto out;
    const i64 *submit = buf[0].buf, *run = buf[1].buf, *hosts = buf[2].buf;
    start = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(i64));
    heap = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Busy));
    if (!start || !heap) {
        PyErr_NoMemory();
        goto out;
    }
    Py_ssize_t nh = 0;
    i64 free_hosts = n_hosts, last = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        i64 t = submit[k] > last ? submit[k] : last;
        while (nh && heap[0].when <= t) free_hosts += busy_pop(heap, &nh).hosts;
        while (free_hosts < hosts[k]) {
            if (!nh) {
                PyErr_Format(PyExc_ValueError, "job %zd needs %lld hosts of %lld", k,
                             (long long)hosts[k], n_hosts);
                goto out;
            }
            Busy b = busy_pop(heap, &nh);
            if (b.when > t) t = b.when;
            free_hosts += b.hosts;
            while (nh && heap[0].when <= t) free_hosts += busy_pop(heap, &nh).hosts;
        }
        start[k] = t;
        free_hosts -= hosts[k];
        busy_push(heap, &nh, (Busy){t + run[k], hosts[k]});
        last = t;
    }
    result = bytes_of(start, n);
out:
    for (int b = 0; b < got; b++) PyBuffer_Release(&buf[b]);
    PyMem_Free(start);
    PyMem_Free(heap);
    return result;
}

static PyMethodDef methods[] = {
    {"replay", replay, METH_VARARGS,
     "replay(n, submit, runtime, walltime, hosts, rank, id, pes, n_hosts, easy, kill, "
     "progress)"},
    {"fcfs_starts", fcfs_starts, METH_VARARGS, "fcfs_starts(n, submit, run, hosts, n_hosts)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_replay",
                                    "The compiled trace replay (cosim.bls.replay).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&module); }
