import Foundation
import HTTPCompression
import HTTPServer
import HTTPTypes
import JetstreamModel
import ScopeEngine
import SocketLoop
import Synchronization

extension Gateway {
    func addScopeRoutes(to router: inout Router) {
        let engine = self.engine
        let access = self.access
        router.get("/v1/scopes", middleware: [gate(.anyClient, passingGrant: true)]) { request, context in
            Self.answer { () throws(Problem) in
                let limit = try Self.integerQuery(request, "limit", fallback: 100, range: 1...1000)!
                let after = request.queryValue("after")
                if let after { try Problem.mapping { () throws(ScopeError) in try ScopeName.validate(after) } }
                let grant = context.values[AccessGrant.self] ?? access.policy.auth.anonymousGrant
                let (page, next) = engine.list(after: after, limit: limit) { grant.allows(.read, scope: $0) }
                var writer = JSONWriter(capacity: 64 + page.count * 96)
                writer.writeRaw(#"{"scopes":["#)
                for (index, handle) in page.enumerated() {
                    let state = handle.committedState
                    if index > 0 { writer.writeRaw(",") }
                    writer.write([
                        "name": .string(handle.name), "rootClass": .string(handle.rootClass),
                        "rootUUID": .string(state.rootUUID.wireString), "version": .number(JSONNumber(state.version)),
                    ])
                }
                writer.writeRaw(#"],"next":"#)
                writer.write(next.map(JSONValue.string) ?? .null)
                writer.writeRaw("}")
                return Self.json(writer.bytes)
            }
        }

        router.put(
            "/v1/scopes/{name}", middleware: [gate(.write)],
            admitBody: refusesBeforeBody(mediaTypes: ["application/json"], scopeMustExist: false)
        ) { request, context in
            Self.answerAsync(context) { () async throws(Problem) in
                let name = context.parameters["name"] ?? ""
                try Problem.mapping { () throws(ScopeError) in try ScopeName.validate(name) }
                let body = try Self.jsonObjectBody(request)
                guard let root = body["root"]?.object else {
                    throw Problem(
                        .badRequest, detail: #"the body must be {"root":{"clsName":…,"uuid"?:…,"properties"?:{…}}}"#)
                }
                // A typo ("propeties") must not create a scope without what it meant to send.
                if let unknown = body.keys.first(where: { $0 != "root" }) {
                    throw Problem(
                        .badRequest, detail: "unknown member '\(unknown.prefix(64))': the body has only 'root'")
                }
                if let unknown = root.keys.first(where: { !["clsName", "uuid", "properties"].contains($0) }) {
                    throw Problem(
                        .badRequest,
                        detail: "unknown member 'root.\(unknown.prefix(64))': a root has clsName, uuid and properties")
                }
                guard let clsName = root["clsName"]?.string else {
                    throw Problem(.badRequest, detail: "root.clsName must be a string naming the root's class")
                }
                var uuid: UUID?
                if let value = root["uuid"], value != .null {
                    guard let text = value.string, let parsed = UUID(wireString: text) else {
                        throw Problem(.badRequest, detail: "root.uuid must be a UUID string")
                    }
                    uuid = parsed
                }
                var properties = JSONObject()
                if let value = root["properties"] {
                    guard let object = value.object else {
                        throw Problem(.badRequest, detail: "root.properties must be an object")
                    }
                    properties = object
                }
                let handle: ScopeHandle
                do throws(ScopeError) {
                    handle = try await engine.create(
                        name: name, rootClassName: clsName, rootUUID: uuid, properties: properties)
                } catch {
                    throw Problem(error)
                }
                let state = handle.encodedState()
                var response = Self.json(state.json, status: .created, version: state.version)
                response.head.headerFields[.location] = "/v1/scopes/\(name)"
                return response
            }
        }

        router.get("/v1/scopes/{name}", middleware: [gate(.read)]) { request, context in
            if request.queryValue("version") != nil {
                // The state at a version: read from the store (a snapshot and at most a snapshot
                // interval of replay), its ETag that version.
                return Self.answerAsync(context) { () async throws(Problem) in
                    let version = try Self.integerQuery(request, "version", fallback: nil, range: 0...Int.max)!
                    let handle = try await Self.currentHandle(context, engine)
                    do throws(ScopeError) {
                        let state = try await engine.state(of: handle, at: version)
                        if let header = request.headerFields[.ifNoneMatch],
                            EntityTag.parse(header, allowWeak: true)?.matches(state.version) == true
                        {
                            return HTTPServerResponse(
                                status: .notModified,
                                headerFields: [.eTag: EntityTag.header(for: state.version), .cacheControl: "no-cache"])
                        }
                        return Self.stateResponse(state, for: request)
                    } catch {
                        throw Problem(error)
                    }
                }
            }
            return Self.answerOnCurrentCopy(of: context.parameters["name"] ?? "", engine: engine, context: context) {
                handle throws(Problem) in
                var condition: EntityTag.Condition?
                if let header = request.headerFields[.ifNoneMatch] {
                    guard let parsed = EntityTag.parse(header, allowWeak: true) else {
                        throw Problem(.badRequest, detail: "If-None-Match \(header) is not a list of entity tags")
                    }
                    condition = parsed
                }
                // One read of the handle answers both the 304 check and the body.
                let state = handle.encodedState()
                if let condition, condition.matches(state.version) {
                    return HTTPServerResponse(
                        status: .notModified,
                        headerFields: [.eTag: EntityTag.header(for: state.version), .cacheControl: "no-cache"])
                }
                return Self.stateResponse(state, for: request)
            }
        }

        router.delete("/v1/scopes/{name}", middleware: [gate(.write)]) { _, context in
            Self.answerAsync(context) { () async throws(Problem) in
                do throws(ScopeError) {
                    try await engine.delete(name: context.parameters["name"] ?? "")
                } catch {
                    throw Problem(error)
                }
                return HTTPServerResponse(status: .noContent)
            }
        }
    }
}

extension Gateway {
    static let compression = CompressionPolicy()

    /// A scope's state as a `200`, its body shared: the JSON (and, for clients that take gzip, its
    /// gzip) is made once per version and written to every connection by reference, so many
    /// clients reading — or not reading — a large state hold one copy of it. A client that takes
    /// only another coding gets the state compressed by the server's response compression.
    static func stateResponse(_ state: EncodedState, for request: HTTPServerRequest) -> HTTPServerResponse {
        var response = json([], version: state.version)
        let bodies = state.derived { StateBodies(json: $0) }
        let acceptEncoding = request.headerFields[values: .acceptEncoding]
        let coding =
            acceptEncoding.isEmpty
            ? nil
            : compression.coding(
                acceptEncoding: acceptEncoding.joined(separator: ", "), contentType: "application/json",
                contentEncoding: nil, bodySize: state.json.count)
        switch coding {
        case nil:
            response.sharedBody = bodies.identity
        case .gzip:
            if let gzip = bodies.gzip(of: state.json) {
                response.sharedBody = gzip
                response.head.headerFields[.contentEncoding] = ContentCoding.gzip.headerValue
            } else {
                response.sharedBody = bodies.identity
            }
            response.head.headerFields.append(HTTPField(name: .vary, value: "Accept-Encoding"))
        case .some:
            response.body = state.json
        }
        return response
    }
}

/// A scope state's bodies as sent, made at most once per version and kept with it
/// (``ScopeEngine/EncodedState/derived(_:)``): the JSON as one shared buffer, and its gzip on first
/// demand (nil when it does not make the state smaller).
final class StateBodies: Sendable {
    let identity: SharedBytes
    private let gzipped = Mutex<SharedBytes??>(nil)

    init(json: [UInt8]) {
        identity = SharedBytes(json)
    }

    func gzip(of json: [UInt8]) -> SharedBytes? {
        if let made = gzipped.withLock({ $0 }) { return made }
        let compressed = (try? OneShot.compress(json, coding: .gzip)).flatMap { $0.count < json.count ? $0 : nil }
        let made = compressed.map { SharedBytes($0) }
        gzipped.withLock { $0 = .some(made) }
        return made
    }
}

extension Problem {
    /// Runs `body`, mapping a thrown ``ScopeEngine/ScopeError`` to its problem.
    static func mapping<T>(_ body: () throws(ScopeError) -> T) throws(Problem) -> T {
        do {
            return try body()
        } catch {
            throw Problem(error)
        }
    }
}
