import Foundation
import JWTKit
import JetstreamModel
import Synchronization

/// Verifies bearer tokens (HS256, ES256, RS256) with jwt-kit and turns their claims into an
/// ``AccessGrant``. Verified tokens are cached (bounded), so a client's repeated requests cost a
/// dictionary look-up; `exp` and `nbf` are checked again on every use.
///
/// ```swift
/// let verifier = try TokenVerifier(configuration: auth)
/// let grant = try await verifier.verify(token)
/// ```
public final class TokenVerifier: Sendable {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case unsupportedAlgorithm(String)
        case badSignature
        case expired
        case notYetValid
        case wrongIssuer
        case wrongAudience
        case invalidClaims(String)

        public var description: String {
            switch self {
            case .malformed(let reason): "the token is malformed: \(reason)"
            case .unsupportedAlgorithm(let alg): "the token's algorithm \(alg) is not accepted (HS256, ES256, RS256)"
            case .badSignature: "the token's signature does not verify with any configured key"
            case .expired: "the token has expired"
            case .notYetValid: "the token is not valid yet (nbf)"
            case .wrongIssuer: "the token's issuer is not the one this server accepts"
            case .wrongAudience: "the token's audience does not include this server"
            case .invalidClaims(let reason): "the token's claims are invalid: \(reason)"
            }
        }
    }

    static let acceptedAlgorithms: Set<String> = ["HS256", "ES256", "RS256"]
    static let cacheCapacity = 10_000

    let configuration: AuthConfiguration
    private let keys: JWTKeyCollection
    private let cache = Mutex<[String: AccessGrant]>([:])

    /// Loads the configured keys; throws a message naming the key that cannot be used.
    public init(configuration: AuthConfiguration) async throws {
        self.configuration = configuration
        let keys = JWTKeyCollection()
        for (index, secret) in configuration.hmacSecrets.enumerated() {
            guard secret.count >= 32 else {
                throw ConfigurationError(
                    "an HS256 secret must be at least 32 bytes, the size of its hash (secret \(index + 1) has \(secret.count))"
                )
            }
            await keys.add(
                hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: JWKIdentifier(string: "hs256-\(index)"))
        }
        for (index, pem) in configuration.publicKeysPEM.enumerated() {
            let kid = JWKIdentifier(string: "pem-\(index)")
            if let key = try? ES256PublicKey(pem: pem) {
                await keys.add(ecdsa: key, kid: kid)
            } else if let key = try? Insecure.RSA.PublicKey(pem: pem) {
                await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid)
            } else {
                throw ConfigurationError(
                    "public key \(index + 1) is neither a P-256 (ES256) nor an RSA (RS256) PEM key")
            }
        }
        for (index, json) in configuration.jwksJSON.enumerated() {
            do {
                _ = try await keys.add(jwksJSON: json)
            } catch {
                throw ConfigurationError("JWKS \(index + 1) cannot be used: \(error)")
            }
        }
        self.keys = keys
    }

    public struct ConfigurationError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The grant of a token verified before, if it is still within its validity.
    public func cachedGrant(for token: String, now: Date = Date()) -> Result<AccessGrant, Failure>? {
        guard let grant = cache.withLock({ $0[token] }) else { return nil }
        if let expiry = grant.expiresAt, expiry <= now { return .failure(.expired) }
        return .success(grant)
    }

    /// Verifies `token`: signature, algorithm, `exp`, `nbf`, `iss`, `aud`.
    public func verify(_ token: String) async -> Result<AccessGrant, Failure> {
        if let cached = cachedGrant(for: token) { return cached }
        let header: JSONObject
        do {
            header = try Self.header(of: token)
        } catch {
            return .failure(error)
        }
        let alg = header["alg"]?.string ?? "(none)"
        guard Self.acceptedAlgorithms.contains(alg) else { return .failure(.unsupportedAlgorithm(alg)) }
        // RFC 7515 §4.1.11: extensions named critical must be understood; this gateway knows none.
        if header["crit"] != nil {
            return .failure(
                .malformed("the header names critical extensions (crit), which this server does not support"))
        }
        let claims: GatewayClaims
        do {
            claims = try await keys.verify(token, as: GatewayClaims.self, iteratingKeys: true)
        } catch let error as JWTError {
            switch error.errorType {
            case .claimVerificationFailure:
                if error.failedClaim is ExpirationClaim { return .failure(.expired) }
                if error.failedClaim is NotBeforeClaim { return .failure(.notYetValid) }
                return .failure(.invalidClaims(Self.plainReason(error.reason)))
            case .malformedToken:
                return .failure(.malformed(Self.plainReason(error.reason)))
            default:
                return .failure(.badSignature)
            }
        } catch {
            return .failure(.badSignature)
        }
        if let issuer = configuration.issuer, claims.iss?.value != issuer { return .failure(.wrongIssuer) }
        if let audience = configuration.audience, !(claims.aud?.value.contains(audience) ?? false) {
            return .failure(.wrongAudience)
        }
        let grant = AccessGrant(
            subject: claims.sub?.value ?? "token", read: ScopePatterns(claims.jetstream?.read ?? []),
            write: ScopePatterns(claims.jetstream?.write ?? []), expiresAt: claims.exp?.value,
            roles: Set(claims.roles ?? []), claims: Self.payload(of: token))
        cache.withLock { cache in
            if cache.count >= Self.cacheCapacity { cache.removeAll(keepingCapacity: true) }
            cache[token] = grant
        }
        return .success(grant)
    }

    /// A JWT library's reason in words for the client: a payload that does not decode names the
    /// claim at fault instead of repeating the decoder's internals (types, debug descriptions).
    static func plainReason(_ reason: String?) -> String {
        guard let reason, !reason.isEmpty else { return "the payload is not a JSON object of claims" }
        guard reason.contains("DecodingError") || reason.contains("Debug description") else { return reason }
        if let start = reason.range(of: "Path: ") {
            let rest = reason[start.upperBound...]
            let path = rest.range(of: ". Debug description").map { rest[..<$0.lowerBound] } ?? rest.prefix(64)
            if !path.isEmpty { return "the claim '\(path)' has the wrong type" }
        }
        return "the payload is not a JSON object of the claims this server reads"
    }

    static func header(of token: String) throws(Failure) -> JSONObject {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("a JWT has three dot-separated parts") }
        guard let object = jsonObject(base64URL: parts[0]) else {
            throw .malformed("the header is not base64url-encoded JSON")
        }
        return object
    }

    /// A verified token's claims as JSON, every member as signed (those the gateway does not read
    /// too): what a method gets as `claims`.
    static func payload(of token: String) -> JSONValue? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        return jsonObject(base64URL: parts[1]).map(JSONValue.object)
    }

    private static func jsonObject(base64URL part: Substring) -> JSONObject? {
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let value = try? JSONParser.parse(Array(data)) else {
            return nil
        }
        return value.object
    }
}

