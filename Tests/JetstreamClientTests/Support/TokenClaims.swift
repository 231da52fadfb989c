import JWTKit

/// The claims the gateway reads (docs/gateway.md, "Auth"): who, until when, and the scope
/// patterns the token may read and write.
struct TokenClaims: JWTPayload {
    struct Grants: Codable, Sendable {
        var read: [String]
        var write: [String]
    }

    var sub: SubjectClaim
    var exp: ExpirationClaim
    var jetstream: Grants

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}
