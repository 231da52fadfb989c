import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A connection to a Jetstream gateway that keeps typed scopes in sync with it: the original
/// framework's `session.fetch(scope)`, over HTTP and Server-Sent Events.
///
/// ```swift
/// let canvas = Canvas()
/// let scope = Scope(name: "canvas-1", root: canvas)
/// let client = Client(url: URL(string: "http://127.0.0.1:8080")!)
/// let sync = try await client.fetch(scope)          // the server's state is applied; now live
/// canvas.shapes.append(Shape())                      // visible at once, sent as an operation
/// sync.onRejected { rejection in print(rejection.reasons) }
/// await sync.stop()
/// ```
public struct Client: Sendable {
    /// Returns the bearer token to send, or nil for none. Called again after a `401` or
    /// `event: auth-expired`, so it should return a fresh token then.
    public typealias TokenProvider = @Sendable () async throws -> String?

    /// The gateway's base URL (`http://host:port`, or a prefix behind a proxy).
    public let url: URL
    public let token: TokenProvider?
    public let transport: any HTTPTransport
    /// Where scopes are kept between runs (docs/offline.md); `.none` keeps them in memory only.
    public let storage: ClientStorage
    public var configuration: Configuration
    /// The one event stream every scope this client fetches shares (copies of the client share it too).
    let stream: SharedEventStream

    /// This client's id in every scope's presence (``Presence``): a random UUID per client.
    public var presenceID: String { stream.presenceID }

    /// Timing of the stream and the retries.
    public struct Configuration: Sendable {
        /// The server's `--heartbeat-interval`: a stream silent for twice this long is dropped.
        public var heartbeatInterval: Duration = .seconds(15)
        /// Reconnection and resend backoff: full jitter over [0, min(maximum, initial × 2^attempt)).
        public var backoff = Backoff()
        /// The prefix of this client's `Idempotency-Key`s (default: a random UUID per sync).
        public var clientID: String?
        /// How long the server keeps this client's presence without a refresh (1–300 s; the sync
        /// refreshes it at half of it).
        public var presenceTTL: Duration = .seconds(30)
        /// With storage: how long after the confirmed state moves its stored copy is rewritten
        /// (once for every event meanwhile). Local changes are journaled at once whatever this is;
        /// a restart in between resumes from the older version and the stream catches up.
        public var storedCopyInterval: Duration = .seconds(5)
        /// Whether `changeset` events are read and applied to the confirmed state off the
        /// observers' actor (the default). Off, the actor does it all, as before: the benchmark
        /// compares the two.
        @_spi(Benchmarks) public var preparesEventsOffActor = true

        public init() {}
    }

    /// A client of the gateway at `url`. `token` (optional) supplies bearer tokens; `storage`
    /// keeps each fetched scope and its pending changes between runs (``ClientStorage``).
    public init(
        url: URL, token: TokenProvider? = nil, storage: ClientStorage = .none,
        transport: any HTTPTransport = URLSessionTransport(), configuration: Configuration = Configuration()
    ) {
        self.url = url
        self.token = token
        self.storage = storage
        self.transport = transport
        self.configuration = configuration
        self.stream = SharedEventStream(url: url, token: token, transport: transport)
    }

    /// Starts syncing `scope` with the gateway's scope of the same name: loads the schema and the
    /// state, applies it to the scope (its root takes the server's root UUID), then follows the
    /// event stream and sends the scope's local changes. Returns once the state is applied.
    ///
    /// Every scope a client fetches shares one event stream (`GET /v1/events?scope=…`, one HTTP
    /// connection); fetching or stopping a scope re-opens it from the last event id. Fetching a
    /// `Scope` this client already syncs returns another handle on the same copy; the same scope
    /// name fetched into another `Scope` object is a second copy on the same place of the stream.
    ///
    /// Observers of the scope fire on the caller's actor (`isolation`), which must be the one
    /// the scope's objects are used on — the main actor in an app.
    ///
    /// The check is made again whenever the stream brings a whole state (`reset`, `snapshot`),
    /// which is how a server restarted with another schema shows itself: classes that no longer
    /// fit stop the sync with `.stopped(reason: .schemaMismatch(…))` (``ScopeSync``).
    ///
    /// - Parameter createIfMissing: create the scope on the server (PUT) when it does not exist,
    ///   from the local root; the local objects under it follow as the first change set.
    /// - Throws: ``ClientError``: unknown scope, a schema that does not match the model classes,
    ///   `401`/`403`, or the server unreachable; `.invalidState` when this client already syncs
    ///   this `Scope` on another actor.
    public func fetch(
        _ scope: Scope, createIfMissing: Bool = false, isolation: isolated (any Actor) = #isolation
    ) async throws(ClientError) -> ScopeSync {
        if let shared = try await sharedHandle(for: scope, isolation: isolation) { return shared }
        guard case .directory(let directory) = storage else {
            return try await fetchFromServer(scope, createIfMissing: createIfMissing, isolation: isolation)
        }
        return try await fetch(scope, storedIn: directory, createIfMissing: createIfMissing, isolation: isolation)
    }

