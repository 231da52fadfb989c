// Header-only shim: Glibc's Swift overlay lacks epoll, eventfd, accept4 and friends.
//
// No `_GNU_SOURCE` here: headers this module shares with SwiftGlibc (sys/select.h,
// sys/resource.h, …) would then be compiled with different definitions, and clang rejects the
// mismatch whenever both modules meet in one file — depending on build order, so intermittently.
// The one GNU extension we use, accept4, is declared below; everything else is standard.
#ifndef CLINUXIO_SHIM_H
#define CLINUXIO_SHIM_H
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

// Bytes in a socket's send queue not yet acknowledged by the peer (SIOCOUTQ), or -1. A shrinking
// queue is progress even while the socket stays unwritable (EPOLLOUT waits for a third of it).
static inline int clinuxio_unsent_bytes(int fd) {
    int count = 0;
    return ioctl(fd, TIOCOUTQ, &count) == 0 ? count : -1;
}
#endif
