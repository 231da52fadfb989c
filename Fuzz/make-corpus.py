#!/usr/bin/env python3
"""Writes the seed corpus Fuzz/corpus/: valid and malformed requests (the conformance suite's
cases), each prefixed by the two split-point bytes the harness reads. Re-run after adding seeds."""
import hashlib
import pathlib

HOST = b"Host: t\r\n"
SEEDS = [
    b"GET / HTTP/1.1\r\n" + HOST + b"\r\n",
    b"GET /echo?a=1 HTTP/1.1\r\n" + HOST + b"Accept: */*\r\nX-Dup: 1\r\nX-Dup: 2\r\n\r\n",
    b"GET / HTTP/1.0\r\n\r\n",
    b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"HEAD /static HTTP/1.1\r\n" + HOST + b"Connection: close\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\n" + HOST + b"\r\n",
    b"GET http://t/abs HTTP/1.1\r\n" + HOST + b"\r\n",
    b"\r\nGET / HTTP/1.1\r\n" + HOST + b"\r\n",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: 5\r\n\r\nhello",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Expect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\n5;ext=1;q=\"a b\"\r\nhello\r\n0\r\nX-Trailer: v\r\n\r\n",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nx",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: -1\r\n\r\n",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: 99999999999999999999999\r\n\r\n",
    b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: gzip, chunked\r\n\r\n",
    b"GET / HTTP/1.1\nHost: t\n\n",
    b"GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n  b\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost : t\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: t\r\nX: a\x00b\r\n\r\n",
    b"GET / HTTP/1.1\r\nX: 1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n",
    b"GET / HTTP/2.0\r\nHost: t\r\n\r\n",
    b"GET /" + b"a" * 1100 + b" HTTP/1.1\r\nHost: t\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + b"v" * 5000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(40)) + HOST + b"\r\n",
    b"G\xc3\xa9T / HTTP/1.1\r\nHost: t\r\n\r\n",
    b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: t\r\nX-Opaque: caf\xc3\xa9\xff\r\n\r\n",
]

out = pathlib.Path(__file__).resolve().parent / "corpus"
out.mkdir(exist_ok=True)
for seed in SEEDS:
    for head_split, body_split in ((0xFF, 0x00), (0x80, 0x07)):
        data = bytes([head_split, body_split]) + seed
        (out / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)
print(f"{len(SEEDS) * 2} seeds in {out}")