    /// Loads the scope from the server and starts its sync; `stored` keeps it in storage from then on.
    func fetchFromServer(
        _ scope: Scope, createIfMissing: Bool, stored: (storage: ScopeStorage, problems: [String])? = nil,
        isolation: isolated (any Actor)
    ) async throws(ClientError) -> ScopeSync {
        let served = try await loadSchema()
        let schema = served.schema
        let modelSchema = try Self.modelSchema(of: scope)
        try Self.check(modelSchema, scope: scope.name, rootClass: type(of: scope.root).className, against: schema)
        let path = "/v1/scopes/\(Self.escaped(scope.name))"
        var answer = try await request("GET", path)
        if answer.status == 404 && createIfMissing {
            answer = try await create(root: try Self.rootForCreation(scope), path: path)
        }
        let status = answer.status
        guard status == 200 || status == 201 else { throw ClientError.refused(status: status, problem: answer.body) }
        // Another fetch of the same scope may have finished while this one waited.
        if let shared = try await sharedHandle(for: scope, isolation: isolation) { return shared }
        let state = try Self.state(from: answer.body, schema: schema)
        scope.flush()
        scope.adoptSchema(schema)
        let replica: ScopeReplica
        do {
            if status == 201 {
                // Created from the local root (same UUID): the local objects under it become the
                // first pending change set, and the scope keeps showing them.
                let local = try scope.currentState()
                replica = ScopeReplica(
                    scope: scope, client: self, schema: served, modelSchema: modelSchema, state: state,
                    isolation: isolation)
                try replica.queueLocalContent(local)
            } else {
                try scope.applyFullState(state.exportFragments(), rootUUID: state.rootUUID, version: state.version)
                scope.adoptState(state)
                replica = ScopeReplica(
                    scope: scope, client: self, schema: served, modelSchema: modelSchema, state: state,
                    isolation: isolation)
            }
        } catch {
            throw ClientError.invalidState("\(error)")
        }
        if let stored { replica.attach(stored.storage, problems: stored.problems) }
        if let existing = await stream.add(replica, configuration: configuration) {
            // A fetch of the same scope that ran alongside won: share its copy.
            await replica.closeStorage()
            return try handle(on: existing, for: scope, isolation: isolation)
        }
        replica.start()
        return ScopeSync(replica: replica)
    }

    /// A new handle on the copy of `scope` this client already syncs, nil when it syncs none.
    private func sharedHandle(
        for scope: Scope, isolation: isolated (any Actor)
    ) async throws(ClientError) -> ScopeSync? {
        guard let replica = await stream.replica(named: scope.name, scopeID: ObjectIdentifier(scope)) else {
            return nil
        }
        return try handle(on: replica, for: scope, isolation: isolation)
    }

    func handle(
        on replica: ScopeReplica, for scope: Scope, isolation: isolated (any Actor)
    ) throws(ClientError) -> ScopeSync {
        guard replica.actor === isolation else {
            throw ClientError.invalidState(
                "this client already syncs scope \(scope.name) into this Scope object on another actor")
        }
        return ScopeSync(replica: replica)
    }

    // MARK: - Requests

    /// PUT the scope with `root`; a scope another client created meanwhile is followed instead.
    private func create(root: JSONValue, path: String) async throws(ClientError) -> Answer {
        let answer = try await request("PUT", path, body: ["root": root])
        return answer.status == 409 ? try await request("GET", path) : answer
    }

