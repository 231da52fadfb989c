import Foundation
import JetstreamJSON
import JetstreamModel
import ScopeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A method served by a service in any language over HTTP (`--method NAME=URL`, docs/methods.md).
/// The gateway POSTs `{"scope","version","state","args","subject","claims"}` (`state` is the scope's
/// `GET` body at `version`) and the service answers `200 {"fragments":[…],"result":…}` (with
/// `"actsAsServer":true` when the schema's write rules should not judge its fragments) or
/// `200 {"reject":"reason"}`. The call happens outside the scope's lock: its writes go on while
/// the service thinks (``ScopeEngine/call(_:planning:args:claims:on:ifMatch:idempotency:origin:completion:)``
/// stages the answer only on the version it was planned on). Connections to the service are
/// kept and reused.
public struct HTTPMethodHook: Sendable {
    public let name: String
    public let url: URL
    /// How long the service may take to answer (`--method-timeout`): then `504 method-timeout`.
    public let timeout: Duration
    private let session: URLSession

    public init(name: String, url: URL, timeout: Duration = .seconds(5)) {
        self.name = name
        self.url = url
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 16
        configuration.timeoutIntervalForRequest = timeout / .seconds(1) + 1
        session = URLSession(configuration: configuration)
    }

    /// `NAME=URL` as the flag writes it.
    public init(argument: String, timeout: Duration) throws(HookArgumentError) {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
            throw HookArgumentError("--method takes NAME=URL (an http:// or https:// URL), got '\(argument)'")
        }
        let name = String(argument[..<equals])
        let text = String(argument[argument.index(after: equals)...])
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host != nil
        else {
            throw HookArgumentError("--method \(name)=…: '\(text)' is not an http:// or https:// URL")
        }
        guard name.utf8.count <= 128, name.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "/") })
        else {
            throw HookArgumentError("--method: '\(name)' is not a method name (1–128 visible characters, no '/')")
        }
        self.init(name: name, url: url, timeout: timeout)
    }

    /// One call of the service for `call`: the fragments and result, or why nothing is applied.
    func plan(_ call: MethodCall) async -> Result<MethodOutcome, ScopeError> {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = Data(Self.body(of: call))
        let timeout = self.timeout
        let session = self.session
        let prepared = request
        let answer: (Data, URLResponse)?
        do {
            answer = try await withThrowingTaskGroup(of: (Data, URLResponse)?.self) { group in
                group.addTask { try await session.data(for: prepared) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first
            }
        } catch {
            return .failure(.methodFailed(method: name, detail: "the service at \(url) cannot be reached: \(error)"))
        }
        guard let (data, response) = answer else {
            return .failure(.methodTimedOut(method: name, seconds: timeout / .seconds(1)))
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            return .failure(.methodFailed(method: name, detail: "the service at \(url) answered HTTP \(status)"))
        }
        return Self.outcome(of: [UInt8](data), method: name)
    }

    /// `{"scope","version","state","args","subject","claims"}`; the state spliced in as the scope's
    /// `GET` body.
    static func body(of call: MethodCall) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.writeRaw(#"{"scope":"#)
        writer.write(string: call.scope)
        writer.writeRaw(#","version":\#(call.state.version),"state":"#)
        var bytes = writer.bytes
        bytes += ScopeEncoding.stateJSON(name: call.scope, state: call.state)
        bytes += Array(#","args":"#.utf8) + call.args.encoded()
        bytes += Array(#","subject":"#.utf8) + (call.subject.map(JSONValue.string) ?? .null).encoded()
        bytes += Array(#","claims":"#.utf8) + (call.claims ?? .null).encoded() + [UInt8(ascii: "}")]
        return bytes
    }

    /// The service's answer read: fragments and result, a refusal, or what is wrong with it.
    static func outcome(of body: [UInt8], method: String) -> Result<MethodOutcome, ScopeError> {
        guard let json = try? JSONParser.parse(body), case .object(let answer) = json else {
            return .failure(.methodFailed(method: method, detail: "the service's answer is not a JSON object"))
        }
        if let reason = answer["reject"] {
            return .failure(.methodRejected(method: method, reason: reason.string ?? reason.encodedString()))
        }
        guard case .array(let elements)? = answer["fragments"] else {
            return .failure(
                .methodFailed(method: method, detail: #"the service's answer has neither "fragments" nor "reject""#))
        }
        var fragments: [SyncFragment] = []
        for (index, element) in elements.enumerated() {
            do {
                fragments.append(try SyncFragment(json: element))
            } catch {
                return .failure(.methodFailed(method: method, detail: "the service's fragment \(index): \(error)"))
            }
        }
        var actsAsServer = false
        switch answer["actsAsServer"] {
        case nil, .null?: break
        case .bool(let flag)?: actsAsServer = flag
        case let other?:
            return .failure(
                .methodFailed(
                    method: method,
                    detail: #"the service's "actsAsServer" must be true or false, got "#
                        + other.typeDescription))
        }
        return .success(
            MethodOutcome(fragments: fragments, result: answer["result"] ?? .null, actsAsServer: actsAsServer))
    }
}

/// A `--method` argument that cannot be used, and why.
public struct HookArgumentError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
