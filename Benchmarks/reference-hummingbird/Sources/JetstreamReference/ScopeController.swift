import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// The `/v1/scopes` routes: create, read, change sets and the event stream (ScopeController+Events).
struct ScopeController {
    let registry: ScopeRegistry
    /// The gateway's default body limit.
    static let maxBodySize = 1 << 20

    func addRoutes(to group: RouterGroup<BasicRequestContext>) {
        group.put(":name", use: create)
        group.get(":name", use: state)
        group.post(":name/changesets", use: postChangeSet)
        group.get(":name/events", use: events)
    }

    @Sendable func create(request: Request, context: BasicRequestContext) async throws -> Response {
        let name = try context.parameters.require("name")
        guard Self.isValid(scopeName: name) else {
            throw Problem.badRequest(
                "invalid scope name '\(name)': use 1–128 characters of A–Z, a–z, 0–9, '.', '_', '~', '-'")
        }
        guard let rootClass = DemoSchema.rootClass(forScope: name) else {
            throw Problem.notFound("no scope rule of the schema matches the name '\(name)'")
        }
        let body = try await decode(
            CreateScopeRequest.self, from: request,
            shape: #"the body must be {"root":{"clsName":…,"uuid"?:…,"properties"?:{…}}}"#)
        let root: ModelObject
        do throws(FragmentError) {
            root = try ModelObject.root(from: body.root, rootClass: rootClass, scope: name)
        } catch {
            throw Problem.rejected("the root object was rejected; no scope was created", [FragmentReply(error: error)])
        }
        guard let scope = registry.create(name: name, root: root) else { throw Problem.scopeExists(name) }
        let (version, json) = await scope.currentState()
        return Self.json(json, status: .created, version: version, headers: [.location: "/v1/scopes/\(name)"])
    }

    @Sendable func state(request: Request, context: BasicRequestContext) async throws -> Response {
        let scope = try scope(for: context)
        let (version, json) = await scope.currentState()
        let etag = "\"\(version)\""
        if request.headers[.ifNoneMatch] == etag {
            return Response(status: .notModified, headers: [.eTag: etag])
        }
        return Self.json(json, status: .ok, version: version)
    }

    @Sendable func postChangeSet(request: Request, context: BasicRequestContext) async throws -> Response {
        let scope = try scope(for: context)
        let body = try await decode(
            ChangeSetRequest.self, from: request,
            shape: #"the body must be {"fragments":[…]}, an object with a fragments array"#)
        guard !body.fragments.isEmpty else {
            throw Problem.rejected("a change set needs at least one fragment", [])
        }
        switch await scope.apply(body.fragments.map(\.result)) {
        case .accepted(let applied):
            let json = try JSONEncoder().encodeAsByteBuffer(applied.response, allocator: ByteBufferAllocator())
            return Self.json(json, status: .ok, version: applied.version)
        case .rejected(let replies):
            let failed = replies.count { $0.error != nil }
            throw Problem.rejected(
                "\(failed) of \(replies.count) fragments were rejected; nothing was applied", replies)
        }
    }

    func scope(for context: BasicRequestContext) throws -> any ScopeStore {
        let name = try context.parameters.require("name")
        guard let scope = registry.scope(named: name) else { throw Problem.notFound("no scope named '\(name)'") }
        return scope
    }

    /// Reads the whole body and decodes it, mapping failures to the gateway's two `400`s.
    private func decode<Body: Decodable>(_ type: Body.Type, from request: Request, shape: String) async throws -> Body {
        let buffer = try await request.body.collect(upTo: Self.maxBodySize)
        do {
            return try JSONDecoder().decode(type, from: buffer)
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            throw Problem.invalidJSON(context.underlyingError.map { "\($0)" } ?? context.debugDescription)
        } catch {
            throw Problem.badRequest(shape)
        }
    }

    private static func json(
        _ body: ByteBuffer, status: HTTPResponse.Status, version: Int, headers extra: HTTPFields = [:]
    ) -> Response {
        var headers: HTTPFields = [
            .contentType: "application/json", .eTag: "\"\(version)\"", .cacheControl: "no-cache",
        ]
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    /// 1–128 characters of `[A-Za-z0-9._~-]`, as the gateway requires.
    static func isValid(scopeName name: String) -> Bool {
        (1...128).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                    UInt8(ascii: "-"):
                    true
                default:
                    false
                }
            }
    }
}
