#!/usr/bin/env python3
"""Writes the seed corpora Fuzz/corpus/<target>/ (http1, json, changeset, mergepatch, http2): the
hand-written and fixture-derived inputs each libFuzzer target starts from. Files are named by the
SHA-1 of their content, so re-running only adds what is missing; inputs the fuzzer found and that
were merged into the same directories stay.

    Fuzz/make-corpus.py            # every target
    Fuzz/make-corpus.py json http2 # some

Input formats (see each harness's header comment):
- http1: two split-point bytes, then a request;
- json: the JSON text;
- changeset: an options byte (bit 0 fixture: demo/board; bit 1 small limits), then the body
  {"fragments":[…]};
- mergepatch: an options byte (bits 0-1 as changeset, bits 2-4 the target's index in pre-order),
  then the patch document;
- http2: an options byte (bits: 0-1 piece size, 2 streamed responses, 3 small limits, 4 graceful
  shutdown, 5 slow socket, 6 h2c upgrade, 7 deferred answers), then client frames after the preface.
"""
import hashlib
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
CASES = HERE.parent / "Tests" / "Fixtures" / "changeset-cases.json"


def write(target, seeds):
    out = HERE / "corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    new = 0
    for data in seeds:
        path = out / hashlib.sha1(data).hexdigest()[:16]
        if not path.exists():
            path.write_bytes(data)
            new += 1
    print(f"{target}: {len(seeds)} seeds ({new} new) in {out}")


# MARK: http1

