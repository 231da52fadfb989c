// Header-only shim: Glibc's Swift overlay lacks epoll, eventfd, accept4 and friends.
#ifndef CLINUXIO_SHIM_H
#define CLINUXIO_SHIM_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
#endif
