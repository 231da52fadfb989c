import HTTP2
import Testing

/// `HTTP2UpgradeSettings.problem(in:)`: what makes an `HTTP2-Settings` header unusable for an
/// `Upgrade: h2c` (the server answers 400 instead of switching protocols).
@Suite struct HTTP2UpgradeSettingsTests {
    @Test(
        "usable payloads",
        arguments: [
            "",  // no settings at all
            "AAMAAABk",  // MAX_CONCURRENT_STREAMS = 100
            "AAMAAABkAAQAAP__",  // + INITIAL_WINDOW_SIZE = 65535 (base64url alphabet)
            "AAIAAAAA",  // ENABLE_PUSH = 0
            "AAUAAEAA",  // MAX_FRAME_SIZE = 16384
            "AAkAAAAB",  // an unknown setting is ignored (RFC 9113 §6.5.2)
        ])
    func usable(_ header: String) {
        #expect(HTTP2UpgradeSettings.problem(in: header) == nil)
    }

    @Test(
        "unusable payloads name what is wrong",
        arguments: [
            ("!!!notbase64$$", "not base64url"),
            ("AAMAAABkAAQ", "6-byte settings"),  // 8 bytes
            ("AAIAAAAC", "ENABLE_PUSH"),  // ENABLE_PUSH = 2
            ("AASAAAAA", "INITIAL_WINDOW_SIZE"),  // 2^31
            ("AAUAAAAB", "MAX_FRAME_SIZE"),  // 1
        ])
    func unusable(_ header: String, _ expected: String) throws {
        let problem = try #require(HTTP2UpgradeSettings.problem(in: header))
        #expect(problem.contains(expected), "\(problem)")
    }

    @Test("a reason is a fixed sentence: payloads wrong the same way get the same reason (a small metric label set)")
    func reasonsAreFixed() {
        // 8 and 14 bytes: both not whole 6-byte settings.
        #expect(
            HTTP2UpgradeSettings.problem(in: "AAMAAABkAAQ") == HTTP2UpgradeSettings.problem(in: "AAMAAABkAAMAAABkAAQ"))
        #expect(HTTP2UpgradeSettings.problem(in: "!!") == HTTP2UpgradeSettings.problem(in: "$$$$"))
    }
}
