import Foundation
import JWTKit

/// Mints HS256 tokens for a gateway started with `--jwt-secret-file`, and counts them: a client's
/// token provider that is asked again after `401` or `event: auth-expired`.
actor TokenMinter {
    private let keys = JWTKeyCollection()
    private(set) var minted = 0
    private var expiredToHandOut = 0

    init(secret: String) async {
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
    }

    /// The next `count` tokens are already expired (the gateway answers `401`).
    func expireNext(_ count: Int) {
        expiredToHandOut = count
    }

    /// A token for `canvas-*` (read and write) that expires `lifetime` from now, for `subject`.
    func mint(lifetime: TimeInterval, subject: String = "client-test") async throws -> String {
        minted += 1
        var lifetime = lifetime
        if expiredToHandOut > 0 {
            expiredToHandOut -= 1
            lifetime = -60
        }
        let claims = TokenClaims(
            sub: SubjectClaim(value: subject), exp: ExpirationClaim(value: Date().addingTimeInterval(lifetime)),
            jetstream: TokenClaims.Grants(read: ["canvas-*"], write: ["canvas-*"]))
        return try await keys.sign(claims)
    }
}
