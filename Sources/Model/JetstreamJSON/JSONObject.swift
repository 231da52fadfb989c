/// A JSON object that keeps its members in the order they were written or added.
///
/// Lookups scan linearly: fragment objects hold a handful of members, where a scan beats hashing.
///
/// ```swift
/// var object = JSONObject()
/// object["x"] = 10
/// object.encodedString()  // {"x":10}
/// ```
public struct JSONObject: Sendable, Hashable, Sequence {
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue

        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The members in order.
    public private(set) var members: [Member]

    /// An empty object.
    public init() { members = [] }

    /// An object of these members, in this order (keys are assumed distinct).
    public init(_ members: [Member]) { self.members = members }

    /// The number of members.
    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    /// The value of `key`; setting replaces it in place or appends it; setting nil removes it.
    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where member.key == key { return member.value }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
        }
    }

    /// Appends without checking for an existing member; the caller guarantees the key is new.
    public mutating func appendUnchecked(key: String, value: JSONValue) {
        members.append(Member(key: key, value: value))
    }

    public mutating func reserveCapacity(_ capacity: Int) { members.reserveCapacity(capacity) }

    public func makeIterator() -> IndexingIterator<[Member]> { members.makeIterator() }

    /// Compact JSON text of this object.
    public func encodedString() -> String { JSONValue.object(self).encodedString() }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// `["x": 10, "y": 20]` keeps the written order. Repeated keys keep the last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }
}
