import HTTPTypes
import Testing

@testable import Gateway

@Suite struct ScopePatternTests {
    @Test func globsMatchWholeNames() {
        let patterns = ScopePatterns(["canvas-*", "demo", "team-?-board"])
        #expect(patterns.matches("canvas-7"))
        #expect(patterns.matches("demo"))
        #expect(patterns.matches("team-a-board"))
        #expect(!patterns.matches("demo-2"))
        #expect(!patterns.matches("team-ab-board"))
        #expect(!ScopePatterns.none.matches("demo"))
        #expect(ScopePatterns.all.matches("anything"))
    }

    @Test func writeDoesNotImplyRead() {
        let grant = AccessGrant(subject: "ada", read: .none, write: ScopePatterns(["canvas-*"]), expiresAt: nil)
        #expect(grant.allows(.write, scope: "canvas-1"))
        #expect(!grant.allows(.read, scope: "canvas-1"))
    }

    @Test func authDisabledOpensEverythingAndEnabledOpensOnlyPatterns() {
        var auth = AuthConfiguration()
        #expect(auth.anonymousGrant.allows(.write, scope: "x"))
        auth.hmacSecrets = [Array("0123456789abcdef0123".utf8)]
        auth.anonymousRead = ScopePatterns(["public-*"])
        #expect(auth.anonymousGrant.allows(.read, scope: "public-1"))
        #expect(!auth.anonymousGrant.allows(.write, scope: "public-1"))
        #expect(!auth.anonymousGrant.allows(.read, scope: "canvas-1"))
    }
}

@Suite struct ClientAddressTests {
    @Test func peerHosts() {
        #expect(ClientAddress.host(ofPeer: "127.0.0.1:5000") == "127.0.0.1")
        #expect(ClientAddress.host(ofPeer: "[::1]:5000") == "::1")
        #expect(ClientAddress.host(ofPeer: "unix") == "unix")
        #expect(ClientAddress.host(ofPeer: "2001:db8::1") == "2001:db8::1")
    }

    @Test func forwardedHeaderNodes() {
        #expect(
            ClientAddress.forwardedNodes(rfc7239: #"for=192.0.2.60;proto=http, For="[2001:db8:cafe::17]:4711""#)
                == ["192.0.2.60", "2001:db8:cafe::17"])
        #expect(ClientAddress.forwardedNodes(rfc7239: "proto=https;by=10.0.0.1") == [])
    }

    @Test func trustedPeerIsBelievedRightmostUntrustedWins() throws {
        let trusted = try TrustedProxies(["10.0.0.0/8", "127.0.0.1"])
        let resolved = ClientAddress.resolve(
            peer: "10.1.2.3:4000", forwardedFor: "198.51.100.1, 203.0.113.9, 10.9.9.9", forwarded: nil,
            trusted: trusted)
        #expect(resolved == "203.0.113.9")
        let viaForwarded = ClientAddress.resolve(
            peer: "127.0.0.1:1", forwardedFor: "198.51.100.1", forwarded: #"for="[2001:db8::5]:1""#, trusted: trusted)
        #expect(viaForwarded == "2001:db8::5")
    }

    @Test func untrustedPeerCannotSpoof() throws {
        let trusted = try TrustedProxies(["10.0.0.0/8"])
        #expect(
            ClientAddress.resolve(peer: "192.0.2.1:1", forwardedFor: "203.0.113.9", forwarded: nil, trusted: trusted)
                == "192.0.2.1")
        #expect(
            ClientAddress.resolve(peer: "10.0.0.1:1", forwardedFor: "203.0.113.9", forwarded: nil, trusted: .none)
                == "10.0.0.1")
    }

    @Test func cidrRanges() throws {
        let trusted = try TrustedProxies(["192.168.0.0/16", "fd00::/8", "2001:db8::1"])
        #expect(trusted.contains("192.168.44.1"))
        #expect(!trusted.contains("192.169.0.1"))
        #expect(trusted.contains("fd12:3456::1"))
        #expect(!trusted.contains("fe80::1"))
        #expect(trusted.contains("2001:db8:0:0:0:0:0:1"))
        #expect(trusted.contains("::ffff:192.168.1.1"))
        #expect(!trusted.contains("not-an-address"))
        #expect(throws: TrustedProxies.InvalidAddress.self) { try TrustedProxies(["10.0.0.0/33"]) }
        #expect(throws: TrustedProxies.InvalidAddress.self) { try TrustedProxies(["300.1.1.1"]) }
    }
}