HOST = b"Host: t\r\n"
HTTP1 = [
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


def http1():
    # Each request twice: the whole head at once and cut half-way; the chunked body whole and at byte 7.
    return [bytes([h, b]) + seed for seed in HTTP1 for h, b in ((0xFF, 0x00), (0x80, 0x07))]


# MARK: json

JSON_TEXTS = [
    b'{"fragments":[]}',
    b'{"a":[1,2.5e3,-0,0.1E-7,1e400,-12345678901234567890123],"b":null,"c":true,"d":false}',
    b'  [ "x\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/\\b\\f\\r" , {} , [] ]  ',
    b'"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"',
    b'{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,'
    b'"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18}',
    b'"5F0C61D2-0B45-4F5E-9E8B-6F1B7D2C3A10"',
    b"[" * 64 + b"]" * 64,
    b"0",
    b"-1.5e-3",
    b"null",
    # Refused: each one rule of the strict grammar.
    b"[1,]",
    b'{"a":1,}',
    b"[01]",
    b"[1.]",
    b"[.5]",
    b"[1e]",
    b"[NaN]",
    b"[Infinity]",
    b"// c\n1",
    b'{"a":1,"a":2}',
    b'{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,'
    b'"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k1":18}',
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\ud800\\u0041"',
    b'"\\u12G4"',
    b'"\\x"',
    b'"a\x01b"',
    b'"\xff\xfe"',
    b'"\xc0\xaf"',
    b'"\xed\xa0\x80"',
    b"[" * 65 + b"]" * 65,
    b'{"a" 1}',
    b"[1 2]",
    b"tru",
    b"nul",
    b"1 2",
    b'"unterminated',
    b"",
    b"   ",
    b"\xef\xbb\xbf{}",
]


def json_seeds():
    return JSON_TEXTS


# MARK: changeset and mergepatch

ROOT = "00000000-0000-4000-8000-000000000001"


def uuid(n):
    return "00000000-0000-4000-8000-%012x" % n


def body(fragments):
    return json.dumps({"fragments": fragments}, separators=(",", ":")).encode()


def frag(kind, n, cls, props=None):
    fragment = {"type": kind, "uuid": uuid(n) if isinstance(n, int) else n, "clsName": cls}
    if props is not None:
        fragment["properties"] = props
    return fragment


# The demo fixture: Canvas 0x1 with shapes 0x101, 0x102, 0x103 (Fuzz/ModelFuzzSupport.swift).
DEMO_SETS = [
    [frag("change", 1, "Canvas", {"shapes": {"insert": [uuid(0x901)]}}), frag("add", 0x901, "Shape", {"x": 1, "y": 2})],
    [frag("add", 0x901, "Shape", {"x": 1, "y": 2, "width": 3.5, "color": 4278190335, "label": "new", "kind": "oval"}),
     frag("change", 1, "Canvas", {"shapes": {"insert": [uuid(0x901)], "before": uuid(0x102)}})],
    [frag("change", 0x101, "Shape", {"x": 12.5, "y": -3, "label": "moved"})],
    [frag("change", 1, "Canvas", {"shapes": [uuid(0x103), uuid(0x101)]})],
    [frag("change", 1, "Canvas", {"shapes": {"remove": [uuid(0x102)]}})],
    [frag("change", 1, "Canvas", {"name": None, "shapes": []})],
    [frag("change", 0x102, "Shape", {"width": -1, "kind": "star", "color": 4294967296})],
    [frag("change", 0x102, "Shape", {"label": "x" * 201})],
    [frag("add", 0x901, "Shape", {"x": 1, "y": 2})],
    [frag("add", 0x101, "Shape", {"x": 1, "y": 2})],
    [frag("change", 0x999, "Shape", {"x": 1})],
    [frag("change", 0x101, "Canvas", {"name": "n"})],
    [frag("change", 1, "Canvas", {"shapes": [uuid(0x101), uuid(0x101), uuid(0x999)]})],
    [{"type": "remove", "uuid": uuid(0x101), "clsName": "Shape"}, {"type": "change"}, 5, None,
     {"type": "add", "uuid": "not-a-uuid", "clsName": "Shape"}, {"type": "add", "uuid": uuid(0x901), "clsName": ""},
     {"type": "add", "uuid": uuid(0x901), "clsName": "Shape", "properties": []},
     {"type": "add", "uuid": uuid(0x901), "clsName": "Shape", "extra": 1}],
    [frag("add", 0x900 + i, "Shape", {"x": i, "y": i}) for i in range(10)]
    + [frag("change", 1, "Canvas", {"shapes": {"insert": [uuid(0x900 + i) for i in range(10)]}})],
]


def changeset():
    seeds = [bytes([options]) + body(fragments) for fragments in DEMO_SETS for options in (0, 2)]
    cases = json.loads(CASES.read_text())["cases"]
    # The board fixture starts from the cases' state (plus a pinned item, an owner and partners).
    seeds += [bytes([options]) + body(case["changeset"]) for case in cases for options in (1, 3)]
    seeds += [b"\x00{}", b"\x01{\"fragments\":{}}", b"\x00[]"]
    return seeds


# Pre-order of the fixtures: demo [root, 0x101, 0x102, 0x103]; board [root, 0x103 (owner), 0x101
# (its partner), 0x102, 0x201, 0x202, 0x301]; then one missing UUID. Bits 2-4 of the options byte.
def target(index):
    return index << 2


PATCHES = [
    # demo (fixture bit 0 = 0)
    (target(0), {"name": "renamed"}),
    (target(0), {"name": None, "shapes": [{"x": 1, "y": 2}, uuid(0x101), {"uuid": uuid(0x102), "label": "kept"}]}),
    (target(0), {"shapes": {"insert": [{"x": 5, "y": 6, "kind": "oval"}], "before": {"uuid": uuid(0x101)}}}),
    (target(0), {"shapes": {"remove": [{"uuid": uuid(0x103)}, uuid(0x101)]}}),
    (target(0), {"shapes": [{"uuid": "bad", "x": 1}, {"uuid": 5}, {"clsName": 7}, {"clsName": "Nope"}]}),
    (target(0), {"uuid": uuid(1), "clsName": "Canvas", "shapes": []}),
    (target(0), {"uuid": uuid(2), "clsName": "Shape"}),
    (target(1), {"x": 12, "y": -4.5, "label": "hi", "color": None}),
    (target(1), {"width": -1, "label": 5, "nope": 1, "a/b~c": 2}),
    (target(2), {"kind": "star"}),
    (target(4), {"x": 1}),
    (target(0), [1, 2]),
    (target(0), "x"),
    (target(0), {"shapes": [{"uuid": uuid(0xabc), "x": 1, "y": 1}, {"uuid": uuid(0xabc), "x": 2, "clsName": "Canvas"}]}),
    # board (fixture bit 0 = 1)
    (1 | target(0), {"owner": {"label": "o", "leaves": [{"value": 3}, {"value": 300}]}}),
    (1 | target(0), {"owner": {"uuid": uuid(0x101), "label": "now owner"}, "pinned": {"insert": [{"clsName": "Special", "bonus": 1}]}}),
    (1 | target(0), {"items": {"remove": [{"uuid": uuid(0x101)}], "insert": [{"label": "n", "partner": {"uuid": uuid(0x103)}}]}}),
    (1 | target(0), {"items": [{"clsName": "Other", "label": "x"}], "others": [{"label": "o2"}]}),
    (1 | target(0), {"words": ["a", "toolongword"], "counts": [300], "ratios": [-1], "code": "abc", "priority": 4}),
    (1 | target(0), {"title": "t", "level": -128, "size": 65535, "score": 10, "ratio": -1, "due": 1.5e9, "active": True}),
    (1 | target(1), {"partner": {"partner": {"partner": {"label": "deep"}}}}),
    (1 | target(1), {"bonus": 18446744073709551615, "stamp": 0, "leaves": {"insert": [{"uuid": uuid(0x201)}]}}),
    (1 | target(3), {"leaves": [], "label": "i2"}),
    (1 | target(4), {"value": 7, "note": None}),
    (1 | target(6), {"label": "o"}),
    (1 | target(7), {"label": "missing"}),
    (3 | target(0), {"items": [{"label": "a"}, {"label": "b"}, {"label": "c"}, {"label": "d"}, {"label": "e"}, {"label": "f"}]}),
    (3 | target(0), {"name": "a string longer than sixteen bytes"}),
    # Member names whose '/' or '~' is followed by a combining mark (one Character, two scalars):
    # the pointer must escape them by scalar (the first finding of this target).
    (1 | target(0), {"a/\u0301b": 1, "c~\u0301d": 2, "\u0488rds": ["a"], "priority": 3}),
    (target(0), {"shapes": [{"x": 1, "y": 2, "/\u0301": 1}]}),
]


def mergepatch():
    return [bytes([options]) + json.dumps(doc, separators=(",", ":")).encode() for options, doc in PATCHES]


# MARK: http2


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WINDOW, CONT = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 1, 1, 4, 8, 0x20


def hpack_int(value, prefix, first):
    limit = (1 << prefix) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes(out + [value])


def hpack_str(text):
    data = text.encode() if isinstance(text, str) else text
    return hpack_int(len(data), 7, 0) + data


def indexed(index):
    return hpack_int(index, 7, 0x80)


def literal(name, value, indexing=False):
    """A literal field with a literal name, without indexing (or added to the dynamic table)."""
    return (b"\x40" if indexing else b"\x00") + hpack_str(name) + hpack_str(value)


def request(method="GET", path="/", extra=()):
    block = {"GET": indexed(2), "POST": indexed(3)}.get(method) or literal(":method", method)
    block += indexed(6) + (indexed(4) if path == "/" else literal(":path", path)) + literal(":authority", "t")
    for name, value in extra:
        block += literal(name, value)
    return block


def settings(*pairs):
    return frame(SETTINGS, 0, 0, b"".join(k.to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in pairs))


H2 = [
    frame(HEADERS, END_STREAM | END_HEADERS, 1, request()),
    settings() + frame(SETTINGS, ACK, 0) + frame(HEADERS, END_STREAM | END_HEADERS, 1, request("HEAD", "/x")),
    frame(HEADERS, END_HEADERS, 1, request("POST", "/v1/scopes/demo/changesets",
                                           [("content-type", "application/json"), ("content-length", "5")]))
    + frame(DATA, 0, 1, b"hel") + frame(DATA, END_STREAM, 1, b"lo"),
    frame(HEADERS, END_HEADERS, 1, request("POST", "/a")) + frame(HEADERS, END_HEADERS, 3, request("POST", "/b"))
    + frame(DATA, 0, 3, b"b" * 40) + frame(DATA, 0, 1, b"a" * 40) + frame(DATA, END_STREAM, 1, b"")
    + frame(DATA, END_STREAM, 3, b"b" * 40),
    frame(HEADERS, END_STREAM, 1, request()[:5]) + frame(CONT, 0, 1, request()[5:9]) + frame(CONT, END_HEADERS, 1, request()[9:]),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, request()) + frame(RST, 0, 1, (8).to_bytes(4, "big"))
    + b"".join(frame(HEADERS, END_STREAM | END_HEADERS, s, request()) + frame(RST, 0, s, (8).to_bytes(4, "big"))
               for s in range(3, 23, 2)),
    frame(PING, 0, 0, b"12345678") + frame(PING, ACK, 0, b"12345678") + frame(WINDOW, 0, 0, (1 << 20).to_bytes(4, "big"))
    + frame(HEADERS, END_STREAM | END_HEADERS, 1, request()),
    settings((1, 0), (3, 2), (4, 0), (5, 16384), (6, 100)) + frame(HEADERS, END_STREAM | END_HEADERS, 1, request())
    + frame(WINDOW, 0, 1, (1000).to_bytes(4, "big")) + frame(WINDOW, 0, 0, (1000).to_bytes(4, "big")),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, request()) + frame(GOAWAY, 0, 0, (1).to_bytes(4, "big") + (0).to_bytes(4, "big") + b"bye")
    + frame(HEADERS, END_STREAM | END_HEADERS, 3, request()),
    frame(PRIORITY, 0, 3, (0).to_bytes(4, "big") + b"\x0f")
    + frame(HEADERS, END_STREAM | END_HEADERS | PADDED | PRIO, 1, b"\x03" + (3).to_bytes(4, "big") + b"\x20" + request() + b"\0\0\0"),
    frame(HEADERS, END_HEADERS, 1, request("POST", "/t")) + frame(DATA, PADDED, 1, b"\x02ab\0\0")
    + frame(HEADERS, END_STREAM | END_HEADERS, 1, literal("x-trailer", "v")),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, request(extra=[("x-big", "v" * 300)])),
    # HPACK: one 200-byte field into the dynamic table, then referenced again and again.
    frame(HEADERS, END_STREAM | END_HEADERS, 1, request() + literal("x-r", "r" * 200, indexing=True) + indexed(62) * 120),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, request(extra=[("X-Upper", "v")])),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, request(extra=[("connection", "keep-alive")])),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, indexed(2) + indexed(6) + literal(":authority", "t")),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, request() + literal(":status", "200")),
    frame(HEADERS, END_STREAM | END_HEADERS, 3, request()) + frame(HEADERS, END_STREAM | END_HEADERS, 1, request()),
    frame(HEADERS, END_HEADERS, 1, request("POST", "/", [("content-length", "3")])) + frame(DATA, END_STREAM, 1, b"abcd"),
    frame(HEADERS, END_HEADERS, 1, request("POST", "/", [("content-length", "100")])) + frame(DATA, END_STREAM, 1, b"x" * 100),
    frame(DATA, 0, 0, b"x") + frame(WINDOW, 0, 0, (0x7FFFFFFF).to_bytes(4, "big")),
    settings((4, 0)) + frame(HEADERS, END_STREAM | END_HEADERS, 1, request())
    + frame(WINDOW, 0, 1, (10).to_bytes(4, "big")) + frame(WINDOW, 0, 1, (100).to_bytes(4, "big")),
    b"".join(frame(HEADERS, END_STREAM | END_HEADERS, s, request("GET", f"/{s}")) for s in range(1, 21, 2)),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, literal(":method", "CONNECT") + literal(":authority", "t:443")),
    frame(HEADERS, END_STREAM | END_HEADERS, 1, literal(":method", "BREW") + indexed(6) + indexed(4)),
    frame(PUSH, END_HEADERS, 1, (2).to_bytes(4, "big") + request()),
    frame(0x0a, 0, 0, b"unknown frame type") + frame(HEADERS, END_STREAM | END_HEADERS, 1, request()),
    frame(SETTINGS, ACK, 0, b"x"),
]


def http2():
    # Each exchange whole with immediate whole responses, and once more cut in 7-byte pieces with
    # streamed responses, small limits and answers deferred; a few with the other options.
    seeds = [bytes([options]) + seed for seed in H2 for options in (0x00, 0x8E)]
    seeds += [bytes([options]) + H2[3] for options in (0x01, 0x13, 0x20, 0x2B)]
    seeds += [bytes([0x40]) + settings() + frame(WINDOW, 0, 1, (5).to_bytes(4, "big")),
              bytes([0x48]) + frame(HEADERS, END_STREAM | END_HEADERS, 3, request())]
    return seeds


TARGETS = {"http1": http1, "json": json_seeds, "changeset": changeset, "mergepatch": mergepatch, "http2": http2}

if __name__ == "__main__":
    names = sys.argv[1:] or list(TARGETS)
    for name in names:
        if name not in TARGETS:
            sys.exit(f"make-corpus.py: unknown target {name} (known: {', '.join(TARGETS)})")
        write(name, TARGETS[name]())
