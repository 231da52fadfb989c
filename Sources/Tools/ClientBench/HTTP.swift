import BenchSupport
import CanvasModel
import Foundation
import Jetstream
import JetstreamModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Plain requests to the gateway (seeding, the remote writer, the state for the in-process part):
/// URLSession, as the client itself uses.
struct GatewayHTTP: Sendable {
    let base: URL
    let session: URLSession

    init(base: URL) {
        self.base = base
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForRequest = 60
        session = URLSession(configuration: configuration)
    }

    /// One request; the status and the body.
    func send(_ method: String, _ path: String, body: JSONValue? = nil) async throws -> (Int, [UInt8]) {
        try await send(method, path, bytes: body.map { $0.encoded() })
    }

    func send(_ method: String, _ path: String, bytes: [UInt8]?) async throws -> (Int, [UInt8]) {
        // A query (`?since=…`) is kept as it is; `appending(path:)` would escape its `?`.
        let parts = path.split(separator: "?", maxSplits: 1)
        var url = base.appending(path: String(parts.first ?? ""))
        if parts.count == 2, let withQuery = URL(string: url.absoluteString + "?" + parts[1]) { url = withQuery }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let bytes {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(bytes)
        }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw BenchError("\(method) \(path): not HTTP") }
        return (http.statusCode, [UInt8](data))
    }

    func expect(_ status: Int, _ method: String, _ path: String, body: JSONValue? = nil) async throws -> [UInt8] {
        let (got, answer) = try await send(method, path, body: body)
        guard got == status else {
            throw BenchError(
                "\(method) \(path): \(got), expected \(status): \(String(decoding: answer.prefix(500), as: UTF8.self))")
        }
        return answer
    }
}

/// The scope the benchmark works on: a Canvas with `shapes` Shapes, created on the server with
/// `PUT` and change sets of at most 999 shapes (the server's default `--max-fragments` is 1000).
struct SeededScope {
    let name: String
    let shapeUUIDs: [UUID]
    let version: Int
    let seconds: Double

    @MainActor
    static func create(_ http: GatewayHTTP, shapes: Int) async throws -> SeededScope {
        let started = ContinuousClock.now
        let name = "canvas-clientbench-\(UInt32.random(in: 0...UInt32.max))"
        let path = "/v1/scopes/\(name)"
        let canvas = Canvas()
        let scope = Scope(name: name, root: canvas, schema: Schema.demo)
        let root: JSONValue = [
            "clsName": "Canvas", "uuid": .string(canvas.uuid.wireString), "properties": ["name": "ClientBench"],
        ]
        _ = try await http.expect(201, "PUT", path, body: ["root": root])
        var version = 0
        var random = SplitMix(seed: 42)
        for start in stride(from: 0, to: shapes, by: 999) {
            var batch: [Shape] = []
            for index in start..<min(shapes, start + 999) {
                let shape = Shape()
                shape.x = Float(Int.random(in: 0..<2000, using: &random))
                shape.y = Float(Int.random(in: 0..<2000, using: &random))
                shape.label = "shape \(index)"
                shape.kind = index % 3 == 0 ? .oval : .rect
                batch.append(shape)
            }
            // One write of the collection: one `insert` operation for the batch.
            guard let recorded = scope.modify({ canvas.shapes += batch }) else { throw BenchError("nothing recorded") }
            let answer = try await http.expect(
                200, "POST", "\(path)/changesets", body: ["fragments": .array(recorded.fragments.map(\.jsonValue))])
            version = Int(try JSONParser.parse(answer)["version"]?.number?.int64Value ?? 0)
        }
        return SeededScope(
            name: name, shapeUUIDs: canvas.shapes.map(\.uuid), version: version,
            seconds: Measure.seconds(.now - started))
    }
}
