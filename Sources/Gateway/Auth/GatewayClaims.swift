import JWTKit

/// The JWT claims the gateway reads: the standard ones and
/// `"jetstream": {"read": ["canvas-*"], "write": ["canvas-7"]}`.
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

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp?.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}
