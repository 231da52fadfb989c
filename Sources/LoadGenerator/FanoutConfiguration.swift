/// `jetstream bench fanout`: S subscribers on K scopes, M change sets at R per second from W writers.
public struct FanoutConfiguration: Sendable {
    public var subscribers: Int
    public var scopes: Int
    public var changeSets: Int
    public var rate: Double
    public var writers: Int
    public var scopePrefix: String
    public var rootClass: String
    /// The root's string property each change set sets.
    public var property: String

    public init(
        subscribers: Int = 1000, scopes: Int = 1, changeSets: Int = 1000, rate: Double = 100, writers: Int = 4,
        scopePrefix: String = "canvas-bench-", rootClass: String = "Canvas", property: String = "name"
    ) {
        self.subscribers = subscribers
        self.scopes = scopes
        self.changeSets = changeSets
        self.rate = rate
        self.writers = writers
        self.scopePrefix = scopePrefix
        self.rootClass = rootClass
        self.property = property
    }
}
