// SSE subscriber worker in C for sse_fanout.py (--client c): the same protocol as its Python worker,
// at a fraction of the CPU per delivery, so that 10k streams measure the server and not the client.
//
//   cc -O2 -o sse_subscribers sse_subscribers.c
//   sse_subscribers HOST PORT SCOPE COUNT INDEX EVENTS LATENCY_FILE TIMEOUT_SECONDS
//
// Opens COUNT streams on GET /v1/scopes/SCOPE/events (source addresses 127.0.0.1..8), waits for every
// `snapshot` event, prints {"ready":true,…} on stdout; reads "go FINAL_VERSION DEADLINE_NS" on
// stdin; then counts `changeset` events until every stream has FINAL_VERSION or CLOCK_MONOTONIC
// passes DEADLINE_NS, checking versions arrive once each and in order, and prints the result JSON.
// Latency = receive time - the "t<ns>" name the publisher stamped (CLOCK_MONOTONIC is machine-wide);
// samples (every STRIDE-th delivery, at most 2M) go to LATENCY_FILE as native int64.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { SCRATCH = 1 << 20, MAX_SAMPLES = 2000000, MAX_CARRY = 1 << 20 };

typedef struct {
    int fd;
    int snapshot;  // 1 once the snapshot event arrived
    int complete;  // 1 once FINAL_VERSION arrived (or the stream was closed by us)
    int64_t last;  // last version seen
    char *carry;   // bytes after the last complete event
    size_t carry_len;
} Stream;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t parse_int(const char *p, const char *end) {
    int64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
    return v;
}

static Stream *streams;
static int count, ready_count, completed, lost;
static int64_t final_version = -1, deliveries, missing, duplicate, first_delivery, last_delivery;
static int64_t *samples;
static size_t sample_count, stride = 1, tick;

static void mark_complete(Stream *s) {
    if (!s->complete && final_version >= 0 && s->last >= final_version) {
        s->complete = 1;
        completed++;
    }
}

// Handles the complete events in [p, end): every event ends with "\n\n"; chunk framing and the
// response head sit between them and are skipped by searching for "event: ".
static void handle_events(Stream *s, const char *p, const char *end, int64_t now) {
    static const char ev[] = "event: ";
    while (p < end) {
        const char *e = memmem(p, (size_t)(end - p), ev, sizeof ev - 1);
        if (!e) return;
        e += sizeof ev - 1;
        const char *stop = memmem(e, (size_t)(end - e), "\n\n", 2);
        if (!stop) stop = end;
        if ((size_t)(stop - e) > 13 && memcmp(e, "changeset\nid: ", 14) == 0) {
            int64_t version = parse_int(e + 14, stop);
            const char *name = memmem(e, (size_t)(stop - e), "\"name\":\"t", 9);
            int64_t stamp = name ? parse_int(name + 9, stop) : 0;
            if (!first_delivery) first_delivery = now;
            last_delivery = now;
            deliveries++;
            if (version <= s->last) {
                duplicate++;
            } else {
                if (version != s->last + 1) missing += version - s->last - 1;
                s->last = version;
                if (++tick >= stride) {
                    tick = 0;
                    if (sample_count < MAX_SAMPLES && stamp) samples[sample_count++] = now - stamp;
                }
            }
        } else if ((size_t)(stop - e) > 12 && memcmp(e, "snapshot\nid: ", 13) == 0) {
            s->last = parse_int(e + 13, stop);
            if (!s->snapshot) {
                s->snapshot = 1;
                ready_count++;
            }
        }
        p = stop;
    }
}

static char scratch[SCRATCH + MAX_CARRY];

