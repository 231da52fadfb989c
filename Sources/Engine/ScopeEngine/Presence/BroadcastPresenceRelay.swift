import JetstreamModel

/// A ``PresenceRelay`` over any channel that carries short texts from one node to the others:
/// each notice travels as one compact JSON object, and a text that is not a notice is dropped.
/// The channel itself — PostgreSQL's `NOTIFY` in the gateway (docs/store.md, "Presence across
/// nodes") — is given as two closures, so the engine stays free of any store's types.
///
/// ```swift
/// let relay = BroadcastPresenceRelay(
///     send: { text in store.publishPresence(text) }, receive: { handler in store.followPresence(handler) })
/// configuration.presenceRelay = relay
/// let engine = ScopeEngine(configuration: configuration, store: store, logger: logger)
/// relay.follow { engine.applyRemotePresence($0) }
/// ```
public struct BroadcastPresenceRelay: PresenceRelay {
    private let send: @Sendable (String) -> Void
    private let receive: @Sendable (@escaping @Sendable (String) -> Void) -> Void

    /// `send` takes one notice's text to the other nodes; `receive` installs the handler of the
    /// texts the other nodes send (not this node's own).
    public init(
        send: @escaping @Sendable (String) -> Void,
        receive: @escaping @Sendable (@escaping @Sendable (String) -> Void) -> Void
    ) {
        self.send = send
        self.receive = receive
    }

    public func publish(_ notice: PresenceNotice) {
        send(notice.broadcastText)
    }

    public func follow(_ handler: @escaping @Sendable (PresenceNotice) -> Void) {
        receive { text in
            guard let notice = PresenceNotice(broadcastText: text) else { return }
            handler(notice)
        }
    }
}

extension PresenceNotice {
    /// `{"scope","client","subject","data","expiresAt"}` (expiresAt in milliseconds since 1970, the
    /// same instant on every node), or `{"scope","client","leave":true}` when the client left.
    public var broadcastText: String {
        var writer = JSONWriter(capacity: 96 + scope.utf8.count)
        writer.writeRaw(#"{"scope":"#)
        writer.write(string: scope)
        writer.writeRaw(#","client":"#)
        writer.write(string: client)
        if let member {
            writer.writeRaw(#","subject":"#)
            if let subject = member.subject { writer.write(string: subject) } else { writer.writeRaw("null") }
            writer.writeRaw(#","data":"#)
            writer.write(member.data)
            writer.writeRaw(#","expiresAt":"#)
            writer.writeRaw(String(member.expiresAt))
        } else {
            writer.writeRaw(#","leave":true"#)
        }
        writer.writeRaw("}")
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// The notice of a ``broadcastText`` (other members, such as the channel's `"node"`, are
    /// ignored); nil for any other text.
    public init?(broadcastText text: String) {
        guard case .object(let object)? = try? JSONParser.parse(text),
            let scope = object["scope"]?.string, let client = object["client"]?.string
        else { return nil }
        if object["leave"] == .bool(true) {
            self.init(scope: scope, client: client, member: nil)
            return
        }
        guard let data = object["data"], let expiresAt = object["expiresAt"]?.number?.int64Value else { return nil }
        let subject: String?
        switch object["subject"] {
        case .string(let name)?: subject = name
        case .null?, nil: subject = nil
        default: return nil
        }
        self.init(
            scope: scope, client: client,
            member: PresenceMember(client: client, subject: subject, data: data, expiresAt: expiresAt))
    }
}
