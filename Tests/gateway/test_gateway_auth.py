"""Auth (JWT bearer tokens), anonymous patterns and token expiry on event streams, against the
real binary. Keys and tokens are made here with PyJWT and cryptography."""
from __future__ import annotations

import subprocess
import time

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from gateway_helpers import Api, add, assert_problem, change, new_uuid, scope_name
from sse_stream import SSEStream

SECRET = "a-test-secret-of-more-than-32-bytes!!"
ISSUER = "https://issuer.test"
AUDIENCE = "jetstream-tests"


def token(key=SECRET, alg="HS256", read=("canvas-*",), write=("canvas-*",), exp_in=600, **claims):
    payload = {"sub": claims.pop("sub", "ada"), "iss": ISSUER, "aud": AUDIENCE,
               "exp": int(time.time()) + exp_in,
               "jetstream": {"read": list(read), "write": list(write)}}
    payload.update(claims)
    return jwt.encode(payload, key, algorithm=alg)


def bearer(value: str) -> dict:
    return {"Authorization": f"Bearer {value}"}


@pytest.fixture(scope="module")
def hs_server(jetstream_bin, tmp_path_factory):
    from conftest import ServerPool
    base = tmp_path_factory.mktemp("auth-hs")
    secret = base / "secret"
    secret.write_text(SECRET + "\n")
    pool = ServerPool(jetstream_bin, base)
    yield pool("--jwt-secret-file", str(secret), "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE,
               "--anonymous-read", "canvas-public-*", "--anonymous-write", "canvas-open-*")
    pool.stop_all()


@pytest.fixture(scope="module")
def hs(hs_server):
    client = Api(hs_server.url)
    yield client
    client.close()


def create(api: Api, name: str, tok: str | None) -> httpx.Response:
    return api.create(name, headers=bearer(tok) if tok else None)


def test_without_token_is_401_with_challenge(hs):
    response = hs.http.get("/v1/scopes/canvas-1")
    body = assert_problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"].startswith('Bearer realm="jetstream"')
    assert "error=" not in response.headers["www-authenticate"]
    assert "token" in body["detail"]


def test_valid_token_reads_and_writes_its_scopes(hs):
    name = scope_name()
    tok = token()
    assert create(hs, name, tok).status_code == 201
    state = hs.http.get(f"/v1/scopes/{name}", headers=bearer(tok))
    assert state.status_code == 200
    root = state.json()["rootUUID"]
    shape = new_uuid()
    posted = hs.http.post(f"/v1/scopes/{name}/changesets", headers=bearer(tok),
                          json={"fragments": [add(shape, "Shape", x=1, y=2),
                                              change(root, "Canvas", shapes=[shape])]})
    assert posted.status_code == 200, posted.text
    assert hs.http.get(f"/v1/scopes/{name}/changesets?since=0", headers=bearer(tok)).status_code == 200
    assert hs.http.get(f"/v1/scopes/{name}/objects/{shape}", headers=bearer(tok)).status_code == 200


@pytest.mark.parametrize("tok, why", [
    (lambda: token(exp_in=-30), "expired"),
    (lambda: token(nbf=int(time.time()) + 3600), "not valid yet"),
    (lambda: token(iss="https://other.test"), "issuer"),
    (lambda: token(aud="someone-else"), "audience"),
    (lambda: token(key="another-secret-of-more-than-32-bytes!!"), "signature"),
    (lambda: jwt.encode({"sub": "ada", "exp": int(time.time()) + 600,
                         "jetstream": {"read": ["*"], "write": ["*"]}}, None, algorithm="none"), "algorithm"),
    (lambda: "not.a.jwt", "malformed"),
])
def test_invalid_tokens_are_401_invalid_token(hs, tok, why):
    response = hs.http.get("/v1/scopes/canvas-1", headers=bearer(tok()))
    body = assert_problem(response, 401)
    assert body["type"] in ("/problems/unauthorized", "/problems/token-expired")
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge, challenge
    assert why in body["detail"], body["detail"]


@pytest.mark.parametrize("claims,claim", [
    ({"sub": 5}, "sub"), ({"exp": "tomorrow"}, "exp"), ({"jetstream": {"read": "canvas-*"}}, "jetstream.read"),
])
def test_a_claim_of_the_wrong_type_is_named_without_decoder_internals(hs, claims, claim):
    response = hs.http.get("/v1/scopes/canvas-1", headers=bearer(token(**claims)))
    detail = assert_problem(response, 401)["detail"]
    assert f"the claim '{claim}' has the wrong type" in detail, detail
    for internal in ("DecodingError", "Debug description", "Swift.", "Array<Any>", "typeMismatch"):
        assert internal not in detail, detail


def test_a_token_with_critical_extensions_is_refused(hs):
    # RFC 7515 §4.1.11: a header naming extensions the recipient does not understand is invalid.
    payload = {"sub": "ada", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600,
               "jetstream": {"read": ["canvas-*"], "write": ["canvas-*"]}}
    critical = jwt.encode(payload, SECRET, algorithm="HS256", headers={"crit": ["x-ext"], "x-ext": 1})
    detail = assert_problem(hs.http.get("/v1/scopes/canvas-1", headers=bearer(critical)), 401)["detail"]
    assert "crit" in detail, detail
    plain = jwt.encode(payload, SECRET, algorithm="HS256")
    assert hs.http.get("/v1/scopes", headers=bearer(plain)).status_code == 200


