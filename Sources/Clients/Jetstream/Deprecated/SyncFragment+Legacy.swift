import Foundation
import JetstreamModel

/// The original `SyncFragment`'s dictionary round trip (`serialize()` / `unserialize(_:)`), for code
/// that stores fragments as `JSONSerialization` dictionaries. Today a fragment is JSON through the
/// model core: ``JetstreamModel/SyncFragment/jsonValue`` and ``JetstreamModel/SyncFragment/init(json:)``,
/// which says why a fragment is malformed instead of answering nil.
extension SyncFragment {
    /// The original's name for ``JetstreamModel/SyncFragment/uuid``.
    @available(*, deprecated, renamed: "uuid")
    public var objectUUID: UUID { uuid }

    /// The fragment as a `JSONSerialization` dictionary: `type`, `uuid`, `clsName`, `properties`.
    @available(*, deprecated, message: "use fragment.jsonValue (a JSONValue; .encodedString() for text)")
    public func serialize() -> [String: Any] {
        let object = try? JSONSerialization.jsonObject(with: Data(jsonValue.encoded()), options: [.fragmentsAllowed])
        // A fragment's JSON is always an object, which JSONSerialization reads back as a dictionary.
        return object as? [String: Any] ?? [:]
    }

    /// A fragment from a `JSONSerialization` dictionary, or nil when it is not a valid fragment.
    @available(*, deprecated, message: "use try SyncFragment(json: JSONParser.parse(text)), which throws the reason")
    public static func unserialize(_ dictionary: [String: Any]) -> SyncFragment? {
        guard JSONSerialization.isValidJSONObject(dictionary),
            let data = try? JSONSerialization.data(withJSONObject: dictionary),
            let json = try? JSONParser.parse([UInt8](data))
        else { return nil }
        return try? SyncFragment(json: json)
    }
}
