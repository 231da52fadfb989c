import Foundation
import JetstreamClient
import JetstreamJSON
import JetstreamModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The gateway's HTTP API as the tests check it, independent of the client under test: a scope's
/// state, its change-set history, deletion, and plain change sets.
struct ServerAPI: Sendable {
    let url: URL
    var token: Client.TokenProvider?
    private let transport = URLSessionTransport()

    init(url: URL, token: Client.TokenProvider? = nil) {
        self.url = url
        self.token = token
    }

    /// One request; the status and the parsed body (nil when empty or not JSON).
    func request(
        _ method: String, _ path: String, body: JSONValue? = nil, headers: [String: String] = [:]
    ) async throws -> (status: Int, body: JSONValue?) {
        var request = URLRequest(url: URL(string: url.absoluteString + path)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.encoded())
        }
        if let token = try await token?() {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        let (data, response) = try await transport.data(for: request)
        return (response.statusCode, try? JSONParser.parse([UInt8](data)))
    }

    /// The value of the unlabelled sample `name` in `GET /metrics` (nil when absent).
    func metric(_ name: String) async throws -> Double? {
        let (data, _) = try await transport.data(for: URLRequest(url: URL(string: url.absoluteString + "/metrics")!))
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    /// `GET /v1/scopes/{name}`, imported with the demo schema.
    func state(of scope: String) async throws -> ScopeState {
        let (status, body) = try await request("GET", "/v1/scopes/\(scope)")
        guard status == 200, let body, let root = body["rootUUID"]?.string.flatMap(UUID.init(wireString:)),
            let version = body["version"]?.number?.int64Value, let fragments = body["fragments"]?.array
        else { throw HarnessError("GET /v1/scopes/\(scope): \(status) \(body?.encodedString() ?? "")") }
        return try ScopeState(
            importing: fragments.map { try SyncFragment(json: $0) }, rootUUID: root, version: Int(version),
            schema: Schema.demo)
    }

    /// `GET /v1/scopes/{name}/changesets?since=0`: every change set in the history, oldest first
    /// (`{"version","idempotencyKey"?,"fragments","removed"}` each).
    func changeSets(of scope: String) async throws -> [JSONValue] {
        let (status, body) = try await request("GET", "/v1/scopes/\(scope)/changesets?since=0&limit=10000")
        guard status == 200, let changeSets = body?["changesets"]?.array else {
            throw HarnessError("GET …/changesets?since=0: \(status) \(body?.encodedString() ?? "")")
        }
        return changeSets
    }

    /// `POST /v1/scopes/{name}/changesets` with `fragments`; the status.
    @discardableResult
    func post(_ fragments: [SyncFragment], to scope: String) async throws -> Int {
        try await request(
            "POST", "/v1/scopes/\(scope)/changesets", body: ["fragments": .array(fragments.map(\.jsonValue))]
        ).status
    }

    /// `DELETE /v1/scopes/{name}`; the status.
    func delete(_ scope: String) async throws -> Int {
        try await request("DELETE", "/v1/scopes/\(scope)").status
    }
}
