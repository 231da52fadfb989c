import HTTPServer
import Testing

/// Credentials sent in the URL never reach the access log.
@Suite struct AccessLogRedactionTests {
    private let names: Set<String> = ["access_token"]

    @Test(
        "a token in the query is replaced; everything else stays byte for byte",
        arguments: [
            ("/v1/scopes/a/events?access_token=eyJ.sig", "/v1/scopes/a/events?access_token=REDACTED"),
            ("/e?lastEventId=4&access_token=abc&x=%20y", "/e?lastEventId=4&access_token=REDACTED&x=%20y"),
            ("/e?access%5Ftoken=abc", "/e?access%5Ftoken=REDACTED"),
            ("/e?access_token", "/e?access_token=REDACTED"),
            ("/e?access_token=a&access_token=b", "/e?access_token=REDACTED&access_token=REDACTED"),
            ("/e?access_tokens=keep&token=keep", "/e?access_tokens=keep&token=keep"),
            ("/e", "/e"),
            ("/e?", "/e?"),
            ("/e?&&", "/e?&&"),
        ])
    func redacts(target: String, expected: String) {
        #expect(AccessLogEntry.redact(target: target, parameters: names) == expected)
    }

    @Test("without names to redact the target is kept")
    func nothingToRedact() {
        #expect(AccessLogEntry.redact(target: "/e?access_token=abc", parameters: []) == "/e?access_token=abc")
    }
}
