import JetstreamJSON

/// An ordered list of fragments to apply all or nothing. Entries that could not be read as
/// fragments stay in place as errors, so that the reply can name each bad fragment.
///
/// ```swift
/// let body = try JSONParser.parse(bytes)
/// let changeSet = ChangeSet(json: body["fragments"]?.array ?? [])
/// let outcome = state.applying(changeSet, schema: schema)
/// ```
public struct ChangeSet: Sendable, Hashable {
    public var entries: [Result<SyncFragment, FragmentError>]

    /// A change set of fragments that were already read.
    public init(fragments: [SyncFragment]) {
        entries = fragments.map { .success($0) }
    }

    /// Reads each element with ``SyncFragment/init(json:)``, keeping failures as entries.
    public init(json elements: [JSONValue]) {
        entries = elements.map { element in
            Result { () throws(FragmentError) in try SyncFragment(json: element) }
        }
    }

    /// The number of entries, unreadable ones included.
    public var count: Int { entries.count }
}