    /// The local root for `PUT`: its UUID and scalar properties; references and collections start
    /// empty — the objects they hold are sent as the first change set.
    private static func rootForCreation(_ scope: Scope) throws(ClientError) -> JSONValue {
        var properties = JSONObject()
        do {
            let root = try scope.currentState().root
            for (index, property) in root.modelClass.properties.enumerated()
            where property.type.referencedClassName == nil {
                properties.appendUnchecked(key: property.name, value: root.values[index].jsonValue)
            }
        } catch {
            throw ClientError.invalidState("the local scope does not satisfy the schema: \(error)")
        }
        return [
            "clsName": .string(type(of: scope.root).className), "uuid": .string(scope.root.uuid.wireString),
            "properties": .object(properties),
        ]
    }

    /// A response: its status, body, `Retry-After` (seconds) and the scope version its `ETag`
    /// names (`"42"`), if any.
    struct Answer: Sendable {
        let status: Int
        let body: [UInt8]
        let retryAfter: Int?
        var version: Int? = nil
        /// The `ETag` as the server sent it (`GET /v1/schema`'s names the schema).
        var entityTag: String? = nil
    }

    /// The version a strong entity tag `"42"` names; nil for any other tag.
    static func version(entityTag: String) -> Int? {
        guard entityTag.count > 2, entityTag.first == "\"", entityTag.last == "\"" else { return nil }
        return Int(entityTag.dropFirst().dropLast()).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// One request with the token; a `401` asks the token provider once more and retries, unless
    /// `retryingUnauthorized` is false (the sender's policy decides then).
    func request(
        _ method: String, _ path: String, query: [URLQueryItem] = [], body: JSONValue? = nil,
        headers: [String: String] = [:], retryingUnauthorized: Bool = true
    ) async throws(ClientError) -> Answer {
        var refreshed = false
        while true {
            var target = url.appending(path: path)
            if !query.isEmpty { target.append(queryItems: query) }
            var request = URLRequest(url: target)
            request.httpMethod = method
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            if let body {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(body.encoded())
            }
            if let token = try await currentToken() {
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            }
            let data: Data
            let response: HTTPURLResponse
            do {
                (data, response) = try await transport.data(for: request)
            } catch {
                throw ClientError.unreachable("\(method) \(path): \(error.localizedDescription)")
            }
            if response.statusCode == 401 && retryingUnauthorized && !refreshed && token != nil {
                refreshed = true
                continue
            }
            let retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap { Int($0) }
            let entityTag = response.value(forHTTPHeaderField: "ETag")
            return Answer(
                status: response.statusCode, body: [UInt8](data), retryAfter: retryAfter,
                version: entityTag.flatMap(Self.version(entityTag:)), entityTag: entityTag)
        }
    }

    func currentToken() async throws(ClientError) -> String? {
        guard let token else { return nil }
        do {
            return try await token()
        } catch {
            throw ClientError.unauthorized("the token provider failed: \(error)")
        }
    }

    static func escaped(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "._~-")))
            ?? name
    }

    static func state(from body: [UInt8], schema: Schema) throws(ClientError) -> ScopeState {
        let json: JSONValue
        do {
            json = try JSONParser.parse(body, options: ScopeReplica.eventJSONOptions)
        } catch {
            throw ClientError.invalidState("the server's state: \(error)")
        }
        return try state(from: json, schema: schema)
    }

    /// The state a `GET` answer, a `snapshot` or a `reset` carries.
    static func state(from json: JSONValue, schema: Schema) throws(ClientError) -> ScopeState {
        do {
            guard let rootText = json["rootUUID"]?.string, let rootUUID = UUID(wireString: rootText),
                let fragmentsJSON = json["fragments"]?.array, let version = json["version"]?.number?.int64Value
            else { throw ClientError.invalidState("a state needs version, rootUUID and fragments") }
            let fragments = try fragmentsJSON.map { element throws(FragmentError) in try SyncFragment(json: element) }
            return try ScopeState(importing: fragments, rootUUID: rootUUID, version: Int(version), schema: schema)
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError.invalidState("the server's state: \(error)")
        }
    }
}