@Suite struct TokenBucketTests {
    @Test func burstThenRefillAtTheRate() {
        var buckets = TokenBuckets(rate: 2, burst: 3)
        for _ in 0..<3 { #expect(buckets.take("a", now: 0) == .allowed) }
        #expect(buckets.take("a", now: 0) == .limited(retryAfter: 1))
        #expect(buckets.take("b", now: 0) == .allowed)
        #expect(buckets.take("a", now: 0.5) == .allowed)
        #expect(buckets.take("a", now: 0.5) == .limited(retryAfter: 1))
        #expect(buckets.take("a", now: 100) == .allowed)
    }

    @Test func retryAfterRoundsUpToWholeSeconds() {
        var buckets = TokenBuckets(rate: 0.25, burst: 1)
        #expect(buckets.take("a", now: 0) == .allowed)
        #expect(buckets.take("a", now: 1) == .limited(retryAfter: 3))
    }

    @Test func keysStayBounded() {
        var buckets = TokenBuckets(rate: 1, burst: 1, maxKeys: 10)
        for index in 0..<100 { _ = buckets.take("client-\(index)", now: Double(index)) }
        #expect(buckets.keyCount <= 10)
    }

    @Test func streamCounter() {
        var counter = StreamCounter(maxTotal: 3, maxPerClient: 2)
        #expect(counter.open(client: "a") == nil)
        #expect(counter.open(client: "a") == nil)
        #expect(counter.open(client: "a") == .perClient)
        #expect(counter.open(client: "b") == nil)
        #expect(counter.open(client: "c") == .total)
        counter.close(client: "a")
        #expect(counter.open(client: "c") == nil)
        #expect(counter.total == 3)
    }
}

@Suite struct CORSPolicyTests {
    @Test func originsAndCredentials() throws {
        let policy = CORSPolicy(allowedOrigins: ["https://app.example"], allowCredentials: true)
        try policy.validate()
        #expect(policy.allowOriginValue(for: "https://app.example") == "https://app.example")
        #expect(policy.allowOriginValue(for: "https://evil.example") == nil)
        var fields = HTTPFields()
        policy.apply(origin: "https://app.example", to: &fields)
        #expect(fields[HTTPField.Name("Access-Control-Allow-Credentials")!] == "true")
        #expect(fields[.vary] == "Origin")
    }

    @Test func wildcardNeverWithCredentials() throws {
        #expect(throws: CORSPolicy.InvalidPolicy.self) {
            try CORSPolicy(allowedOrigins: ["*"], allowCredentials: true).validate()
        }
        let open = CORSPolicy(allowedOrigins: ["*"])
        #expect(open.allowOriginValue(for: "https://anyone.example") == "*")
        var fields = HTTPFields()
        open.apply(origin: "https://anyone.example", to: &fields)
        #expect(fields[HTTPField.Name("Access-Control-Allow-Credentials")!] == nil)
    }

    @Test func preflightDecisions() {
        let policy = CORSPolicy(allowedOrigins: ["https://app.example"])
        #expect(
            policy.preflight(origin: "https://app.example", method: "POST", requestHeaders: "Content-Type, If-Match")
                == .allowed)
        // PATCH is a route of ours (merge patch); a method no route takes is refused.
        #expect(
            policy.preflight(
                origin: "https://app.example", method: "PATCH",
                requestHeaders: "Content-Type, If-Match, Idempotency-Key") == .allowed)
        #expect(policy.preflight(origin: "https://app.example", method: "TRACE", requestHeaders: nil) != .allowed)
        #expect(policy.preflight(origin: "https://app.example", method: "GET", requestHeaders: "X-Secret") != .allowed)
        #expect(policy.preflight(origin: "https://other.example", method: "GET", requestHeaders: nil) != .allowed)
        var fields = HTTPFields()
        CORSPolicy().apply(origin: "https://app.example", to: &fields)
        #expect(fields.isEmpty)
    }
    @Test func aQuoteInTheReason_NeverEndsTheChallengesQuotedString() {
        // A quote followed by a combining mark is one Character: it must still be replaced.
        let problem = Gateway.unauthorized(invalidToken: "claim \"\u{301}a\" and \"b\" are wrong")
        let challenge = problem.headers[ServerHeaders.wwwAuthenticate] ?? ""
        let description = String(challenge.split(separator: "error_description=").last ?? "")
        let inner = description.unicodeScalars.dropFirst().dropLast()
        #expect(description.unicodeScalars.first == "\"" && description.unicodeScalars.last == "\"")
        #expect(!inner.contains("\""), "\(challenge)")
        #expect(inner.filter { $0 == "'" }.count == 4)
    }
}