def test_expired_token_names_its_own_problem(hs):
    assert_problem(hs.http.get("/v1/scopes/canvas-1", headers=bearer(token(exp_in=-30))), 401, "token-expired")


def test_outside_its_claims_is_403(hs):
    name = scope_name()
    assert create(hs, name, token()).status_code == 201
    other = token(read=("other-*",), write=("other-*",))
    response = hs.http.get(f"/v1/scopes/{name}", headers=bearer(other))
    assert_problem(response, 403, "forbidden")
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
    assert_problem(hs.http.delete(f"/v1/scopes/{name}", headers=bearer(other)), 403, "forbidden")


def test_write_does_not_imply_read(hs):
    name = scope_name()
    writer = token(read=(), write=("canvas-*",))
    assert create(hs, name, writer).status_code == 201
    assert_problem(hs.http.get(f"/v1/scopes/{name}", headers=bearer(writer)), 403, "forbidden")


def test_read_only_token_cannot_write(hs):
    reader = token(read=("canvas-*",), write=())
    assert_problem(create(hs, scope_name(), reader), 403, "forbidden")


def test_token_in_query_and_cookie(hs):
    name = scope_name()
    tok = token()
    assert create(hs, name, tok).status_code == 201
    assert hs.http.get(f"/v1/scopes/{name}", params={"access_token": tok}).status_code == 200
    with httpx.Client(base_url=str(hs.http.base_url), cookies={"jetstream_token": tok}) as with_cookie:
        assert with_cookie.get(f"/v1/scopes/{name}").status_code == 200
    with SSEStream(str(hs.http.base_url), f"/v1/scopes/{name}/events?access_token={tok}") as stream:
        assert stream.status == 200
        assert stream.expect_event().type == "snapshot"


def test_malformed_authorization_header_is_401(hs):
    response = hs.http.get("/v1/scopes/canvas-1", headers={"Authorization": "Basic YWRhOmFkYQ=="})
    assert_problem(response, 401, "unauthorized")
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_anonymous_patterns(hs):
    public = scope_name("canvas-public")
    # Anonymous read of public-* but no anonymous write there: creating it needs a token.
    assert_problem(create(hs, public, None), 401, "unauthorized")
    assert create(hs, public, token(write=("canvas-public-*",))).status_code == 201
    assert hs.http.get(f"/v1/scopes/{public}").status_code == 200
    # canvas-open-* is anonymously writable but not readable without a token.
    opened = scope_name("canvas-open")
    assert create(hs, opened, None).status_code == 201
    assert_problem(hs.http.get(f"/v1/scopes/{opened}"), 401, "unauthorized")


def test_scope_list_shows_only_readable_scopes(hs):
    mine, theirs = scope_name("canvas-mine"), scope_name("canvas-theirs")
    assert create(hs, mine, token()).status_code == 201
    assert create(hs, theirs, token()).status_code == 201
    assert create(hs, scope_name("canvas-public"), token(write=("canvas-public-*",))).status_code == 201
    names = {s["name"] for s in hs.http.get(
        "/v1/scopes?limit=1000", headers=bearer(token(read=("canvas-mine-*",)))).json()["scopes"]}
    assert mine in names and theirs not in names
    anonymous = {s["name"] for s in hs.http.get("/v1/scopes?limit=1000").json()["scopes"]}
    assert anonymous and all(n.startswith("canvas-public-") for n in anonymous)


def test_public_endpoints_need_no_token(hs):
    for path in ("/healthz", "/readyz", "/openapi.yaml", "/v1/schema"):
        assert hs.http.get(path).status_code == 200, path


def test_stream_ends_at_token_expiry_with_event(hs):
    name = scope_name()
    assert create(hs, name, token()).status_code == 201
    short = token(exp_in=3)
    with SSEStream(str(hs.http.base_url), f"/v1/scopes/{name}/events", bearer(short)) as stream:
        assert stream.status == 200
        events = stream.read_to_end(timeout=60)
    assert events[0].type == "snapshot"
    assert events[-1].type == "auth-expired", [e.type for e in events]
    problem = events[-1].json()
    assert problem["type"] == "/problems/token-expired" and problem["status"] == 401


@pytest.fixture(scope="module")
def key_files(tmp_path_factory):
    base = tmp_path_factory.mktemp("keys")
    ec_key = ec.generate_private_key(ec.SECP256R1())
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    paths = {}
    for name, key in (("ec", ec_key), ("rsa", rsa_key)):
        path = base / f"{name}.pem"
        path.write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        paths[name] = path
    return ec_key, rsa_key, paths