/// How the gateway authenticates and authorizes requests. With no key configured, auth is off:
/// every client may read and write every scope. With keys, only what the anonymous patterns name
/// is open without a token.
///
/// ```swift
/// var auth = AuthConfiguration()
/// auth.hmacSecrets = [Array("a shared secret of 32 bytes or more".utf8)]
/// auth.anonymousRead = ScopePatterns(["public-*"])
/// ```
public struct AuthConfiguration: Sendable {
    /// HS256 shared secrets (`--jwt-secret-file`).
    public var hmacSecrets: [[UInt8]] = []
    /// PEM public keys (`--jwt-public-key`): ES256 for a P-256 key, RS256 for an RSA key.
    public var publicKeysPEM: [String] = []
    /// JWKS documents (`--jwks-file`).
    public var jwksJSON: [String] = []
    /// The `iss` a token must carry, when set.
    public var issuer: String?
    /// A value the token's `aud` must contain, when set.
    public var audience: String?
    /// Scopes anyone may read, token or not (`--anonymous-read`).
    public var anonymousRead: ScopePatterns = .none
    /// Scopes anyone may write (`--anonymous-write`).
    public var anonymousWrite: ScopePatterns = .none

    public init() {}

    /// Whether any key is configured; without one, auth is disabled.
    public var isEnabled: Bool { !hmacSecrets.isEmpty || !publicKeysPEM.isEmpty || !jwksJSON.isEmpty }

    /// What a request without a token may do.
    public var anonymousGrant: AccessGrant {
        isEnabled
            ? AccessGrant(subject: nil, read: anonymousRead, write: anonymousWrite, expiresAt: nil)
            : AccessGrant(subject: nil, read: .all, write: .all, expiresAt: nil)
    }
}

/// The JWT claims the gateway reads: the standard ones and
/// `"jetstream": {"read": ["canvas-*"], "write": ["canvas-7"]}` and `"roles": ["editor"]`.
struct GatewayClaims: JWTPayload {
    struct Grants: Codable, Sendable {
        var read: [String]?
        var write: [String]?
    }

    var exp: ExpirationClaim?
    var nbf: NotBeforeClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?
    var sub: SubjectClaim?
    var jetstream: Grants?
    /// What the schema's `role:<name>` rules check.
    var roles: [String]?

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp?.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}