static void on_readable(Stream *s, int64_t now) {
    for (;;) {
        memcpy(scratch, s->carry, s->carry_len);
        ssize_t n = read(s->fd, scratch + s->carry_len, SCRATCH);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n <= 0) {
            if (!s->complete) lost++;
            s->complete = 1;  // not counted in `completed`
            close(s->fd);
            s->fd = -1;
            return;
        }
        size_t total = s->carry_len + (size_t)n;
        if (!s->snapshot && total >= 12 && memcmp(scratch, "HTTP/1.1 ", 9) == 0 && memcmp(scratch + 9, "200", 3) != 0) {
            fprintf(stderr, "subscribe answered %.40s\n", scratch);
            exit(1);
        }
        // the last "\n\n" ends the complete part
        size_t cut = 0;
        for (size_t i = total; i >= 2; i--) {
            if (scratch[i - 1] == '\n' && scratch[i - 2] == '\n') { cut = i; break; }
        }
        if (cut) handle_events(s, scratch, scratch + cut, now);
        size_t rest = total - cut;
        if (rest > MAX_CARRY) { fprintf(stderr, "an event larger than %d bytes\n", MAX_CARRY); exit(1); }
        if (rest) {
            s->carry = realloc(s->carry, rest);
            memcpy(s->carry, scratch + cut, rest);
        }
        s->carry_len = rest;
        mark_complete(s);
        if ((size_t)n < SCRATCH) return;
    }
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: %s HOST PORT SCOPE COUNT INDEX EVENTS LATENCY_FILE TIMEOUT_SECONDS\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    const char *scope = argv[3];
    count = atoi(argv[4]);
    int index = atoi(argv[5]);
    int64_t events = atoll(argv[6]);
    const char *latency_file = argv[7];
    int64_t deadline = now_ns() + (int64_t)(atof(argv[8]) * 1e9);
    if (strncmp(host, "127.", 4) != 0) { fprintf(stderr, "loopback only\n"); return 2; }
    if ((int64_t)count * events > (int64_t)MAX_SAMPLES) stride = (size_t)((int64_t)count * events / MAX_SAMPLES);

    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    if ((rlim_t)count + 64 > limit.rlim_cur) { fprintf(stderr, "fd limit %lu too low\n", (unsigned long)limit.rlim_cur); return 1; }

    streams = calloc((size_t)count, sizeof *streams);
    samples = malloc(sizeof *samples * MAX_SAMPLES);
    int epoll = epoll_create1(0);
    char request[512];
    int request_len = snprintf(request, sizeof request,
        "GET /v1/scopes/%s/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n", scope);
    int64_t started = now_ns();
    for (int i = 0; i < count; i++) {
        Stream *s = &streams[i];
        s->last = -1;
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in source = {.sin_family = AF_INET};
        char source_text[16];
        snprintf(source_text, sizeof source_text, "127.0.0.%d", 1 + (i + index) % 8);
        inet_pton(AF_INET, source_text, &source.sin_addr);
        struct sockaddr_in target = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, host, &target.sin_addr);
        if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&source, sizeof source) != 0 ||
            connect(s->fd, (struct sockaddr *)&target, sizeof target) != 0 ||
            write(s->fd, request, (size_t)request_len) != request_len) {
            fprintf(stderr, "stream %d: %s\n", i, strerror(errno));
            return 1;
        }
        fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(epoll, EPOLL_CTL_ADD, s->fd, &event);
    }
    struct epoll_event input = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    epoll_ctl(epoll, EPOLL_CTL_ADD, 0, &input);

    enum { BATCH = 256 };
    struct epoll_event fired[BATCH];
    int said_ready = 0;
    char line[256];
    size_t line_len = 0;
    for (;;) {
        int64_t now = now_ns();
        if (!said_ready && ready_count == count) {
            int64_t low = INT64_MAX, high = INT64_MIN;
            for (int i = 0; i < count; i++) {
                if (streams[i].last < low) low = streams[i].last;
                if (streams[i].last > high) high = streams[i].last;
            }
            printf("{\"ready\": true, \"open_seconds\": %.2f, \"snapshot_min\": %lld, \"snapshot_max\": %lld}\n",
                   (double)(now - started) / 1e9, (long long)low, (long long)high);
            fflush(stdout);
            said_ready = 1;
        }
        if (final_version >= 0 && completed + lost >= count) break;
        if (now >= deadline) {
            if (!said_ready) { fprintf(stderr, "only %d of %d snapshots before the timeout\n", ready_count, count); return 1; }
            break;
        }
        int timeout_ms = (int)((deadline - now) / 1000000) + 1;
        int n = epoll_wait(epoll, fired, BATCH, timeout_ms);
        now = now_ns();
        for (int k = 0; k < n; k++) {
            uint32_t which = fired[k].data.u32;
            if (which == UINT32_MAX) {  // "go FINAL DEADLINE" from the driver
                ssize_t got = read(0, line + line_len, sizeof line - 1 - line_len);
                if (got <= 0) { epoll_ctl(epoll, EPOLL_CTL_DEL, 0, NULL); continue; }
                line_len += (size_t)got;
                line[line_len] = 0;
                long long final, go_deadline;
                if (strchr(line, '\n') && sscanf(line, "go %lld %lld", &final, &go_deadline) == 2) {
                    final_version = final;
                    deadline = go_deadline;
                    for (int i = 0; i < count; i++) mark_complete(&streams[i]);
                }
                continue;
            }
            Stream *s = &streams[which];
            if (s->fd >= 0) on_readable(s, now);
        }
    }
    for (int i = 0; i < count; i++) {
        if (final_version > streams[i].last && streams[i].last >= 0) missing += final_version - streams[i].last;
    }
    FILE *out = fopen(latency_file, "wb");
    if (!out || fwrite(samples, sizeof *samples, sample_count, out) != sample_count || fclose(out) != 0) {
        perror(latency_file);
        return 1;
    }
    printf("{\"deliveries\": %lld, \"missing\": %lld, \"duplicate\": %lld, \"lost\": %d, \"completed\": %d, "
           "\"first_delivery\": %lld, \"last_delivery\": %lld, \"latency_stride\": %zu}\n",
           (long long)deliveries, (long long)missing, (long long)duplicate, lost, completed,
           (long long)first_delivery, (long long)last_delivery, stride);
    fflush(stdout);
    for (int i = 0; i < count; i++) if (streams[i].fd >= 0) close(streams[i].fd);
    return 0;
}
