import JetstreamJSON

/// A scope the load is aimed at: created if missing (`PUT`, a `409` is fine), then read for its
/// root object and current version.
public struct ScopeFixture: Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case unexpected(step: String, status: Int, body: String)

        public var description: String {
            switch self {
            case .unexpected(let step, let status, let body):
                "\(step) answered \(status): \(body.prefix(300))"
            }
        }
    }

    public let name: String
    public let rootUUID: String
    public let rootClass: String
    public let version: Int

    /// Creates `name` with a `rootClass` root unless it exists, and reads its state.
    public static func prepare(name: String, rootClass: String, client: BlockingHTTPClient) throws -> ScopeFixture {
        let path = "/v1/scopes/\(name)"
        let created = try client.request("PUT", path, json: #"{"root":{"clsName":"\#(rootClass)"}}"#)
        guard created.head.status == 201 || created.head.status == 409 || created.head.status == 200 else {
            throw Failure.unexpected(step: "PUT \(path)", status: created.head.status, body: created.text)
        }
        let state = try client.request("GET", path)
        guard state.head.status == 200, let json = try? JSONParser.parse(state.body),
            let rootUUID = json["rootUUID"]?.string, let version = json["version"]?.number?.int64Value
        else { throw Failure.unexpected(step: "GET \(path)", status: state.head.status, body: state.text) }
        let actualClass =
            json["fragments"]?.array?.first { $0["uuid"]?.string == rootUUID }?["clsName"]?.string ?? rootClass
        return ScopeFixture(name: name, rootUUID: rootUUID, rootClass: actualClass, version: Int(version))
    }

    /// Waits until `GET /v1/scopes/{name}` answers 200 (a scope created on another node reaches
    /// this one within its notification or poll), polling every 20 ms until `deadline`.
    public static func awaitVisible(name: String, client: BlockingHTTPClient, until deadline: UInt64) throws {
        while true {
            let state = try client.request("GET", "/v1/scopes/\(name)")
            if state.head.status == 200 { return }
            guard MonotonicClock.now() < deadline else {
                throw Failure.unexpected(step: "GET /v1/scopes/\(name)", status: state.head.status, body: state.text)
            }
            ProgressTicker.sleep(milliseconds: 20)
        }
    }

    /// A one-fragment change set setting the root's string property `property` to `value`: the
    /// smallest change every subscriber must receive.
    public func renameRootBody(property: String, value: String) -> [UInt8] {
        Array(
            #"{"fragments":[{"type":"change","uuid":"\#(rootUUID)","clsName":"\#(rootClass)","properties":{"\#(property)":"\#(value)"}}]}"#
                .utf8)
    }

    /// A change set adding an `elementClass` object `uuid` (its defaults) and inserting it at the end
    /// of the root's collection `collection`: what an insert into a large collection sends.
    public func insertBody(collection: String, elementClass: String, uuid: String) -> [UInt8] {
        Array(
            (#"{"fragments":[{"type":"add","uuid":"\#(uuid)","clsName":"\#(elementClass)","properties":{}},"#
                + #"{"type":"change","uuid":"\#(rootUUID)","clsName":"\#(rootClass)","#
                + #""properties":{"\#(collection)":{"insert":["\#(uuid)"],"before":null}}}]}"#).utf8)
    }

    /// A complete keep-alive `POST …/methods/{method}` request carrying `body`.
    public func methodRequest(_ method: String, body: [UInt8], authority: String) -> [UInt8] {
        var request = Array(
            "POST /v1/scopes/\(name)/methods/\(method) HTTP/1.1\r\nHost: \(authority)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
                .utf8)
        request.append(contentsOf: body)
        return request
    }

    /// A complete keep-alive `POST …/changesets` request carrying `body`.
    public func postRequest(_ body: [UInt8], authority: String) -> [UInt8] {
        var request = Array(
            "POST /v1/scopes/\(name)/changesets HTTP/1.1\r\nHost: \(authority)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
                .utf8)
        request.append(contentsOf: body)
        return request
    }
}