def test_es256_and_rs256_public_keys(start_server, key_files):
    ec_key, rsa_key, paths = key_files
    server = start_server("--jwt-public-key", str(paths["ec"]), "--jwt-public-key", str(paths["rsa"]))
    with _api(server) as api:
        name = scope_name()
        es = jwt.encode({"sub": "es", "exp": int(time.time()) + 600,
                         "jetstream": {"read": ["canvas-*"], "write": ["canvas-*"]}}, ec_key, algorithm="ES256")
        rs = jwt.encode({"sub": "rs", "exp": int(time.time()) + 600,
                         "jetstream": {"read": ["canvas-*"], "write": []}}, rsa_key, algorithm="RS256")
        assert create(api, name, es).status_code == 201
        assert api.http.get(f"/v1/scopes/{name}", headers=bearer(rs)).status_code == 200
        assert_problem(create(api, scope_name(), rs), 403, "forbidden")
        # A key the server does not know, and HS256 signed with the public key's text.
        stranger = ec.generate_private_key(ec.SECP256R1())
        forged = jwt.encode({"sub": "x", "exp": int(time.time()) + 600}, stranger, algorithm="ES256")
        assert_problem(api.http.get(f"/v1/scopes/{name}", headers=bearer(forged)), 401, "unauthorized")
        hs = _hs256_with_raw_key(paths["rsa"].read_bytes())
        assert_problem(api.http.get(f"/v1/scopes/{name}", headers=bearer(hs)), 401, "unauthorized")


def _hs256_with_raw_key(key: bytes) -> str:
    import base64
    import hashlib
    import hmac
    import json

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps({"sub": "x", "exp": int(time.time()) + 600,
                           "jetstream": {"read": ["*"], "write": ["*"]}}).encode())
    signature = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


class _api:
    def __init__(self, server):
        self.api = Api(server.url)

    def __enter__(self):
        return self.api

    def __exit__(self, *exc):
        self.api.close()


def test_open_by_default_and_says_so(start_server):
    server = start_server()
    api = Api(server.url)
    try:
        assert api.create(scope_name()).status_code == 201
    finally:
        api.close()
    log = server.log_path.read_text()
    assert "auth disabled: anonymous read and write on every scope" in log
    assert "warning" in [line for line in log.splitlines() if "auth disabled" in line][0]


def test_unusable_key_file_is_a_clear_start_error(jetstream_bin, tmp_path):
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    result = subprocess.run([str(jetstream_bin), "serve", "--port", "0", "--data-dir", str(tmp_path / "d"),
                             "--jwt-public-key", str(bad)], capture_output=True, timeout=120)
    assert result.returncode != 0
    assert b"neither a P-256" in result.stderr


def test_jwks_file(start_server, tmp_path):
    import json

    ec_key = ec.generate_private_key(ec.SECP256R1())
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    keys = []
    for kid, alg, key, algorithm in (("ec-1", "ES256", ec_key, jwt.algorithms.ECAlgorithm),
                                     ("rsa-1", "RS256", rsa_key, jwt.algorithms.RSAAlgorithm)):
        jwk = json.loads(algorithm.to_jwk(key.public_key()))
        jwk.update({"kid": kid, "alg": alg, "use": "sig"})
        keys.append(jwk)
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": keys}))
    server = start_server("--jwks-file", str(jwks))
    claims = {"sub": "k", "exp": int(time.time()) + 600, "jetstream": {"read": ["canvas-*"], "write": ["canvas-*"]}}
    with _api(server) as api:
        name = scope_name()
        es = jwt.encode(claims, ec_key, algorithm="ES256", headers={"kid": "ec-1"})
        rs = jwt.encode(claims, rsa_key, algorithm="RS256", headers={"kid": "rsa-1"})
        assert create(api, name, es).status_code == 201
        assert api.http.get(f"/v1/scopes/{name}", headers=bearer(rs)).status_code == 200
        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        forged = jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": "rsa-1"})
        assert_problem(api.http.get(f"/v1/scopes/{name}", headers=bearer(forged)), 401, "unauthorized")


def test_short_hs256_secret_is_a_clear_start_error(jetstream_bin, tmp_path):
    # JWTKit asserts (and would crash a debug build) on an HMAC key shorter than its hash.
    secret = tmp_path / "short-secret"
    secret.write_text("twenty-nine-bytes-of-a-secret")
    result = subprocess.run([str(jetstream_bin), "serve", "--port", "0", "--data-dir", str(tmp_path / "d"),
                             "--jwt-secret-file", str(secret)], capture_output=True, timeout=120)
    assert result.returncode != 0
    assert b"at least 32 bytes" in result.stderr
    assert b"has 29" in result.stderr


def test_a_token_in_the_query_never_reaches_the_access_log(hs_server, hs):
    name = scope_name()
    secret_token = token()
    assert create(hs, name, secret_token).status_code == 201
    signature = secret_token.rsplit(".", 1)[1]
    answer = hs.http.get(f"/v1/scopes/{name}", params={"access_token": secret_token})
    assert answer.status_code == 200
    log = hs_server.log_path.read_text()
    assert f"/v1/scopes/{name}?access_token=REDACTED" in log, log[-2000:]
    assert signature not in log
