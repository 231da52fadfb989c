import ArgumentParser
import Foundation
import Gateway

/// The `jetstream serve` options for auth, CORS, trusted proxies and limits. A repeatable option's
/// environment variable takes a comma-separated list.
struct AccessOptions: ParsableArguments {
    // Optional options take their environment/file fallback here rather than as a default value
    // (ArgumentParser deprecates optional options with defaults).
    var jwtSecretFile: String? { jwtSecretFileFlag ?? EnvironmentDefault.string("JETSTREAM_JWT_SECRET_FILE") }
    var jwtIssuer: String? { jwtIssuerFlag ?? EnvironmentDefault.string("JETSTREAM_JWT_ISSUER") }
    var jwtAudience: String? { jwtAudienceFlag ?? EnvironmentDefault.string("JETSTREAM_JWT_AUDIENCE") }
    var rateBurst: Double? {
        rateBurstFlag
            ?? EnvironmentDefault.string("JETSTREAM_RATE_BURST").map { _ in
                EnvironmentDefault.value("JETSTREAM_RATE_BURST", 1.0)
            }
    }

    @Option(
        name: .customLong("jwt-secret-file"), help: "File holding the HS256 shared secret. [JETSTREAM_JWT_SECRET_FILE]")
    var jwtSecretFileFlag: String?
    @Option(help: "PEM public key file, ES256 (P-256) or RS256 (RSA); repeatable. [JETSTREAM_JWT_PUBLIC_KEY]")
    var jwtPublicKey: [String] = EnvironmentDefault.list("JETSTREAM_JWT_PUBLIC_KEY")
    @Option(help: "JWKS file of public keys; repeatable. [JETSTREAM_JWKS_FILE]")
    var jwksFile: [String] = EnvironmentDefault.list("JETSTREAM_JWKS_FILE")
    @Option(name: .customLong("jwt-issuer"), help: "Required token issuer (iss). [JETSTREAM_JWT_ISSUER]")
    var jwtIssuerFlag: String?
    @Option(name: .customLong("jwt-audience"), help: "Required token audience (aud). [JETSTREAM_JWT_AUDIENCE]")
    var jwtAudienceFlag: String?
    @Option(help: "Scope glob anyone may read without a token; repeatable. [JETSTREAM_ANONYMOUS_READ]")
    var anonymousRead: [String] = EnvironmentDefault.list("JETSTREAM_ANONYMOUS_READ")
    @Option(help: "Scope glob anyone may write without a token; repeatable. [JETSTREAM_ANONYMOUS_WRITE]")
    var anonymousWrite: [String] = EnvironmentDefault.list("JETSTREAM_ANONYMOUS_WRITE")
    @Option(help: "Origin allowed by CORS ('*' only without credentials); repeatable. [JETSTREAM_CORS_ORIGIN]")
    var corsOrigin: [String] = EnvironmentDefault.list("JETSTREAM_CORS_ORIGIN")
    @Flag(help: "Allow credentials (cookies, Authorization) in CORS requests. [JETSTREAM_CORS_CREDENTIALS]")
    var corsCredentials = EnvironmentDefault.value("JETSTREAM_CORS_CREDENTIALS", false)
    @Option(
        help: "Proxy address or CIDR whose X-Forwarded-For/Forwarded is believed; repeatable. [JETSTREAM_TRUSTED_PROXY]"
    )
    var trustedProxy: [String] = EnvironmentDefault.list("JETSTREAM_TRUSTED_PROXY")
    @Option(help: "Requests a second per client (token subject, else address); 0 = off. [JETSTREAM_RATE_LIMIT]")
    var rateLimit = EnvironmentDefault.value("JETSTREAM_RATE_LIMIT", 0.0)
    @Option(
        name: .customLong("rate-burst"),
        help: "Requests a client may burst above the rate (default: twice the rate). [JETSTREAM_RATE_BURST]")
    var rateBurstFlag: Double?
    @Option(help: "Open event streams per client address. [JETSTREAM_MAX_STREAMS_PER_CLIENT]")
    var maxStreamsPerClient = EnvironmentDefault.value("JETSTREAM_MAX_STREAMS_PER_CLIENT", 100)
    @Option(help: "Open event streams in total. [JETSTREAM_MAX_STREAMS]")
    var maxStreams = EnvironmentDefault.value("JETSTREAM_MAX_STREAMS", 10_000)
    @Option(help: "Distinct scopes one GET /v1/events stream may carry. [JETSTREAM_MAX_SCOPES_PER_STREAM]")
    var maxScopesPerStream = EnvironmentDefault.value("JETSTREAM_MAX_SCOPES_PER_STREAM", 256)
    @Option(
        help:
            "Seconds after which an event stream is closed for the client to resume; 0 = never. [JETSTREAM_STREAM_MAX_AGE]"
    )
    var streamMaxAge = EnvironmentDefault.value("JETSTREAM_STREAM_MAX_AGE", 0.0)

    func validate() throws {
        guard rateLimit >= 0 else { throw ValidationError("--rate-limit must be ≥ 0") }
        if let rateBurst, rateBurst < 1 { throw ValidationError("--rate-burst must be at least 1") }
        guard maxStreamsPerClient >= 1, maxStreams >= 1, maxScopesPerStream >= 1 else {
            throw ValidationError(
                "--max-streams, --max-streams-per-client and --max-scopes-per-stream must be at least 1")
        }
        guard streamMaxAge >= 0 else { throw ValidationError("--stream-max-age must be ≥ 0") }
        do {
            try CORSPolicy(allowedOrigins: corsOrigin, allowCredentials: corsCredentials).validate()
            _ = try TrustedProxies(trustedProxy)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// The policy, reading the key files (a file that cannot be read is a clear error).
    func policy() throws -> AccessPolicy {
        var policy = AccessPolicy()
        if let jwtSecretFile {
            var secret = try Array(read(jwtSecretFile, "--jwt-secret-file").utf8)
            while let last = secret.last, last == 0x0A || last == 0x0D { secret.removeLast() }
            policy.auth.hmacSecrets = [secret]
        }
        policy.auth.publicKeysPEM = try jwtPublicKey.map { try read($0, "--jwt-public-key") }
        policy.auth.jwksJSON = try jwksFile.map { try read($0, "--jwks-file") }
        policy.auth.issuer = jwtIssuer
        policy.auth.audience = jwtAudience
        policy.auth.anonymousRead = ScopePatterns(anonymousRead)
        policy.auth.anonymousWrite = ScopePatterns(anonymousWrite)
        policy.cors = CORSPolicy(allowedOrigins: corsOrigin, allowCredentials: corsCredentials)
        policy.trustedProxies = try TrustedProxies(trustedProxy)
        policy.rateLimit = rateLimit
        policy.rateBurst = rateBurst
        policy.streamMaxAge = streamMaxAge > 0 ? .milliseconds(Int64(streamMaxAge * 1000)) : nil
        return policy
    }

    private func read(_ path: String, _ option: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ValidationError("\(option) \(path) cannot be read: \(error.localizedDescription)")
        }
    }
}

extension EnvironmentDefault {
    /// A comma-separated list from the environment, empty when unset.
    static func list(_ name: String) -> [String] {
        (string(name) ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }
}
