import JetstreamJSON

/// Another client present in a scope (``Presence/others``): who it is and what it shows.
public struct PresenceMember: Sendable, Equatable {
    /// The id the other client chose (one per app instance or browser window).
    public let client: String
    /// Its token's subject; nil when it is anonymous.
    public let subject: String?
    /// What it set with ``Presence/set(_:isolation:)`` (a pointer, a selection, a name…).
    public let data: JSONObject

    public init(client: String, subject: String?, data: JSONObject) {
        self.client = client
        self.subject = subject
        self.data = data
    }
}
